"""Migration 0006: the golden-entry events written before it are kept, and find their collection by uid."""

from __future__ import annotations

import pytest

from tests.support import migrate, migration_leaves

BEFORE = [("goldenset", "0005_job_durability")]
AFTER = [("goldenset", "0006_audit_every_write")]


@pytest.mark.django_db(transaction=True)
def test_existing_events_are_kept_and_linked_to_their_collection():
    leaves = migration_leaves()
    try:
        apps = migrate(BEFORE)
        cluster = apps.get_model("goldenset", "Cluster").objects.create(slug="acme")
        tenant = apps.get_model("goldenset", "Tenant").objects.create(cluster=cluster, slug="search")
        other = apps.get_model("goldenset", "Tenant").objects.create(cluster=cluster, slug="rival")
        collection = apps.get_model("goldenset", "Collection").objects.create(tenant=tenant, slug="handbook")
        apps.get_model("goldenset", "Collection").objects.create(tenant=other, slug="handbook")
        event = apps.get_model("goldenset", "AuditEvent")
        rows = [
            (tenant, "handbook", "e1", "create", "user:alice", {"question": "Refunds?"}),
            (tenant, "handbook", "e1", "update", "api-key:esk_12345678", {"tags": [[], ["a"]]}),
            (tenant, "gone", "e2", "delete", "command:import_golden", {"question": "Old?"}),
        ]
        for owner, slug, object_id, action, actor, changes in rows:
            event.objects.create(
                tenant=owner,
                collection_slug=slug,
                object_id=object_id,
                action=action,
                actor=actor,
                changes=changes,
            )

        apps = migrate(AFTER)
        events = apps.get_model("goldenset", "AuditEvent").objects.order_by("id")
        assert [
            (
                e.tenant_id,
                e.collection_slug,
                e.collection_uid,
                e.object_type,
                e.object_id,
                e.action,
                e.actor,
                e.changes,
            )
            for e in events
        ] == [
            (
                tenant.pk,
                "handbook",
                collection.uid,
                "golden-entry",
                "e1",
                "create",
                "user:alice",
                {"question": "Refunds?"},
            ),
            (
                tenant.pk,
                "handbook",
                collection.uid,
                "golden-entry",
                "e1",
                "update",
                "api-key:esk_12345678",
                {"tags": [[], ["a"]]},
            ),
            (
                tenant.pk,
                "gone",
                None,
                "golden-entry",
                "e2",
                "delete",
                "command:import_golden",
                {"question": "Old?"},
            ),
        ]
    finally:
        migrate(leaves)
