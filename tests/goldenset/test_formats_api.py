"""Golden sets in every format through the API (upload with `format`, or detected; export with `format`) and the
commands (`import_golden --format`, `export_golden --format`): round trips, dry runs, reference passages matched
or created, and malformed files refused whole naming their line."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from goldenset.formats import FORMATS
from goldenset.models import Document, GoldenEntry
from tests.support import member_of, refused

UPLOAD = "/lmkit/v1/search/golden-set/upload"
EXPORT = "/lmkit/v1/search/golden-set/export"
CSV = (
    "key,question,expected_document_ids,grades,reference_answer,tags,answerable\n"
    'q1,How long is the refund window?,refunds,refunds=2,"30 days, full refund.",policy|money,true\n'
    "q2,When does express shipping arrive?,shipping,,Next day.,shipping,\n"
    "q3,Who is the chief executive?,,,,,false\n"
)


def upload(client, name: str, content: str | bytes, **fields):
    data = content.encode() if isinstance(content, str) else content
    return client.post(
        UPLOAD, {"collection_id": "handbook", "file": SimpleUploadedFile(name, data), **fields}
    )


def snapshot() -> list[tuple]:
    return list(
        GoldenEntry.objects.order_by("key").values_list(
            "key", "question", "expected_document_ids", "grades", "reference_answer", "tags", "answerable"
        )
    )


def test_a_csv_upload_is_detected_previewed_then_loaded(world):
    preview = upload(world.client, "golden.csv", CSV, dry_run="true")
    assert preview.status_code == 200, preview.json()
    rows = preview.json().pop("rows")
    assert preview.json() | {"rows": None} == {"format": "csv", "records": 3, "created": 3, "updated": 0,
        "unchanged": 0, "documents_created": 0, "warnings": [], "dry_run": True, "rows": None}  # fmt: skip
    # the first rows as they will be stored: grades are not shown, an empty answerable cell is true
    assert rows[0] == {"where": "line 2", "action": "create", "key": "q1",
        "question": "How long is the refund window?", "expected_document_ids": ["refunds"],
        "reference_answer": "30 days, full refund.", "tags": ["policy", "money"], "answerable": True}  # fmt: skip
    assert [(r["where"], r["key"], r["answerable"]) for r in rows[1:]] == [
        ("line 3", "q2", True), ("line 4", "q3", False)
    ]  # fmt: skip
    assert not GoldenEntry.objects.exists()
    loaded = upload(world.client, "golden.csv", CSV)
    assert loaded.status_code == 201 and loaded.json()["created"] == 3
    assert snapshot()[0] == (
        "q1", "How long is the refund window?", ["refunds"], {"refunds": 2}, "30 days, full refund.",
        ["policy", "money"], True,
    )  # fmt: skip
    assert upload(world.client, "golden.csv", CSV).json()["unchanged"] == 3


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "trec"])
def test_every_format_exported_uploads_back_unchanged(world, fmt):
    upload(world.client, "golden.csv", CSV)
    before = snapshot()
    exported = world.client.get(EXPORT, {"collection_id": "handbook", "format": fmt})
    assert exported.status_code == 200
    name = exported["Content-Disposition"].split('filename="')[1].rstrip('"')
    assert name.startswith("handbook-golden")
    warnings = json.loads(exported["X-Evalsite-Warnings"])
    again = upload(world.client, name, exported.content, format=fmt)
    assert again.status_code == 200, again.json()
    body = again.json()
    assert (body["records"], body["created"]) == (3, 0), body
    if fmt == "okfsmith":  # golden.json has no grades: said so, and a replaced entry keeps its own
        assert any("grades" in w for w in warnings)
    assert snapshot() == before


def test_trec_topics_and_qrels_round_trip(world, tmp_path):
    upload(world.client, "golden.csv", CSV)
    before = snapshot()
    topics = world.client.get(EXPORT, {"collection_id": "handbook", "format": "trec", "part": "topics"})
    qrels = world.client.get(EXPORT, {"collection_id": "handbook", "format": "trec", "part": "qrels"})
    assert topics.content.decode().splitlines()[0] == "q1\tHow long is the refund window?"
    assert qrels.content.decode().splitlines() == ["q1 0 refunds 2", "q2 0 shipping 1"]
    warnings = json.loads(topics["X-Evalsite-Warnings"])
    assert any("reference answers" in w for w in warnings)
    response = upload(
        world.client, "topics.tsv", topics.content, format="trec",
        qrels=SimpleUploadedFile("qrels.txt", qrels.content),
    )  # fmt: skip
    assert response.status_code == 200, response.json()
    # TREC carries keys, questions, expected documents and grades: the rest is kept as it was
    assert response.json()["unchanged"] == 3, response.json()
    assert snapshot() == before


def test_ragas_reference_passages_are_matched_to_pages_or_created_as_documents(world):
    rows = [
        {"user_input": "How long is the refund window?", "reference": "30 days.",
         "reference_contexts": ["Customers get a full refund within 30 days of purchase."]},
        {"user_input": "What colour is the logo?", "reference": "Blue.", "reference_contexts": ["The logo is blue."]},
    ]  # fmt: skip
    text = "".join(json.dumps(r) + "\n" for r in rows)
    matched = upload(world.client, "rows.jsonl", text, format="ragas")
    assert matched.status_code == 201, matched.json()
    assert any("1 reference passages match no page" in w for w in matched.json()["warnings"])
    entries = {e.question: e for e in GoldenEntry.objects.all()}
    assert entries["How long is the refund window?"].expected_document_ids == ["refunds"]
    assert entries["What colour is the logo?"].expected_document_ids == []
    created = upload(world.client, "rows.jsonl", text, format="ragas", create_documents="true")
    assert created.json()["documents_created"] == 1 and created.json()["warnings"] == []
    (document,) = Document.objects.filter(collection=world.collection, external_id__startswith="context-")
    assert GoldenEntry.objects.get(question="What colour is the logo?").expected_document_ids == [
        document.external_id
    ]


def test_a_malformed_upload_names_its_line_and_writes_nothing(world):
    bad = CSV + "q4,Broken row\n"
    error = refused(upload(world.client, "golden.csv", bad), 400, "import-invalid")
    assert error["message"] == "line 5: expected 7 cells, found 2." and error["details"]["where"] == "line 5"
    error = refused(upload(world.client, "golden.csv", CSV.replace("refunds,refunds=2", "ghost,")), 400,
                    "unknown-documents")  # fmt: skip
    assert error["message"].startswith("line 2: ")
    refused(upload(world.client, "golden.csv", CSV, format="xml"), 400, "validation-error")
    refused(upload(world.client, "topics.tsv", "q1\tQ\n", format="trec"), 400, "import-invalid")
    refused(world.client.get(EXPORT, {"collection_id": "handbook", "format": "xml"}), 400, "validation-error")
    assert not GoldenEntry.objects.exists()


def test_the_commands_import_and_export_every_format(world, tmp_path):
    path = tmp_path / "golden.csv"
    path.write_text(CSV)
    scope = ["--cluster", "acme", "--tenant", "search", "--collection", "handbook"]
    out = StringIO()
    call_command("import_golden", str(path), *scope, "--dry-run", stdout=out)
    assert out.getvalue() == (
        f"{path} (csv): 3 records -> 3 would be created, 0 would be updated, 0 unchanged\n"
        "  line 2: create q1: 'How long is the refund window?' -> refunds\n"
        "  line 3: create q2: 'When does express shipping arrive?' -> shipping\n"
        "  line 4: create q3: 'Who is the chief executive?' -> no expected documents\n"
    )
    call_command("import_golden", str(path), *scope, stdout=StringIO())
    before = snapshot()
    err = StringIO()
    call_command(
        "export_golden",
        *scope,
        "--format",
        "trec",
        "-o",
        str(tmp_path / "trec"),
        stdout=StringIO(),
        stderr=err,
    )
    assert "warning: TREC topics and qrels have no place for reference answers" in err.getvalue()
    topics, qrels = (
        tmp_path / "trec" / "handbook-golden.topics.tsv",
        tmp_path / "trec" / "handbook-golden.qrels",
    )
    out = StringIO()
    call_command("import_golden", str(topics), *scope, "--format", "trec", "--qrels", str(qrels), stdout=out)
    assert "3 records -> 0 created" in out.getvalue()
    promptfoo = tmp_path / "tests.yaml"
    call_command(
        "export_golden",
        *scope,
        "--format",
        "promptfoo",
        "-o",
        str(promptfoo),
        stdout=StringIO(),
        stderr=StringIO(),
    )
    out = StringIO()
    call_command("import_golden", str(promptfoo), *scope, stdout=out)  # detected from .yaml
    assert out.getvalue().startswith(
        f"{promptfoo} (promptfoo): 3 records -> 0 created, 0 updated, 3 unchanged"
    )
    assert snapshot() == before


def test_the_dashboards_csv_export_imports_back(world):
    from django.test import Client
    from django.urls import reverse

    upload(world.client, "golden.csv", CSV)
    before = snapshot()
    user = member_of(world.tenant, "cara", password="x")
    client = Client()
    client.force_login(user)
    exported = client.get(reverse("dashboard:golden-csv", args=["handbook"]))
    again = upload(world.client, "dashboard.csv", exported.content)
    assert again.status_code == 200 and again.json()["unchanged"] == 3, again.json()
    assert snapshot() == before  # its grades column is absent: grades kept


def test_trec_grade_0_is_imported_as_judged_not_relevant_and_exported_back(world):
    topics = "q1\tHow long is the refund window?\nq2\tHow fast is shipping?\n"
    qrels = "q1 0 refunds 1\nq1 0 warranty 0\nq2 0 shipping 3\nq2 0 refunds -1\n"
    response = upload(
        world.client, "topics.tsv", topics.encode(), format="trec",
        qrels=SimpleUploadedFile("qrels.txt", qrels.encode()),
    )  # fmt: skip
    assert response.status_code == 201, response.json()
    q1 = GoldenEntry.objects.get(collection=world.collection, key="q1")
    # warranty is judged (0), never expected; a negative grade (in the pool, unjudged) is not kept
    assert (q1.expected_document_ids, q1.grades, q1.qrels()) == (
        ["refunds"],
        {"warranty": 0},
        {"refunds": 1, "warranty": 0},
    )
    assert GoldenEntry.objects.get(collection=world.collection, key="q2").qrels() == {"shipping": 3}
    exported = world.client.get(EXPORT, {"collection_id": "handbook", "format": "trec", "part": "qrels"})
    assert exported.content.decode().splitlines() == ["q1 0 refunds 1", "q1 0 warranty 0", "q2 0 shipping 3"]


def test_ids_joined_by_another_separator_are_named_with_the_separator_lists_take(world):
    """`refunds;shipping` in an id cell reads as one id nobody has: the error says what it holds and how a cell
    separates ids, instead of only "unknown"."""
    text = "key,question,expected_document_ids\nq1,How long is the refund window?,refunds;shipping\n"
    error = refused(upload(world.client, "golden.csv", text), 400, "unknown-documents")
    assert error["message"] == (
        "line 2: expected_document_ids: 1 unknown in collection handbook: refunds;shipping; 'refunds;shipping' "
        "reads as the documents refunds, shipping joined by ';': give each id on its own (a CSV or TSV cell "
        "separates ids with '|', JSON lists them)"
    )
    assert error["details"]["field"] == "expected_document_ids"
    # An id that only looks joined, its parts unknown too, is plainly unknown.
    text = "key,question,expected_document_ids\nq1,How long is the refund window?,ghost;phantom\n"
    error = refused(upload(world.client, "golden.csv", text), 400, "unknown-documents")
    assert (
        error["message"] == "line 2: expected_document_ids: 1 unknown in collection handbook: ghost;phantom"
    )
    assert not GoldenEntry.objects.exists()


def _question(row: dict) -> str:
    """A tool's row's question: Ragas `user_input`, DeepEval `input`, Phoenix `input.question`."""
    given = row.get("user_input") or row["input"]
    return given if isinstance(given, str) else given["question"]


@pytest.mark.parametrize(
    ("fmt", "passages"),
    [
        ("ragas", lambda row: row["reference_contexts"]),
        ("deepeval", lambda row: row["context"]),
        ("phoenix", lambda row: row["output"]["contexts"]),
    ],
)
def test_exports_for_the_tools_carry_the_expected_passages_text(world, fmt, passages):
    """Ragas, DeepEval and Phoenix score against passages' text: each expected document's passage goes with its
    id, in the field the tool reads (its first page, as written), and an export imports back changing nothing."""
    upload(world.client, "golden.csv", CSV)
    exported = world.client.get(EXPORT, {"collection_id": "handbook", "format": fmt})
    assert exported.status_code == 200
    text = exported.content.decode()
    rows = (
        json.loads(text)
        if text.lstrip().startswith("[")
        else [json.loads(line) for line in text.splitlines()]
    )
    by_question = {_question(row): row for row in rows}
    refund = by_question["How long is the refund window?"]
    assert passages(refund) == [
        "Customers get a full refund within 30 days of purchase.\n\nRefunds go to the original card."
    ]
    shipping = by_question["When does express shipping arrive?"]
    assert passages(shipping) == [
        "Orders ship within two business days. Express shipping arrives the next day."
    ]
    assert "reference passages" not in " ".join(json.loads(exported["X-Evalsite-Warnings"]))
    before = snapshot()
    again = upload(world.client, f"golden.{fmt}", exported.content, format=fmt)
    assert (again.json()["created"], again.json()["updated"]) == (0, 0), again.json()
    assert snapshot() == before
