"""The audit trail of golden entries: who changed which entry, when, and what."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from goldenset.models import AuditEvent, GoldenEntry
from goldenset.vocabulary import golden_fields
from goldenset.vocabulary.chunks import CHUNK

# --- audit -------------------------------------------------------------------------------------------------

AUDITED_FIELDS = golden_fields.AUDITED_FIELDS


def entry_snapshot(entry: GoldenEntry) -> dict[str, Any]:
    return {f: getattr(entry, f) for f in AUDITED_FIELDS}


def _audit(entry: GoldenEntry, action: str, actor: str, changes: dict[str, Any]) -> AuditEvent:
    return AuditEvent(
        tenant_id=entry.collection.tenant_id,
        collection_slug=entry.collection.slug,
        object_id=str(entry.pk),
        action=action,
        actor=actor,
        changes=changes,
    )


def audit_entries(*, entries: Iterable[GoldenEntry], action: str, actor: str, changes=None) -> None:
    """One audit event per entry; changes defaults to each entry's snapshot."""
    AuditEvent.objects.bulk_create(
        [_audit(e, action, actor, changes if changes is not None else entry_snapshot(e)) for e in entries],
        batch_size=CHUNK,
    )
