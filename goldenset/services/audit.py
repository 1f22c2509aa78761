"""The golden entries' side of the audit trail: the fields an entry's events record, and one event per entry
written in bulk. The trail itself (actors, events, the transaction rule) is the platform's: evalsite.audit."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalsite.audit.models import AuditEvent
from evalsite.audit.services import audit_event, require_transaction
from goldenset.models import GoldenAuditObject, GoldenEntry
from goldenset.vocabulary import golden_fields
from goldenset.vocabulary.chunks import CHUNK

# --- golden entries ----------------------------------------------------------------------------------------

AUDITED_FIELDS = golden_fields.AUDITED_FIELDS


def entry_snapshot(entry: GoldenEntry) -> dict[str, Any]:
    return {f: getattr(entry, f) for f in AUDITED_FIELDS}


def _audit(entry: GoldenEntry, action: str, actor: str, changes: dict[str, Any]) -> AuditEvent:
    return audit_event(
        tenant=entry.collection.tenant_id,
        collection=entry.collection,
        object_type=GoldenAuditObject.GOLDEN_ENTRY,
        object_id=entry.pk,
        action=action,
        actor=actor,
        changes=changes,
    )


def audit_entries(*, entries: Iterable[GoldenEntry], action: str, actor: str, changes=None) -> None:
    """One audit event per entry; changes defaults to each entry's snapshot."""
    require_transaction()
    AuditEvent.objects.bulk_create(
        [_audit(e, action, actor, changes if changes is not None else entry_snapshot(e)) for e in entries],
        batch_size=CHUNK,
    )
