"""Writes: tenancy, collections, documents and pages, golden entries and their audit trail.

Every function is keyword-only, takes model instances already scoped to a tenant (selectors do the scoping),
and raises goldenset.errors.EvalsiteError with a stable code on bad input, leaving the database unchanged.
"""

from goldenset.services.audit import AUDITED_FIELDS, audit_entries, entry_snapshot
from goldenset.services.content import (
    DocumentInput,
    api_key_create,
    api_key_revoke,
    collection_create,
    collection_delete,
    collection_touch,
    document_delete,
    documents_ingest_job,
    documents_upsert,
    tenant_get_or_create,
)
from goldenset.services.golden import (
    EntryInput,
    golden_entries_add,
    golden_entries_delete,
    golden_entries_mark_reviewed,
    golden_entry_check,
    golden_entry_save,
    golden_entry_update,
)

__all__ = [
    "AUDITED_FIELDS",
    "DocumentInput",
    "EntryInput",
    "api_key_create",
    "api_key_revoke",
    "audit_entries",
    "collection_create",
    "collection_delete",
    "collection_touch",
    "document_delete",
    "documents_ingest_job",
    "documents_upsert",
    "entry_snapshot",
    "golden_entries_add",
    "golden_entries_delete",
    "golden_entries_mark_reviewed",
    "golden_entry_check",
    "golden_entry_save",
    "golden_entry_update",
    "tenant_get_or_create",
]
