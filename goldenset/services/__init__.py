"""Writes: collections, documents and pages, golden entries, and the audit trail of them all.

Every function is keyword-only, takes model instances already scoped to a tenant (selectors do the scoping),
and raises evalsite.errors.EvalsiteError with a stable code on bad input, leaving the database unchanged.
"""

from goldenset.services.audit import (
    AUDITED_FIELDS,
    audit_entries,
    entry_snapshot,
)
from goldenset.services.content import (
    DocumentInput,
    IngestOutcome,
    collection_create,
    collection_delete,
    collection_save,
    collection_touch,
    document_delete,
    document_touch,
    documents_delete,
    documents_ingest,
    documents_upsert,
    ingest_as_job,
    ingest_job_create,
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
from goldenset.services.rejections import is_rejection

__all__ = [
    "AUDITED_FIELDS",
    "DocumentInput",
    "EntryInput",
    "IngestOutcome",
    "audit_entries",
    "collection_create",
    "collection_delete",
    "collection_save",
    "collection_touch",
    "document_delete",
    "document_touch",
    "documents_delete",
    "documents_ingest",
    "documents_upsert",
    "ingest_as_job",
    "ingest_job_create",
    "is_rejection",
    "entry_snapshot",
    "golden_entries_add",
    "golden_entries_delete",
    "golden_entries_mark_reviewed",
    "golden_entry_check",
    "golden_entry_save",
    "golden_entry_update",
]
