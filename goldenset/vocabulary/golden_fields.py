"""The fields of a golden entry, as each reader and writer lists them. Plain Python: no Django import.

A golden entry (goldenset.models.GoldenEntry) is written by the API, the admin, the dashboard and imports,
audited, and exported; each of those lists the fields it handles. The lists differ on purpose (a form has no
`origin`, golden.json spells `reference_answer` "expected_answer"), and each keeps the order its users see
(form fields, CSV columns, audit records), so they are named variants here, side by side, instead of six
copies in six modules: a new field is added here, and tests/goldenset/test_vocab_golden_fields.py says
which lists must take it.
"""

from __future__ import annotations

__all__ = [
    "GENERATED",
    "IMPORTED",
    "MANUAL",
    "ORIGINS",
    "ADMIN_FORM_FIELDS",
    "AUDITED_FIELDS",
    "DASHBOARD_FORM_FIELDS",
    "ENTRY_INPUT_FIELDS",
    "GOLDEN_CSV_COLUMNS",
    "GOLDEN_FILE_FIELDS",
    "WRITTEN_FIELDS",
]

# What an add or an update takes (goldenset.services.EntryInput; the API's GoldenEntryIn in this order).
ENTRY_INPUT_FIELDS: tuple[str, ...] = (
    "question",
    "expected_document_ids",
    "reference_answer",
    "key",
    "tags",
    "answerable",
    "grades",
)

# What an upsert rewrites on an entry it replaces (the key is what matched it, so it stays).
WRITTEN_FIELDS: tuple[str, ...] = (
    "question",
    "expected_document_ids",
    "grades",
    "reference_answer",
    "tags",
    "answerable",
)

# What the audit trail records of an entry: what a person can change, and its provenance and review state.
AUDITED_FIELDS: tuple[str, ...] = (
    "key",
    "question",
    "expected_document_ids",
    "grades",
    "reference_answer",
    "tags",
    "answerable",
    "origin",
    "reviewed",
)

# The admin's change form (goldenset.forms.GoldenEntryAdminForm), in the order it shows them.
ADMIN_FORM_FIELDS: tuple[str, ...] = (
    "collection",
    "key",
    "question",
    "reference_answer",
    "expected_document_ids",
    "grades",
    "tags",
    "answerable",
    "reviewed",
)

# The dashboard's edit form (evaluation.dashboard.forms.GoldenEntryForm), in the order it shows them.
DASHBOARD_FORM_FIELDS: tuple[str, ...] = (
    "question",
    "key",
    "expected_document_ids",
    "grades",
    "reference_answer",
    "tags",
    "answerable",
    "reviewed",
)

# The dashboard's CSV export (evaluation.dashboard.golden_reads.golden_csv), in column order; without grades.
GOLDEN_CSV_COLUMNS: tuple[str, ...] = (
    "id",
    "key",
    "question",
    "expected_document_ids",
    "reference_answer",
    "tags",
    "answerable",
    "origin",
    "reviewed",
    "created_at",
    "updated_at",
)

# golden.json (goldenset.golden_files): its own spelling, shared with other golden-set tools: `id` is the
# entry's key, `expected_answer` its reference answer, `must_cite` its expected document ids.
GOLDEN_FILE_FIELDS: tuple[str, ...] = ("id", "question", "expected_answer", "must_cite", "tags", "answerable")

# Where an entry came from (goldenset.models.Origin is built from these).
MANUAL, IMPORTED, GENERATED = "Manual", "Imported", "Generated"
ORIGINS: tuple[str, ...] = (MANUAL, IMPORTED, GENERATED)
