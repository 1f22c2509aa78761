"""import_beir on the real BEIR datasets (ClapNQ, Cranfield, Vaswani) and on broken folders; DB state asserted."""

from __future__ import annotations

import json
from collections import defaultdict
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from evalsite.audit.models import AuditEvent
from evalsite.tenancy.models import Cluster, Tenant
from goldenset.models import Collection, Document, GoldenEntry, Origin, Page

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"
# Only the tests that read the real datasets are skipped without them; the broken-folder tests always run.
needs_datasets = pytest.mark.skipif(
    not (DATASETS / "clapnq").is_dir(),
    reason=f"the BEIR test datasets are not at {DATASETS} (expected the read-only ../shared/datasets)",
)
pytestmark = pytest.mark.django_db


def import_beir(folder: Path, collection: str, **extra) -> str:
    out = StringIO()
    call_command(
        "import_beir", str(folder), cluster="demo", tenant="demo", collection=collection, stdout=out, **extra
    )
    return out.getvalue()


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_qrels_file(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for row in path.read_text(encoding="utf-8").splitlines()[1:]:
        query_id, doc_id, grade = row.split("\t")
        qrels[query_id][doc_id] = int(grade)
    return qrels


# ---------------------------------------------------------------- ClapNQ


@needs_datasets
def test_clapnq_imports_documents_and_answerable_and_unanswerable_entries():
    folder = DATASETS / "clapnq"
    out = import_beir(folder, "clapnq", name="ClapNQ")
    collection = Collection.objects.get(tenant__slug="demo", tenant__cluster__slug="demo", slug="clapnq")
    pages = Page.objects.filter(document__collection=collection).count()
    assert out == (
        f"clapnq: 597 documents (597 created, 0 updated, {pages} pages written), 600 queries -> "
        "600 golden entries created, 0 updated\n"
    )
    assert collection.name == "ClapNQ"
    assert collection.documents.count() == 597 and pages >= 597
    assert collection.golden_entries.count() == 600
    assert set(collection.golden_entries.values_list("origin", flat=True)) == {Origin.IMPORTED}

    queries = {q["_id"]: q for q in read_jsonl(folder / "queries.jsonl")}
    qrels = read_qrels_file(folder / "qrels.tsv")
    entries = {e.key: e for e in collection.golden_entries.all()}
    assert set(entries) == set(queries)
    answerable = [e for e in entries.values() if e.answerable]
    unanswerable = [e for e in entries.values() if not e.answerable]
    assert len(answerable) == 300 and len(unanswerable) == 300
    for entry in answerable:
        query = queries[entry.key]
        assert entry.question == query["text"]
        assert entry.reference_answer == query["reference_answer"] != ""
        assert (
            entry.expected_document_ids == sorted(qrels[entry.key]) and len(entry.expected_document_ids) == 1
        )
        # grade 1 is an expected document's default, stored as no grade (goldenset.text.canonical_grades)
        assert entry.grades == {} and entry.qrels() == {d: 1 for d in entry.expected_document_ids}
    for entry in unanswerable:
        assert entry.question == queries[entry.key]["text"]
        assert entry.expected_document_ids == [] and entry.grades == {} and entry.reference_answer == ""
    referenced = {d for e in answerable for d in e.expected_document_ids}
    assert referenced <= set(collection.documents.values_list("external_id", flat=True))
    first = collection.documents.get(external_id="p1")
    assert first.title == "Forecasting" and first.source == "clapnq"
    assert first.pages.first().text.startswith("Seasonality is a characteristic of a time series")
    assert (
        AuditEvent.objects.filter(
            object_type="golden-entry", action="create", actor="command:import_beir"
        ).count()
        == 600
    )


@needs_datasets
def test_clapnq_imported_again_is_updated_in_place():
    folder = DATASETS / "clapnq"
    import_beir(folder, "clapnq")
    collection = Collection.objects.get(slug="clapnq")
    entry_ids = set(collection.golden_entries.values_list("pk", flat=True))
    document_ids = set(collection.documents.values_list("pk", flat=True))
    pages = Page.objects.filter(document__collection=collection).count()
    events = AuditEvent.objects.count()

    out = import_beir(folder, "clapnq")
    assert out == (
        "clapnq: 597 documents (0 created, 0 updated, 0 pages written), 600 queries -> "
        "0 golden entries created, 0 updated\n"
    )
    assert Collection.objects.filter(slug="clapnq").count() == 1
    assert set(collection.golden_entries.values_list("pk", flat=True)) == entry_ids
    assert set(collection.documents.values_list("pk", flat=True)) == document_ids
    assert Page.objects.filter(document__collection=collection).count() == pages
    assert AuditEvent.objects.count() == events  # nothing changed, nothing audited
    assert Tenant.objects.count() == 1 and Cluster.objects.count() == 1


# ---------------------------------------------------------------- Cranfield


@needs_datasets
def test_cranfield_carries_the_graded_judgments_over():
    folder = DATASETS / "cranfield"
    import_beir(folder, "cranfield")
    collection = Collection.objects.get(slug="cranfield")
    assert collection.documents.count() == 1400 and collection.golden_entries.count() == 225
    # Documents 471 and 995 are empty: kept as documents without pages.
    assert collection.documents.get(external_id="471").pages.count() == 0

    qrels = read_qrels_file(folder / "qrels.tsv")
    entries = {e.key: e for e in collection.golden_entries.all()}
    assert set(entries) == set(qrels)
    first = entries["1"]
    assert (
        first.question
        == "what similarity laws must be obeyed when constructing aeroelastic models of heated high speed aircraft ."
    )
    relevant = {d: g for d, g in qrels["1"].items() if g > 0}
    # grade 0 kept (judged not relevant); an expected document's grade 1 is its default, stored as no grade
    assert first.grades == {d: g for d, g in qrels["1"].items() if g >= 0 and g != 1}
    assert first.grades["184"] == 3 and "13" not in first.grades and first.qrels()["13"] == 1
    assert first.expected_document_ids == sorted(relevant)
    assert "486" in qrels["1"] and qrels["1"]["486"] == 0 and "486" not in first.expected_document_ids
    assert first.qrels()["486"] == 0
    for key, entry in entries.items():
        assert entry.grades == {d: g for d, g in qrels[key].items() if g >= 0 and g != 1}, key
    assert (
        sum(len(e.expected_document_ids) for e in entries.values()) == 1612
    )  # relevant judgments, per the README
    assert sum(e.qrels() == qrels[key] for key, e in entries.items()) == len(
        entries
    )  # every judgment, as read


@needs_datasets
def test_vaswani_imports_its_11k_documents():
    folder = DATASETS / "vaswani_npl"
    out = import_beir(folder, "vaswani")
    assert (
        out == "vaswani: 11429 documents (11429 created, 0 updated, 11429 pages written), 93 queries -> "
        "93 golden entries created, 0 updated\n"
    )
    collection = Collection.objects.get(slug="vaswani")
    assert collection.documents.count() == 11429 and collection.golden_entries.count() == 93
    assert sum(len(e.expected_document_ids) for e in collection.golden_entries.all()) == 2083


# ---------------------------------------------------------------- small and broken folders


def write_folder(path: Path, *, corpus: list[str], queries: list[str], qrels: list[str]) -> Path:
    path.mkdir(exist_ok=True)
    (path / "corpus.jsonl").write_text("".join(f"{line}\n" for line in corpus), encoding="utf-8")
    (path / "queries.jsonl").write_text("".join(f"{line}\n" for line in queries), encoding="utf-8")
    (path / "qrels.tsv").write_text("".join(f"{line}\n" for line in qrels), encoding="utf-8")
    return path


CORPUS = [
    json.dumps({"_id": "d1", "title": "Refunds", "text": "Full refund within 30 days."}),
    json.dumps({"_id": "d2", "title": "Shipping", "text": "Orders ship in two days."}),
]
QUERIES = [
    json.dumps({"_id": "q1", "text": "How long is the refund window?"}),
    json.dumps({"_id": "q2", "text": "How do I fly to the moon?"}),
    json.dumps({"_id": "q3", "text": "Who founded the company?"}),
]


def test_only_judgments_above_zero_become_expected_documents_and_grade_0_is_kept_as_judged(tmp_path):
    folder = write_folder(
        tmp_path / "small",
        corpus=CORPUS,
        queries=QUERIES,
        qrels=["query-id\tcorpus-id\tscore", "q1\td1\t2", "q1\td2\t0", "q2\td1\t0", "q2\td2\t0"],
    )
    out = import_beir(folder, "small")
    assert (
        out
        == "small: 2 documents (2 created, 0 updated, 2 pages written), 3 queries -> 3 golden entries created, 0 updated\n"
    )
    entries = {
        e["key"]: e
        for e in GoldenEntry.objects.values("key", "expected_document_ids", "grades", "answerable", "origin")
    }
    assert entries == {
        "q1": {
            "key": "q1",
            "expected_document_ids": ["d1"],
            "grades": {"d1": 2, "d2": 0},
            "answerable": True,
            "origin": "Imported",
        },
        "q2": {
            "key": "q2",
            "expected_document_ids": [],
            "grades": {"d1": 0, "d2": 0},  # judged, nothing relevant: not evaluated, never pooled again
            "answerable": True,
            "origin": "Imported",
        },
        "q3": {
            "key": "q3",
            "expected_document_ids": [],
            "grades": {},
            "answerable": True,
            "origin": "Imported",
        },
    }


def assert_nothing_written():
    for model in (Cluster, Tenant, Collection, Document, Page, GoldenEntry, AuditEvent):
        assert model.objects.count() == 0, model.__name__


def fails(folder: Path) -> str:
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as info:
        call_command(
            "import_beir", str(folder), cluster="demo", tenant="demo", collection="c", stdout=out, stderr=err
        )
    assert info.value.code == 2 and out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert len(lines) == 1, err.getvalue()
    return lines[0]


def test_a_qrels_row_judging_an_unknown_document_exits_2_naming_file_and_line(tmp_path):
    folder = write_folder(
        tmp_path / "broken",
        corpus=CORPUS,
        queries=QUERIES,
        qrels=["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\tghost\t1"],
    )
    assert fails(folder) == (
        "error [beir-invalid] qrels.tsv line 3: query q2 judges document ghost, which is not in corpus.jsonl"
    )
    assert_nothing_written()


def test_a_malformed_corpus_line_exits_2_naming_file_line_and_column(tmp_path):
    folder = write_folder(
        tmp_path / "broken",
        corpus=[CORPUS[0], '{"_id": "d2" "text": "no comma"}', CORPUS[1]],
        queries=QUERIES,
        qrels=["query-id\tcorpus-id\tscore", "q1\td1\t1"],
    )
    assert fails(folder) == ("error [beir-invalid] corpus.jsonl line 2, column 14: Expecting ',' delimiter")
    assert_nothing_written()


def test_a_bad_query_row_exits_2_naming_file_and_line(tmp_path):
    folder = write_folder(
        tmp_path / "broken",
        corpus=CORPUS,
        queries=[QUERIES[0], json.dumps({"_id": "q2", "text": "ok?", "answerable": "no"})],
        qrels=["query-id\tcorpus-id\tscore"],
    )
    assert (
        fails(folder) == 'error [beir-invalid] queries.jsonl line 2: field "answerable" must be true or false'
    )
    assert_nothing_written()


@pytest.mark.parametrize(
    ("row", "field", "problem"),
    [
        ({"text": "Why " * 1000 + "?"}, "text", "may have at most 4000 characters (it has 4001)"),
        (
            {"text": "Why?", "reference_answer": "a" * 20_001},
            "reference_answer",
            "may have at most 20000 characters (it has 20001)",
        ),
    ],
)
def test_a_query_beyond_the_entry_limits_exits_2_naming_file_line_and_field(tmp_path, row, field, problem):
    folder = write_folder(
        tmp_path / "broken",
        corpus=CORPUS,
        queries=[QUERIES[0], json.dumps({"_id": "q2", **row})],
        qrels=["query-id\tcorpus-id\tscore"],
    )
    assert fails(folder) == f'error [beir-invalid] queries.jsonl line 2: field "{field}" {problem}'
    assert_nothing_written()


def test_a_query_judging_more_than_1000_documents_exits_2_naming_the_field(tmp_path):
    """The service's limit, which the qrels reader cannot see: every writer goes through it."""
    corpus = [json.dumps({"_id": f"d{i}", "text": "x"}) for i in range(1001)]
    folder = write_folder(
        tmp_path / "broken",
        corpus=corpus,
        queries=QUERIES[:1],
        qrels=["query-id\tcorpus-id\tscore", *(f"q1\td{i}\t1" for i in range(1001))],
    )
    assert fails(folder) == (
        "error [validation-error] entries[0].expected_document_ids: may have at most 1000 documents (it has 1001)."
    )
    assert_nothing_written()


def test_a_folder_without_the_beir_files_exits_2(tmp_path):
    assert fails(tmp_path) == (
        f"error [beir-invalid] {tmp_path}: missing {tmp_path / 'corpus.jsonl'}, {tmp_path / 'queries.jsonl'}"
    )
    assert_nothing_written()
