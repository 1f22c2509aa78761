"""A golden entry's sizes: the same limits for every writer on every database (question 4,000 characters,
reference answer 20,000, 50 tags, 1,000 expected documents), refused naming the field and writing nothing;
duplicates are found on a hash of the folded question, so long questions never reach an index row limit."""

from __future__ import annotations

import hashlib
import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from evalsite.audit.models import AuditEvent
from evalsite.errors import EvalsiteError
from goldenset import services
from goldenset.models import GoldenEntry
from goldenset.services import EntryInput
from goldenset.text import normalize_question
from tests.support import db_state, imported

GS = "/lmkit/v1/search/golden-set"
UPLOAD = f"{GS}/upload"
SCOPE = {"cluster": "acme", "tenant": "search", "collection": "handbook"}


def text(length: int, words: str = "why does the refund window close after thirty days ") -> str:
    """A question of exactly `length` characters, ending in "?"."""
    body = (words * (length // len(words) + 1))[: length - 1]
    return body[:-1] + "x?" if body.endswith(" ") else body + "?"


def add(world, *entries: dict):
    return world.client.post(GS, {"collection_id": "handbook", "entries": list(entries)}, format="json")


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"]["code"] == code, body
    return body["error"]


def existing(world) -> GoldenEntry:
    (entry,) = services.golden_entries_add(
        collection=world.collection,
        entries=[EntryInput(question="How long is the refund window?", expected_document_ids=["refunds"])],
        actor="test",
    )[0]
    return entry


# Too much of one field: what the API's serializers say about it (they report before the service).
TOO_MUCH = {
    "question": (text(4001), "Ensure this field has no more than 4000 characters."),
    "reference_answer": ("a" * 20_001, "Ensure this field has no more than 20000 characters."),
    "tags": ([f"t{i}" for i in range(51)], "Ensure this field has no more than 50 elements."),
    "expected_document_ids": (["refunds"] * 1001, "Ensure this field has no more than 1000 elements."),
}


# ---------------------------------------------------------------- the API: add and PATCH


def test_a_question_of_4001_characters_is_refused_naming_the_entry_and_field(world):
    existing(world)
    before = db_state()
    response = add(world, {"question": "Fine?"}, {"question": text(4001)})
    assert error(response, 400, "validation-error") == {
        "code": "validation-error",
        "message": "entries[1].question: Ensure this field has no more than 4000 characters.",
        "details": {
            "fields": {"entries[1].question": ["Ensure this field has no more than 4000 characters."]}
        },
    }
    assert db_state() == before


@pytest.mark.parametrize("field", list(TOO_MUCH))
def test_too_much_of_any_field_is_refused_by_add_and_patch(world, field):
    entry = existing(world)
    before = db_state()
    value, message = TOO_MUCH[field]
    response = add(world, {"question": "Other?", field: value})
    assert error(response, 400, "validation-error")["details"] == {
        "fields": {f"entries[0].{field}": [message]}
    }
    response = world.client.patch(f"{GS}/{entry.pk}", {field: value}, format="json")
    assert error(response, 400, "validation-error") == {
        "code": "validation-error",
        "message": f"{field}: {message}",
        "details": {"fields": {field: [message]}},
    }
    assert db_state() == before


def test_an_entry_at_every_limit_is_accepted(world):
    ids = [f"d{i:04}" for i in range(1000)]
    services.documents_upsert(
        collection=world.collection,
        documents=[services.DocumentInput(id=i, pages=["x"]) for i in ids],
        actor="test",
    )
    entry = {
        "question": text(4000),
        "reference_answer": "a" * 20_000,
        "tags": [f"{i:02}" + "t" * 98 for i in range(50)],
        "expected_document_ids": ids,
    }
    response = add(world, entry)
    assert response.status_code == 201, response.json()
    stored = GoldenEntry.objects.get()
    assert (stored.question, stored.reference_answer) == (entry["question"], entry["reference_answer"])
    assert (stored.tags, stored.expected_document_ids) == (entry["tags"], ids)
    assert stored.question_hash == hashlib.sha256(normalize_question(text(4000)).encode()).hexdigest()


def test_patch_accepts_a_question_of_4000_characters_and_refuses_4001(world):
    entry = existing(world)
    before = db_state()
    response = world.client.patch(f"{GS}/{entry.pk}", {"question": text(4001)}, format="json")
    assert error(response, 400, "validation-error")["details"] == {
        "fields": {"question": ["Ensure this field has no more than 4000 characters."]}
    }
    assert db_state() == before
    response = world.client.patch(f"{GS}/{entry.pk}", {"question": text(4000)}, format="json")
    assert response.status_code == 200, response.json()
    entry.refresh_from_db()
    assert entry.question == text(4000)
    assert AuditEvent.objects.filter(object_id=str(entry.pk), action="update").count() == 1


# ---------------------------------------------------------------- long duplicates


LONG = text(3000)  # longer than PostgreSQL's btree row limit (~2,704 bytes) on the folded text
LONG_VARIANT = LONG.swapcase().replace(" ", "\t", 3)  # differs only in case and spacing
LONG_OTHER = LONG[:1500] + ("b" if LONG[1500] != "b" else "c") + LONG[1501:]  # one character differs


def test_long_questions_that_differ_only_in_case_and_spacing_are_duplicates(world):
    before = db_state()
    response = add(world, {"question": LONG}, {"question": LONG_VARIANT})
    assert (
        error(response, 409, "duplicate-question")["message"]
        == "entries[1]: the question repeats entries[0]."
    )
    assert db_state() == before and not GoldenEntry.objects.exists()
    (first,) = add(world, {"question": LONG}).json()["entries"]
    before = db_state()
    response = add(world, {"question": LONG_VARIANT})
    assert error(response, 409, "duplicate-question")["details"]["existing_entry_id"] == first["id"]
    assert db_state() == before
    # An edit of another entry into the same question is refused the same way.
    other = existing(world)
    response = world.client.patch(f"{GS}/{other.pk}", {"question": LONG_VARIANT}, format="json")
    error(response, 409, "duplicate-question")
    other.refresh_from_db()
    assert other.question == "How long is the refund window?"


def test_long_questions_that_differ_in_one_character_are_not_duplicates(world):
    response = add(world, {"question": LONG}, {"question": LONG_OTHER})
    assert response.status_code == 201, response.json()
    assert sorted(GoldenEntry.objects.values_list("question", flat=True)) == sorted([LONG, LONG_OTHER])
    assert len({e.question_hash for e in GoldenEntry.objects.all()}) == 2


# ---------------------------------------------------------------- every writer goes through the service


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"question": text(4001)}, "question", "may have at most 4000 characters (it has 4001)"),
        (
            {"reference_answer": "a" * 20_001},
            "reference_answer",
            "may have at most 20000 characters (it has 20001)",
        ),
        ({"tags": [f"t{i}" for i in range(51)]}, "tags", "may have at most 50 tags (it has 51)"),
        (
            {"expected_document_ids": ["refunds"] * 1001},
            "expected_document_ids",
            "may have at most 1000 documents (it has 1001)",
        ),
    ],
)
def test_the_service_refuses_too_much_from_any_writer(world, values, field, message):
    before = db_state()
    with pytest.raises(EvalsiteError) as raised:
        services.golden_entries_add(
            collection=world.collection,
            entries=[EntryInput(question="Fine?"), EntryInput(**{"question": "Other?", **values})],
            actor="test",
        )
    assert (raised.value.code, raised.value.status_code) == ("validation-error", 400)
    assert raised.value.message == f"entries[1].{field}: {message}."
    assert raised.value.details == {"index": 1, "field": field}
    assert db_state() == before


# ---------------------------------------------------------------- golden files: the upload and import_golden


def upload(world, records: list[dict]):
    content = json.dumps(records, indent=2).encode()
    body = {"collection_id": "handbook", "file": SimpleUploadedFile("golden.json", content)}
    return world.client.post(UPLOAD, body, format="multipart")


# A golden.json record with too much of one field, and the line of the error about it.
FILE_TOO_MUCH = {
    "question": ({"question": text(4001)}, "may have at most 4000 characters (it has 4001)"),
    "expected_answer": (
        {"question": "Q?", "expected_answer": "a" * 20_001},
        "may have at most 20000 characters (it has 20001)",
    ),
    "tags": (
        {"question": "Q?", "tags": [f"t{i}" for i in range(51)]},
        "may have at most 50 tags (it has 51)",
    ),
    "must_cite": (
        {"question": "Q?", "must_cite": ["refunds"] * 1001},
        "may have at most 1000 documents (it has 1001)",
    ),
}


@pytest.mark.parametrize("field", list(FILE_TOO_MUCH))
def test_the_upload_refuses_too_much_naming_record_line_and_field(world, field):
    existing(world)
    before = db_state()
    record, problem = FILE_TOO_MUCH[field]
    response = upload(world, [{"id": "ok", "question": "Fine?"}, {"id": "big", **record}])
    assert error(response, 400, "golden-schema") == {
        "code": "golden-schema",
        "message": f'record 1 (id "big"), line 6: field "{field}" {problem}',
        "details": {"index": 1, "id": "big", "field": field, "line": 6},
    }
    assert db_state() == before


def test_the_upload_takes_a_question_of_4000_characters_and_matches_long_questions_by_hash(world):
    response = upload(world, [{"question": text(4000)}, {"question": LONG}])
    assert response.status_code == 201, response.json()
    assert response.json() == imported(records=2, created=2)
    # An export imports back in place: a record without an id replaces the entry that has its question.
    response = upload(world, [{"question": LONG_VARIANT, "tags": ["again"]}, {"question": LONG_OTHER}])
    assert response.json() == imported(records=2, created=1, updated=1)
    assert GoldenEntry.objects.get(question=LONG_VARIANT).tags == ["again"]
    assert GoldenEntry.objects.count() == 3


def test_import_golden_exits_2_naming_the_record_and_field(world, tmp_path):
    existing(world)
    before = db_state()
    path = tmp_path / "golden.json"
    path.write_text(json.dumps([{"question": "Fine?"}, {"question": text(4001)}], indent=2), encoding="utf-8")
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as info:
        call_command("import_golden", str(path), stdout=out, stderr=err, **SCOPE)
    assert info.value.code == 2 and out.getvalue() == ""
    assert err.getvalue().splitlines() == [
        'error [golden-schema] record 1, line 5: field "question" may have at most 4000 characters (it has 4001)'
    ]
    assert db_state() == before
    path.write_text(json.dumps([{"question": text(4000)}]), encoding="utf-8")
    call_command("import_golden", str(path), stdout=out, stderr=err, **SCOPE)
    assert world.collection.golden_entries.filter(question=text(4000)).exists()


# ---------------------------------------------------------------- the admin


def admin_add(admin_client, world, **fields: str):
    data = {"collection": str(world.collection.pk), "grades": "{}", "answerable": "on", **fields}
    return admin_client.post(reverse("admin:goldenset_goldenentry_add"), data)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"question": text(4001)}, "question", "May have at most 4000 characters (it has 4001)."),
        (
            {"question": "Q?", "reference_answer": "a" * 20_001},
            "reference_answer",
            "May have at most 20000 characters (it has 20001).",
        ),
        (
            {"question": "Q?", "tags": ", ".join(f"t{i}" for i in range(51))},
            "tags",
            "May have at most 50 tags (it has 51).",
        ),
        (
            {"question": "Q?", "expected_document_ids": "\n".join(f"d{i}" for i in range(1001))},
            "expected_document_ids",
            "May have at most 1000 documents (it has 1001).",
        ),
    ],
)
def test_the_admin_shows_too_much_on_the_field(admin_client, world, fields, field, message):
    existing(world)
    before = db_state()
    response = admin_add(admin_client, world, **fields)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {field: [message]}
    assert db_state() == before


def test_the_admin_takes_a_question_of_4000_characters_and_refuses_a_long_duplicate(admin_client, world):
    assert admin_add(admin_client, world, question=text(4000)).status_code == 302
    assert admin_add(admin_client, world, question=LONG).status_code == 302
    before = db_state()
    response = admin_add(admin_client, world, question=LONG_VARIANT)
    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["question"]
    assert db_state() == before
