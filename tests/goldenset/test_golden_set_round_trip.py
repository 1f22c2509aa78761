"""A golden set exported and uploaded again (fuzzing finding 12): back into its own collection it changes
nothing; records without ids update the entries with the same question; one entry named twice is a 409."""

from __future__ import annotations

import json

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
