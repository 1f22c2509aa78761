"""PATCH of a golden entry (fuzzing findings 10 and 12): it changes only the fields it names, and an entry that
expects a deleted document can still be edited."""

from __future__ import annotations

import json

import pytest

from goldenset.models import GoldenEntry
from tests.goldenset.conftest import DOCS, GS
from tests.support import add_entries, db_state, refused

# --- 10. PATCH changes only what it names ----------------------------------------------------------------------


def _entry_json(world, entry: GoldenEntry) -> dict:
    return world.client.get(f"{GS}/{entry.pk}").json()


@pytest.mark.parametrize(
    "change",
    [
        {"reviewed": True},
        {"answerable": False},
        {"reference_answer": "New."},
        {"key": "k-new"},
        {"question": "Other?"},
    ],
)
def test_a_patch_keeps_every_field_it_does_not_name(world, change):
    (entry,) = add_entries(
        world.collection,
        "How long do refunds take?",
        expected_document_ids=["refunds", "shipping"],
        grades={"refunds": 3, "shipping": 1},
        tags=["billing", "faq"],
        reference_answer="Thirty days.",
        key="q-1",
    )
    before = _entry_json(world, entry)
    response = world.client.patch(f"{GS}/{entry.pk}", change, format="json")
    assert response.status_code == 200, response.json()
    after = _entry_json(world, entry)
    assert response.json() == after
    unchanged = {k: v for k, v in before.items() if k not in (*change, "updated_at")}
    assert {k: after[k] for k in unchanged} == unchanged
    assert json.dumps({k: after[k] for k in unchanged}) == json.dumps(unchanged)  # byte-identical
    assert {k: after[k] for k in change} == change


def test_a_patch_of_one_list_leaves_the_other_lists_alone(world):
    (entry,) = add_entries(
        world.collection, "Q?", expected_document_ids=["refunds"], tags=["a"], grades={"refunds": 2}
    )
    response = world.client.patch(f"{GS}/{entry.pk}", {"tags": ["b"]}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["expected_document_ids"], response.json()["grades"]) == (
        ["refunds"],
        {"refunds": 2},
    )
    response = world.client.patch(
        f"{GS}/{entry.pk}", {"expected_document_ids": ["refunds", "warranty"]}, format="json"
    )
    assert response.json()["tags"] == ["b"]


# --- 12. entries that expect deleted documents; export and import back ------------------------------------------


def test_an_entry_expecting_a_deleted_document_can_still_be_edited(world):
    (entry,) = add_entries(
        world.collection, "Refunds?", expected_document_ids=["refunds", "shipping"], grades={"refunds": 2}
    )
    assert world.client.delete(f"{DOCS}/refunds").status_code == 204
    response = world.client.patch(f"{GS}/{entry.pk}", {"reviewed": True}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["expected_document_ids"] == ["refunds", "shipping"]
    # Keeping the deleted id while adding a known one is fine; adding an unknown one is not.
    ids = ["refunds", "shipping", "warranty"]
    response = world.client.patch(f"{GS}/{entry.pk}", {"expected_document_ids": ids}, format="json")
    assert response.status_code == 200, response.json()
    before = db_state()
    response = world.client.patch(
        f"{GS}/{entry.pk}", {"expected_document_ids": [*ids, "ghost"]}, format="json"
    )
    error = refused(response, 400, "unknown-documents")
    assert error["details"]["unknown_document_ids"] == ["ghost"]
    assert db_state() == before
