"""The platform names no domain: the apps register their job kinds and audited objects, and what nobody
registered is refused, so every Job.kind and AuditEvent.object_type stored has an owner."""

from __future__ import annotations

import pytest

from evalsite.audit.models import PlatformAuditObject, audit_object_registered, audit_objects
from evalsite.audit.services import audit_event
from evalsite.jobs.kinds import job_kind, register_job_handler
from evalsite.jobs.services import job_create
from evaluation.models import EvaluationAuditObject, EvaluationJobKind
from goldenset.models import GoldenAuditObject, GoldenJobKind


def test_every_kind_the_apps_own_is_registered_with_its_handler_and_whether_it_resumes():
    for kind in [*GoldenJobKind.values, *EvaluationJobKind.values]:
        registered = job_kind(kind)
        assert registered is not None and callable(registered.handler), kind
        assert registered.resumes is (kind == GoldenJobKind.GENERATE), kind
    assert job_kind("Nope") is None


def test_every_audited_object_is_registered_with_its_label():
    owned = {*PlatformAuditObject.values, *GoldenAuditObject.values, *EvaluationAuditObject.values}
    assert {value for value, _label in audit_objects()} == owned
    assert dict(audit_objects())["api-key"] == "API key"
    assert not audit_object_registered("labelz")


@pytest.mark.django_db
def test_a_kind_or_an_object_nobody_registered_is_refused(world):
    with pytest.raises(ValueError, match="not registered"):
        job_create(tenant=world.tenant, kind="Nope", input={})
    with pytest.raises(ValueError, match="not registered"):
        audit_event(tenant=world.tenant, action="create", object_type="labelz", object_id="x", actor="test")


def test_a_kind_registered_twice_with_another_handler_is_refused():
    registered = job_kind(GoldenJobKind.INGEST)
    assert registered is not None
    register_job_handler(GoldenJobKind.INGEST, registered.handler)  # the same again: harmless
    with pytest.raises(ValueError, match="registered twice"):
        register_job_handler(GoldenJobKind.INGEST, lambda job, progress: {})
