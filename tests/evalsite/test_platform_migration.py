"""The platform's models moved out of goldenset (goldenset 0009, evaluation 0009, the platform apps' 0001):
every row stays, every foreign key still leads to it, content types follow, and the move reverses."""

from __future__ import annotations

import pytest

from tests.support import migrate, migration_leaves

BEFORE = [
    ("contenttypes", "0002_remove_content_type_name"),
    ("goldenset", "0008_staged_uploads"),
    ("evaluation", "0008_published_indexes"),
    # roles (tenancy 0002) came after the move: the tables as goldenset had them have no role column
    ("tenancy", "0001_initial"),
]
MOVED = {
    "Cluster": "tenancy",
    "Tenant": "tenancy",
    "ApiKey": "tenancy",
    "Membership": "tenancy",
    "AuditEvent": "audit",
    "Job": "jobs",
    "Worker": "jobs",
    "LLMCall": "llm",
}


def _rows_before(apps) -> dict[str, object]:
    """One row of each moved model, and the domain rows that point at them, written as goldenset had them."""
    model = lambda app, name: apps.get_model(app, name)  # noqa: E731
    from django.utils import timezone

    user = model("auth", "User").objects.create(username="curator")
    cluster = model("goldenset", "Cluster").objects.create(slug="acme")
    tenant = model("goldenset", "Tenant").objects.create(cluster=cluster, slug="search")
    key = model("goldenset", "ApiKey").objects.create(tenant=tenant, prefix="esk_abcdefgh", key_hash="f" * 64)
    membership = model("goldenset", "Membership").objects.create(user=user, tenant=tenant)
    collection = model("goldenset", "Collection").objects.create(tenant=tenant, slug="handbook")
    job = model("goldenset", "Job").objects.create(tenant=tenant, collection=collection, kind="Generate")
    worker = model("goldenset", "Worker").objects.create(
        name="host:1:2", host="host", pid=1, started_at=timezone.now(), beat_at=timezone.now(), job=job
    )
    event = model("goldenset", "AuditEvent").objects.create(
        tenant=tenant, object_type="job", object_id=str(job.pk), action="launch", actor="command:test"
    )
    call = model("goldenset", "LLMCall").objects.create(key="k" * 64, model="m", text="an answer")
    entry = model("goldenset", "GoldenEntry").objects.create(
        collection=collection, question="Who signs?", question_hash="h" * 64, job=job
    )
    run = model("evaluation", "EvaluationRun").objects.create(tenant=tenant, job=job, batch_id=job.pk)
    target = model("evaluation", "Target").objects.create(
        tenant=tenant, name="es", kind="http", base_url="http://127.0.0.1:9"
    )
    content_types = {
        name: model("contenttypes", "ContentType")
        .objects.get_or_create(app_label="goldenset", model=name.lower())[0]
        .pk
        for name in MOVED
    }
    return {
        "user": user.pk, "cluster": cluster.pk, "tenant": tenant.pk, "key": key.pk, "membership": membership.pk,
        "collection": collection.pk, "job": job.pk, "worker": worker.pk, "event": event.pk, "call": call.pk,
        "entry": entry.pk, "run": run.pk, "target": target.pk, "content_types": content_types,
    }  # fmt: skip


def _assert_rows(apps, ids: dict, where: dict[str, str]) -> None:
    model = lambda name: apps.get_model(where.get(name, "goldenset"), name)  # noqa: E731
    tenant = model("Tenant").objects.get(pk=ids["tenant"])
    assert tenant.cluster_id == ids["cluster"] and tenant.slug == "search"
    assert model("ApiKey").objects.get(pk=ids["key"]).tenant_id == tenant.pk
    assert model("Membership").objects.get(pk=ids["membership"]).user_id == ids["user"]
    collection = apps.get_model("goldenset", "Collection").objects.get(pk=ids["collection"])
    assert collection.tenant.pk == tenant.pk and collection.tenant._meta.app_label == where.get(
        "Tenant", "goldenset"
    )
    job = model("Job").objects.get(pk=ids["job"])
    assert (job.tenant_id, job.collection_id, job.kind) == (tenant.pk, collection.pk, "Generate")
    assert model("Worker").objects.get(pk=ids["worker"]).job_id == job.pk
    event = model("AuditEvent").objects.get(pk=ids["event"])
    assert (event.tenant_id, event.object_id, event.action) == (tenant.pk, str(job.pk), "launch")
    assert model("LLMCall").objects.get(pk=ids["call"]).text == "an answer"
    entry = apps.get_model("goldenset", "GoldenEntry").objects.get(pk=ids["entry"])
    assert entry.job.pk == job.pk and entry.job._meta.app_label == where.get("Job", "goldenset")
    run = apps.get_model("evaluation", "EvaluationRun").objects.get(pk=ids["run"])
    assert (run.tenant.pk, run.job.pk) == (tenant.pk, job.pk)
    assert apps.get_model("evaluation", "Target").objects.get(pk=ids["target"]).tenant.pk == tenant.pk
    content_type = apps.get_model("contenttypes", "ContentType")
    for name, pk in ids["content_types"].items():
        assert content_type.objects.get(pk=pk).app_label == where.get(name, "goldenset")


@pytest.mark.django_db(transaction=True)
def test_the_platform_models_move_with_every_row_and_back():
    leaves = migration_leaves()
    try:
        apps = migrate(BEFORE)
        ids = _rows_before(apps)
        _assert_rows(apps, ids, {})

        apps = migrate(leaves)
        _assert_rows(apps, ids, MOVED)
        # The moved models write to the same tables: a new tenant's id follows the old ones.
        tenancy_tenant = apps.get_model("tenancy", "Tenant")
        added = tenancy_tenant.objects.create(cluster_id=ids["cluster"], slug="second")
        assert added.pk > ids["tenant"]
        added.delete()

        apps = migrate(BEFORE)
        _assert_rows(apps, ids, {})
    finally:
        migrate(leaves)


@pytest.mark.django_db
def test_the_live_models_live_in_the_platform_apps():
    from django.apps import apps

    for name, app in MOVED.items():
        live = apps.get_model(app, name)
        assert live.__module__ == f"evalsite.{app}.models"
        assert live._meta.db_table == f"goldenset_{name.lower()}"
        with pytest.raises(LookupError):
            apps.get_model("goldenset", name)
