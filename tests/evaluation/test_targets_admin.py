"""Targets in the admin: created and changed through the same services (checks, sealed secrets, audit), the
secret value never rendered, bad options refused on the form."""

from __future__ import annotations

import json

from django.urls import reverse

from evalsite.audit.models import AuditEvent
from evaluation.models import Target

SECRET = "sk-admin-never-shown-4242"
OPTIONS = {"request_template": {"q": "{{query}}"}, "response_mapping": {"ids": "hits[].id"}}


def form(world, **fields) -> dict:
    return {
        "tenant": str(world.tenant.pk),
        "name": "prod",
        "kind": "http",
        "base_url": "http://127.0.0.1:9/search",
        "headers": "{}",
        "timeout_s": "30",
        "concurrency": "4",
        "rate_limit": "",
        "options": json.dumps(OPTIONS),
        "secret_headers": f"Authorization: Bearer {SECRET}",
        "_save": "Save",
        **fields,
    }


def test_a_target_is_added_and_changed_in_the_admin_through_the_services(admin_client, world):
    add = reverse("admin:evaluation_target_add")
    bad = admin_client.post(add, form(world, options=json.dumps({"index": "x"})))
    assert bad.status_code == 200 and "not an option of kind http" in bad.content.decode()
    assert not Target.objects.exists()
    assert admin_client.post(add, form(world)).status_code == 302
    target = Target.objects.get()
    assert target.secret_header_names == ["Authorization"] and SECRET not in target.secret_headers_sealed
    change = reverse("admin:evaluation_target_change", args=[target.pk])
    page = admin_client.get(change).content.decode()
    assert SECRET not in page and "Authorization" in page
    changed = admin_client.post(change, {**form(world), "secret_headers": "", "timeout_s": "9"})
    assert changed.status_code == 302
    target.refresh_from_db()
    assert target.timeout_s == 9 and target.secret_header_names == ["Authorization"]  # blank kept the secret
    events = AuditEvent.objects.filter(object_type="target").order_by("pk")
    assert [(e.action, e.actor) for e in events] == [("create", "user:admin"), ("update", "user:admin")]
    assert all(SECRET not in json.dumps(e.changes) for e in events)
    assert admin_client.post(add, form(world)).status_code == 200  # the name is taken: said on the form
    assert Target.objects.count() == 1


def test_the_admin_applies_the_egress_rule_and_binds_secrets_to_their_server(admin_client, world, settings):
    add = reverse("admin:evaluation_target_add")
    settings.EVALSITE_OUTBOUND_ALLOW = []
    refused = admin_client.post(add, form(world, base_url="http://169.254.169.254/latest"))
    assert refused.status_code == 200 and "link-local address not allowed" in refused.content.decode()
    assert not Target.objects.exists()
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.0/8"]
    assert admin_client.post(add, form(world)).status_code == 302
    target = Target.objects.get()
    change = reverse("admin:evaluation_target_change", args=[target.pk])
    moved = admin_client.post(
        change, {**form(world), "base_url": "http://127.0.0.2:9/search", "secret_headers": ""}
    )
    assert moved.status_code == 200 and "send each again in the same change" in moved.content.decode()
    target.refresh_from_db()
    assert target.base_url == "http://127.0.0.1:9/search"
    moved = admin_client.post(
        change, {**form(world), "base_url": "http://127.0.0.2:9/search", "secret_headers": "Authorization: x"}
    )
    assert moved.status_code == 302
    target.refresh_from_db()
    assert target.base_url == "http://127.0.0.2:9/search" and target.secret_header_names == ["Authorization"]
