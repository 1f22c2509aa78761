"""goldenset.vocabulary.golden_fields: every list of a golden entry's fields, and how they relate. A new
field of GoldenEntry fails here until each list that should carry it does. No database."""

from __future__ import annotations

import dataclasses

from evaluation.dashboard import golden_reads as dashboard_golden
from evaluation.dashboard.forms import GoldenEntryForm
from goldenset import golden_files, services
from goldenset.api.serializers import GoldenEntryIn, GoldenEntryOut, GoldenEntryPatchIn
from goldenset.forms import GoldenEntryAdminForm
from goldenset.models import GoldenEntry
from goldenset.services import golden as golden_services
from goldenset.vocabulary.golden_fields import (
    ADMIN_FORM_FIELDS,
    AUDITED_FIELDS,
    DASHBOARD_FORM_FIELDS,
    ENTRY_INPUT_FIELDS,
    GOLDEN_CSV_COLUMNS,
    GOLDEN_FILE_FIELDS,
    WRITTEN_FIELDS,
)

# Kept by the system, never written by a person: identity, provenance, the derived index columns.
SYSTEM_FIELDS = {"id", "collection", "question_hash", "tags_index", "origin", "source_page", "job"}
# What an entry remembers of its expected documents for drift (goldenset.services.drift): written by the writers,
# never given; the drift API answers reviewed_at.
DRIFT_FIELDS = {"reviewed_hashes", "reviewed_at"}
TIMESTAMPS = {"created_at", "updated_at"}


def test_each_caller_uses_its_list_from_the_vocabulary() -> None:
    assert golden_services.ENTRY_INPUT_FIELDS is ENTRY_INPUT_FIELDS
    assert golden_services._WRITTEN_FIELDS is WRITTEN_FIELDS
    assert services.AUDITED_FIELDS is AUDITED_FIELDS
    assert tuple(GoldenEntryAdminForm._meta.fields or ()) == ADMIN_FORM_FIELDS
    assert GoldenEntryForm.FIELDS is DASHBOARD_FORM_FIELDS
    assert dashboard_golden.GOLDEN_CSV_COLUMNS is GOLDEN_CSV_COLUMNS
    assert golden_files._FIELDS is GOLDEN_FILE_FIELDS


def test_every_field_a_person_edits_is_input_audited_and_in_the_admin_form() -> None:
    model_fields = {f.name for f in GoldenEntry._meta.get_fields() if f.concrete}
    editable = model_fields - SYSTEM_FIELDS - TIMESTAMPS - DRIFT_FIELDS - {"reviewed"}
    assert set(ENTRY_INPUT_FIELDS) == editable
    assert set(WRITTEN_FIELDS) == editable - {"key"}  # the key is what an upsert matched on
    assert set(AUDITED_FIELDS) == editable | {"origin", "reviewed"}
    assert set(ADMIN_FORM_FIELDS) == editable | {"collection", "reviewed"}
    assert set(DASHBOARD_FORM_FIELDS) == editable | {"reviewed"}
    assert set(GOLDEN_CSV_COLUMNS) == editable - {"grades"} | {"id", "origin", "reviewed"} | TIMESTAMPS


def test_the_api_and_the_service_input_take_the_same_fields_in_the_same_order() -> None:
    assert tuple(GoldenEntryIn().fields) == ENTRY_INPUT_FIELDS
    assert [f.name for f in dataclasses.fields(services.EntryInput)] == [
        "question", "expected_document_ids", "reference_answer", "key", "tags", "answerable", "grades",
    ]  # fmt: skip
    assert set(GoldenEntryPatchIn().fields) == set(ENTRY_INPUT_FIELDS) | {"reviewed"}
    model_fields = {f.name for f in GoldenEntry._meta.get_fields() if f.concrete}
    out = {name.removesuffix("_id") for name in GoldenEntryOut().fields}  # "collection_id" -> "collection"
    assert out == model_fields - {"question_hash", "tags_index"} - DRIFT_FIELDS


def test_golden_json_spells_the_fields_its_own_way() -> None:
    assert GOLDEN_FILE_FIELDS == ("id", "question", "expected_answer", "must_cite", "tags", "answerable")
    assert tuple(f.name for f in dataclasses.fields(golden_files.GoldenRecord)) == (
        "question", "id", "expected_answer", "must_cite", "tags", "answerable",
    )  # fmt: skip
