"""A golden set exported and uploaded again (fuzzing finding 12): back into its own collection it changes
nothing; records without ids update the entries with the same question; one entry named twice is a 409."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from goldenset.formats import FORMATS
from tests.goldenset.conftest import DOCS, GS, golden_upload
from tests.support import add_entries, db_state, imported, refused

# --- 12. an export imports back into its own collection -------------------------------------------------------


def test_an_export_imports_back_into_its_own_collection_unchanged(world):
    add_entries(
        world.collection, "Refund window?", "Shipping time?", expected_document_ids=["shipping"], tags=["ops"]
    )
    add_entries(
        world.collection, "Warranty?", key="w", expected_document_ids=["warranty"], grades={"warranty": 3}
    )
    world.client.delete(f"{DOCS}/shipping")
    exported = world.client.get(f"{GS}/export", {"collection_id": "handbook"}).content
    before = db_state()
    response = golden_upload(world, exported)
    assert response.status_code == 200, response.json()  # nothing created
    assert response.json() == imported(records=3, unchanged=3)
    assert db_state() == before  # grades too: golden.json has none, so the entries keep theirs


def test_an_import_without_ids_updates_the_entries_with_the_same_question(world):
    (entry,) = add_entries(
        world.collection, "Refund window?", expected_document_ids=["refunds"], grades={"refunds": 2}
    )
    golden = json.dumps(
        [
            {
                "question": "refund   WINDOW?",
                "expected_answer": "30 days.",
                "must_cite": ["refunds", "warranty"],
            },
            {"question": "Brand new?"},
        ]
    )
    response = golden_upload(world, golden)
    assert response.json() == imported(records=2, created=1, updated=1)
    entry.refresh_from_db()
    assert (entry.question, entry.reference_answer) == ("refund   WINDOW?", "30 days.")
    assert (entry.expected_document_ids, entry.grades) == (["refunds", "warranty"], {"refunds": 2})


def test_an_import_may_not_name_one_entry_twice(world):
    (entry,) = add_entries(world.collection, "Refund window?", key="r")
    before = db_state()
    golden = json.dumps([{"id": "r", "question": "Renamed?"}, {"question": "Refund window?"}])
    error = refused(golden_upload(world, golden), 409, "duplicate-question")
    assert error["details"]["existing_entry_id"] == str(entry.pk)
    assert db_state() == before


# --- grades: one stored form, grade 0 kept through every format --------------------------------------------------

EXPORT, UPLOAD = f"{GS}/export", f"{GS}/upload"
GRADED = [
    # written with the default grade spelled out (as the API, a CSV `refunds=1` or a BEIR qrels write it) and a
    # document judged not relevant (grade 0) beside it
    {"key": "k1", "question": "Refund window?", "expected_document_ids": ["refunds"],
     "grades": {"refunds": 1, "shipping": 0}},
    {"key": "k2", "question": "Warranty?", "expected_document_ids": ["warranty", "shipping"],
     "grades": {"warranty": 3, "shipping": 1, "refunds": 0}},
]  # fmt: skip


def _stored() -> dict[str, dict]:
    from goldenset.models import GoldenEntry

    return {e.key: e.grades for e in GoldenEntry.objects.order_by("key")}


def test_grades_written_any_way_are_stored_in_one_form(world):
    response = world.client.post(GS, {"collection_id": "handbook", "entries": GRADED}, format="json")
    assert response.status_code == 201, response.json()
    # an expected document's grade 1 is its default: stored as no grade, as a TREC import and an apply store it
    assert _stored() == {"k1": {"shipping": 0}, "k2": {"warranty": 3, "refunds": 0}}
    csv_text = (
        "key,question,expected_document_ids,grades\nk3,Express shipping?,shipping,shipping=1|refunds=0\n"
    )
    upload = {"collection_id": "handbook", "file": SimpleUploadedFile("g.csv", csv_text.encode())}
    assert world.client.post(UPLOAD, upload, format="multipart").status_code == 201
    assert _stored()["k3"] == {"refunds": 0}


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unmodified_export_imports_back_changing_nothing_grade_0_included(world, fmt):
    """Re-importing an export must not rewrite every entry (a TREC round trip of the demo reported 300
    "updated"), and a document judged not relevant (grade 0) comes back judged, in every format that has
    grades."""
    world.client.post(GS, {"collection_id": "handbook", "entries": GRADED}, format="json")
    before = db_state()
    exported = world.client.get(EXPORT, {"collection_id": "handbook", "format": fmt})
    assert exported.status_code == 200
    body = {"collection_id": "handbook", "format": fmt}
    if fmt == "trec":
        qrels = world.client.get(EXPORT, {"collection_id": "handbook", "format": fmt, "part": "qrels"})
        assert "k1 0 shipping 0" in qrels.content.decode().splitlines()
        body["qrels"] = SimpleUploadedFile("golden.qrels", qrels.content)
    body["file"] = SimpleUploadedFile(f"golden.{fmt}", exported.content)
    response = world.client.post(UPLOAD, body, format="multipart")
    assert response.status_code == 200, response.json()
    assert (response.json()["created"], response.json()["updated"]) == (0, 0), response.json()
    assert db_state() == before
    assert _stored() == {"k1": {"shipping": 0}, "k2": {"warranty": 3, "refunds": 0}}
