"""The audit trail: who wrote what, when. Every service that writes records an event here, inside its own
transaction, so a write that fails leaves no event behind and a write that commits always has one.

Actors are named one way everywhere: "user:<username>" from the dashboard and the admin, "api-key:<prefix>"
from the API (the prefix the admin shows; a key's name may be blank), "command:<name>" from management
commands, and "job" for a job whose input recorded nobody.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection

from goldenset.models import ApiKey, AuditEvent, AuditObject, Collection, GoldenEntry, Tenant
from goldenset.vocabulary import golden_fields
from goldenset.vocabulary.chunks import CHUNK

ID_SAMPLE = 20  # document ids an ingest event lists per kind of change; the counts are always whole

# --- actors ------------------------------------------------------------------------------------------------


def actor_user(user: Any) -> str:
    return f"user:{user.get_username()}"


def actor_api_key(key: ApiKey) -> str:
    return f"api-key:{key.prefix}"


def actor_command(name: str) -> str:
    return f"command:{name}"


# --- events ------------------------------------------------------------------------------------------------


def audit_event(
    *,
    tenant: Tenant | int,
    action: str,
    object_type: str,
    object_id: Any,
    actor: str,
    changes: dict[str, Any] | None = None,
    collection: Collection | None = None,
) -> AuditEvent:
    """An unsaved event (for bulk_create)."""
    return AuditEvent(
        tenant_id=tenant if isinstance(tenant, int) else tenant.pk,
        collection_slug=collection.slug if collection is not None else "",
        collection_uid=collection.uid if collection is not None else None,
        object_type=object_type,
        object_id=str(object_id),
        action=action,
        actor=actor,
        changes=changes or {},
    )


def audit_record(**kwargs: Any) -> AuditEvent:
    """Save one event; the caller's write and this event commit or roll back together."""
    _require_transaction()
    event = audit_event(**kwargs)
    event.save()
    return event


def _require_transaction() -> None:
    # An event written outside the write's transaction could outlive a failed write.
    if not connection.in_atomic_block:
        raise RuntimeError("Audit events are written inside the transaction of the write they record.")


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """Field -> [before, after] of the fields that changed."""
    return {k: [before.get(k), v] for k, v in after.items() if before.get(k) != v}


# --- golden entries ----------------------------------------------------------------------------------------

AUDITED_FIELDS = golden_fields.AUDITED_FIELDS


def entry_snapshot(entry: GoldenEntry) -> dict[str, Any]:
    return {f: getattr(entry, f) for f in AUDITED_FIELDS}


def _audit(entry: GoldenEntry, action: str, actor: str, changes: dict[str, Any]) -> AuditEvent:
    return audit_event(
        tenant=entry.collection.tenant_id,
        collection=entry.collection,
        object_type=AuditObject.GOLDEN_ENTRY,
        object_id=entry.pk,
        action=action,
        actor=actor,
        changes=changes,
    )


def audit_entries(*, entries: Iterable[GoldenEntry], action: str, actor: str, changes=None) -> None:
    """One audit event per entry; changes defaults to each entry's snapshot."""
    _require_transaction()
    AuditEvent.objects.bulk_create(
        [_audit(e, action, actor, changes if changes is not None else entry_snapshot(e)) for e in entries],
        batch_size=CHUNK,
    )
