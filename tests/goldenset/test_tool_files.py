"""Files written by the tools themselves (tests/fixtures/tools/, each with the script that made it and the
tool's version in its README) upload into the demo collection without `format`: detected, read, and matched to
the demo's entries and pages (issue 28, items 11 to 13 and 16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from goldenset.beir_import import beir_import
from goldenset.formats import detect_format
from goldenset.services.scales import scale_change
from tests.goldenset.conftest import GOLDEN_UPLOAD
from tests.support import refused

TOOLS = Path(settings.BASE_DIR) / "tests" / "fixtures" / "tools"
DEMO = Path(settings.BASE_DIR) / "demo" / "clapnq"

# The five demo questions every file holds (tests/fixtures/tools/records.py): key -> expected documents.
EXPECTED = {
    "6401197308716204890": ["p1"],
    "-2652183708580968768": ["p12"],
    "2540646016381071556": ["p39"],
    "923449576656273005": ["p198"],  # one of its passages is on the second page of p198
    "1594887608634738480": [],  # unanswerable
}
FILES = {
    "deepeval_goldens.json": "deepeval",  # save_as('json'): token_cost, expectations, ... beside the golden
    "deepeval_goldens.jsonl": "deepeval",  # save_as('jsonl'): passages joined by |
    "deepeval_goldens.csv": "deepeval",  # save_as('csv')
    "deepeval_test_cases.json": "deepeval",  # save_as(include_test_cases=True)
    "deepeval_test_run.json": "deepeval",  # evaluate()'s test run, camelCase
    "phoenix_examples.json": "phoenix",  # GET /v1/datasets/{id}/examples: node_id, source, updated_at
    "phoenix_dataset.csv": "phoenix",  # the dataset's CSV download
    "phoenix_dataset.jsonl": "phoenix",  # the dataset's JSONL download
    "phoenix_to_dataframe.jsonl": "phoenix",  # the client's to_dataframe(), written by pandas
    "phoenix_df_examples.json": "phoenix",  # a DataFrame upload: lists and booleans as Python's repr
    "phoenix_df_dataset.csv": "phoenix",
    "phoenix_graded_dataset.csv": "phoenix",  # grades flattened to one column per document, as floats (2.0, 0.0)
    "phoenix_graded_dataset.jsonl": "phoenix",
    "ragas_dataset.jsonl": "ragas",  # EvaluationDataset.to_jsonl
    "ragas_dataset.csv": "ragas",  # to_csv: lists as Python's repr
    "ragas_dataset.pandas.json": "ragas",
    "ragas_dataset.hf.jsonl": "ragas",
    "ragas01_dataset.jsonl": "ragas",  # Ragas 0.1's columns: question, contexts, ground_truth, answer
    "ragas01_dataset.csv": "ragas",
}


@pytest.fixture
def demo(world):
    beir_import(folder=DEMO, tenant=world.tenant, collection_id="clapnq", actor="test")
    collection = world.tenant.collections.get(slug="clapnq")
    assert collection.grade_scale == "binary"  # ClapNQ's qrels: every answer passage 1
    # The tools' files grade on 0-3: a curator sets the scale first (the answer passages become 3), as a graded
    # file into a binary collection is refused (test_a_graded_file_into_a_binary_collection_is_refused).
    scale_change(collection=collection, grade_scale="0-3", actor="test")
    before = {e.key: (e.question, e.expected_document_ids) for e in collection.golden_entries.all()}
    return collection, before


def test_a_graded_file_into_a_binary_collection_is_refused_naming_the_line_and_the_scale(world):
    beir_import(folder=DEMO, tenant=world.tenant, collection_id="clapnq", actor="test")
    collection = world.tenant.collections.get(slug="clapnq")
    before = {e.key: e.grades for e in collection.golden_entries.all()}
    error = refused(upload(world, TOOLS / "phoenix_graded_dataset.csv"), 400, "validation-error")
    assert error["message"].startswith(
        "line 2: grades: p1 has grade 2, not a grade of collection clapnq's binary"
    )
    assert error["details"]["grade_scale"] == "binary"
    assert {e.key: e.grades for e in collection.golden_entries.all()} == before  # nothing written


def upload(world, path: Path, **fields):
    file = SimpleUploadedFile(path.name, path.read_bytes())
    return world.client.post(GOLDEN_UPLOAD, {"collection_id": "clapnq", "file": file, **fields})


# Ragas 0.1's TestsetGenerator output (a TestDataset saved as users save it): the four answerable records, whose
# `contexts` are the gold passages the questions were written from.
TESTSETS = {"ragas01_testset.csv": "ragas", "ragas01_testset.jsonl": "ragas"}


def test_every_fixture_file_is_named_here():
    made = {p.name for p in TOOLS.iterdir() if p.suffix in (".json", ".jsonl", ".csv")}
    assert made == set(FILES) | set(TESTSETS)


@pytest.mark.parametrize(("name", "fmt"), FILES.items())
def test_a_file_the_tool_wrote_is_detected_and_updates_the_demo_entries(world, demo, name, fmt):
    collection, before = demo
    path = TOOLS / name
    assert detect_format(path.name, path.read_bytes()) == fmt
    response = upload(world, path)
    assert response.status_code == 200, response.json()  # 200: nothing created
    body = response.json()
    assert (body["format"], body["records"], body["created"], body["documents_created"]) == (fmt, 5, 0, 0)
    # every reference passage matched a page of the demo (none left out), and nothing unknown was met
    assert not [w for w in body["warnings"] if "match no page" in w or "does not read" in w], body["warnings"]
    after = {e.key: e for e in collection.golden_entries.all()}
    assert set(after) == set(before)  # the files' keys, or their questions, found the demo's own entries
    for key, expected in EXPECTED.items():
        assert after[key].question == before[key][0]
        assert after[key].expected_document_ids == expected, (key, after[key].expected_document_ids)
        # unanswerable: said by the file, or (Ragas has no such flag) kept as the entry has it
        assert after[key].answerable is (key != "1594887608634738480")
    assert (
        after["-2652183708580968768"].reference_answer.count("\n") >= 1
    )  # ClapNQ's answer, line breaks kept
    assert upload(world, path).json()["unchanged"] == 5  # imported again: nothing changes


def test_the_promptfoo_bundle_is_refused_naming_its_file_references(world, demo):
    config = refused(upload(world, TOOLS / "promptfoo" / "promptfooconfig.yaml"), 400, "import-invalid")
    assert config["message"].startswith("line 20: tests: 'file://tests.yaml' refers to another file")
    tests = refused(upload(world, TOOLS / "promptfoo" / "tests.yaml"), 400, "import-invalid")
    assert "vars.question: 'file://q.txt' refers to another file" in tests["message"]


@pytest.mark.parametrize("name", ["phoenix_graded_dataset.csv", "phoenix_graded_dataset.jsonl"])
def test_phoenix_grades_written_as_floats_are_grades_and_grade_0_is_kept(world, demo, name):
    """Phoenix's CSV download writes every grade as a float (`2.0`, `0.0`; a document an example does not grade
    is an empty cell): whole-number floats are grades, and a document judged not relevant (0.0) stays judged."""
    collection, _ = demo
    response = upload(world, TOOLS / name)
    assert response.status_code == 200, response.json()
    grades = {e.key: e.grades for e in collection.golden_entries.filter(key__in=EXPECTED)}
    assert grades == {
        "6401197308716204890": {"p1": 2},
        "-2652183708580968768": {"p298": 0},  # p12's 1.0 is its default grade; p298 judged not relevant
        "2540646016381071556": {"p39": 3},
        "923449576656273005": {"p198": 2},
        "1594887608634738480": {"p298": 0},  # the unanswerable question's distractor, judged not relevant
    }
    exported = world.client.get(
        "/lmkit/v1/search/golden-set/export", {"collection_id": "clapnq", "format": "phoenix"}
    )
    rows = [json.loads(line) for line in exported.content.decode().splitlines()]
    by_key = {row["metadata"].get("key"): row["metadata"].get("grades") for row in rows}
    assert by_key["1594887608634738480"] == {"p298": 0}  # and out again


@pytest.mark.parametrize(("name", "fmt"), TESTSETS.items())
def test_a_ragas_01_testsets_contexts_are_its_gold_passages_matched_to_pages(world, demo, name, fmt):
    """A testset's `contexts` are the passages each question was written from: into a collection without the
    questions, each entry expects the documents whose pages hold them (p198's two passages are on its two
    pages), with no passage left unmatched. Beside an `answer` (an evaluation row) they are a run's: ignored."""
    collection, _ = demo
    collection.golden_entries.all().delete()
    path = TOOLS / name
    assert detect_format(path.name, path.read_bytes()) == fmt
    response = upload(world, path)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["records"], body["created"], body["documents_created"], body["warnings"]) == (4, 4, 0, [])
    stored = {e.key or e.question: e.expected_document_ids for e in collection.golden_entries.all()}
    assert sorted(stored.values()) == [["p1"], ["p12"], ["p198"], ["p39"]]
    assert upload(world, path).json()["unchanged"] == 4
