"""An import finds an entry by its key, else by its question (issue 28, first-day items 1 and 2): a file written
elsewhere, with keys of its own, updates the entries whose questions it asks (they keep their keys) and says so;
a file with problems of several kinds lists every one; a preview shows the first rows as they will be stored."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from goldenset import importers
from goldenset.beir_import import beir_import
from goldenset.formats import FORMATS, detect_format, read_entries
from goldenset.models import Document, GoldenEntry
from tests.goldenset.conftest import GOLDEN_UPLOAD, GS
from tests.support import EVERY_KIND_OF_PROBLEM, add_entries, db_state, refused

DEMO = Path(settings.BASE_DIR) / "demo"


def upload(client, name: str, content: str, **fields):
    file = SimpleUploadedFile(name, content.encode())
    return client.post(GOLDEN_UPLOAD, {"collection_id": "handbook", "file": file, **fields})


def test_the_demo_sample_files_import_into_the_demo_collection_by_their_questions(world):
    """The README's first import example: each sample file's keys are its own, its questions the demo's."""
    beir_import(folder=DEMO / "clapnq", tenant=world.tenant, collection_id="clapnq", actor="test")
    collection = world.tenant.collections.get(slug="clapnq")
    keys = set(collection.golden_entries.values_list("key", flat=True))
    samples = sorted(
        p for p in (DEMO / "formats").glob("clapnq-sample.*") if p.suffix not in (".qrels", ".trec")
    )
    assert {s.name for s in samples} >= {
        "clapnq-sample.json",
        "clapnq-sample.csv",
        "clapnq-sample.ragas.jsonl",
    }
    seen = set()
    for sample in samples:
        data = sample.read_bytes()
        fmt = detect_format(sample.name, data)
        seen.add(fmt)
        qrels = (DEMO / "formats" / "clapnq-sample.qrels").read_bytes() if fmt == "trec" else None
        result = importers.golden_import(collection=collection, fmt=fmt, data=data, qrels=qrels, actor="test")
        assert result["created"] == 0 and result["records"] == 3, (sample.name, result)
        assert any("under another key" in w for w in result["warnings"]), (sample.name, result["warnings"])
    assert seen == set(FORMATS)  # every format's sample was imported
    assert set(collection.golden_entries.values_list("key", flat=True)) == keys  # no key changed, none added


def test_a_question_under_another_key_updates_that_entry_which_keeps_its_key(world):
    (keyed,) = add_entries(world.collection, "Refund window?", key="r-1", expected_document_ids=["refunds"])
    (keyless,) = add_entries(world.collection, "Shipping time?")
    csv = "key,question,expected_document_ids,reference_answer\nmine-1,refund  WINDOW?,refunds,30 days.\n" \
          "mine-2,Shipping time?,shipping,Two days.\nmine-3,New one?,,\n"  # fmt: skip
    preview = upload(world.client, "g.csv", csv, dry_run="true").json()
    assert (preview["created"], preview["updated"]) == (1, 2)
    (warning,) = preview["warnings"]
    assert "2 entries of the file ask a question the collection has under another key" in warning
    assert (
        "line 2 (mine-1) -> entry r-1" in warning and "line 3 (mine-2) -> an entry without a key" in warning
    )
    assert [(r["action"], r["key"]) for r in preview["rows"]] == [("update", "r-1"), ("update", ""),
                                                                  ("create", "mine-3")]  # fmt: skip
    assert upload(world.client, "g.csv", csv).status_code == 201
    keyed.refresh_from_db()
    keyless.refresh_from_db()
    assert (keyed.key, keyed.question, keyed.reference_answer) == ("r-1", "refund  WINDOW?", "30 days.")
    assert (keyless.key, keyless.expected_document_ids) == ("", ["shipping"])
    assert upload(world.client, "g.csv", csv).json()["unchanged"] == 3  # again: nothing changes


def test_a_key_of_one_entry_with_the_question_of_another_is_still_refused(world):
    add_entries(world.collection, "Refund window?", key="r-1")
    add_entries(world.collection, "Shipping time?", key="s-1")
    before = db_state()
    error = refused(
        upload(world.client, "g.csv", "key,question\nr-1,Shipping time?\n"), 409, "duplicate-question"
    )
    assert error["details"]["where"] == "line 2"
    assert db_state() == before


def test_every_problem_of_every_kind_is_listed_at_once(world):
    error = refused(
        upload(world.client, "g.csv", EVERY_KIND_OF_PROBLEM, dry_run="true"), 409, "duplicate-question"
    )
    listed = [(e["code"], e["where"]) for e in error["details"]["errors"]]
    assert listed == [
        ("duplicate-question", "line 3"),
        ("duplicate-key", "line 5"),
        ("unknown-documents", "line 4"),
        ("unknown-documents", "line 6"),
    ]
    assert error["message"].startswith("4 problems: line 3: the question repeats")
    assert not GoldenEntry.objects.exists()


def test_a_passage_copied_from_a_page_with_line_breaks_matches_it_and_a_reimport_creates_nothing(world):
    """The world's "refunds" page reads "...within 30 days of purchase.\n\nRefunds go to the original card."."""
    copied = "within 30 days of purchase.\n\nRefunds go to the original card."
    rows = [
        {"user_input": "Where do refunds go?", "reference": "The card.", "reference_contexts": [copied]},
        {"user_input": "Logo?", "reference": "Blue.", "reference_contexts": ["The logo\nis blue."]},
    ]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    first = upload(world.client, "rows.jsonl", text, format="ragas", create_documents="true").json()
    assert (first["created"], first["documents_created"], first["warnings"]) == (2, 1, [])
    entries = {e.question: e.expected_document_ids for e in GoldenEntry.objects.all()}
    assert entries["Where do refunds go?"] == ["refunds"]
    again = upload(world.client, "rows.jsonl", text, format="ragas", create_documents="true").json()
    assert (again["unchanged"], again["documents_created"], again["warnings"]) == (2, 0, [])
    assert (
        Document.objects.filter(collection=world.collection, external_id__startswith="context-").count() == 1
    )


def test_a_trec_export_of_entries_without_keys_imports_back_unchanged(world):
    add_entries(world.collection, "Refund window?", "Shipping time?", expected_document_ids=["refunds"])
    add_entries(world.collection, "Warranty?", key="q1", expected_document_ids=["warranty"])  # a key like q1
    exported = {
        part: world.client.get(f"{GS}/export", {"collection_id": "handbook", "format": "trec", "part": part})
        for part in ("topics", "qrels")
    }
    topics = exported["topics"].content.decode()
    assert topics.splitlines() == ["q2\tRefund window?", "q3\tShipping time?", "q1\tWarranty?"]
    before = db_state()
    file = SimpleUploadedFile("golden.topics.tsv", exported["topics"].content)
    qrels = SimpleUploadedFile("golden.qrels", exported["qrels"].content)
    response = world.client.post(GOLDEN_UPLOAD, {"collection_id": "handbook", "file": file, "qrels": qrels})
    assert response.status_code == 200, response.json()
    assert (response.json()["unchanged"], response.json()["created"]) == (3, 0)
    assert db_state() == before


TREC2_TOPIC = """<top>
<head> Tipster Topic Description
<num> Number: 051
<dom> Domain: International Economics
<title> Topic: Airbus Subsidies

<desc> Description:
Document will discuss government assistance to Airbus Industrie.

<narr> Narrative:
To be relevant, a document must cite or discuss assistance to Airbus Industrie.

<con> Concept(s):
1. Airbus Industrie
2. European aircraft consortium

<fac> Factor(s):
<nat> Nationality: U.S.
</fac>
<def> Definition(s):
</top>
"""


def test_trec_2_topics_give_their_number_and_title():
    (entry,) = read_entries("trec", TREC2_TOPIC, qrels="051 0 AP880212-0161 1\n")
    assert (entry.key, entry.question, entry.expected_document_ids) == (
        "051",
        "Airbus Subsidies",
        ("AP880212-0161",),
    )


def test_fields_a_newer_release_adds_are_named_in_the_warnings_not_refused(world):
    """DeepEval's own token_cost is known (and ignored); fields nobody knows yet are named."""
    rows = [
        {
            "input": "Refund window?",
            "expected_output": "30 days.",
            "token_cost": 0.01,
            "grounding": 1,
            "tone": "x",
        },
        {"input": "Shipping time?", "expected_output": "Two days.", "token_cost": None, "grounding": None},
    ]
    response = upload(world.client, "goldens.json", json.dumps(rows), format="deepeval")
    assert response.status_code == 201, response.json()
    assert response.json()["warnings"] == [
        "Fields evalsite does not read were left out: 'grounding' (2 records, first record 0); "
        "'tone' (1 record, first record 0)."
    ]
    assert GoldenEntry.objects.count() == 2
    missing = upload(world.client, "goldens.json", json.dumps([{"expected_output": "x", "token_cost": 1}]),
                     format="deepeval")  # fmt: skip
    assert (
        refused(missing, 400, "import-invalid")["message"] == "record 0: input: expected a non-empty string."
    )


def test_the_warning_of_unknown_fields_is_bounded_whatever_the_file_carries(world):
    row = {"input": "Refund window?", "x" * 5000: 1, **{f"field_{i}": i for i in range(30)}}
    response = upload(world.client, "goldens.json", json.dumps([row]), format="deepeval")
    (warning,) = response.json()["warnings"]
    assert "'" + "x" * 56 + "... (1 record, first record 0)" in warning  # cut to 60 characters
    assert warning.endswith("; and 21 more.") and len(warning) < 1000
