"""The public faithfulness sets' reader (benchmarks/faithfulness_sets.py): the raters' majority, the split by
question or document, the pinned files checked, on small files in each set's own format."""

from __future__ import annotations

import json

from benchmarks import faithfulness_sets as sets
from benchmarks.faithfulness_sets import NOT_SUPPORTED, PARTIALLY, SUPPORTED


def write_lfqa(root, labels):
    folder = root / "lfqa_verification" / "data"
    (folder / "docs").mkdir(parents=True)
    (folder / "annotations").mkdir()
    docs = [
        {
            "question_id": 7,
            "question": "Why?",
            "docs": [{"doc_id": "webgpt:7", "title": "T", "text": "Because."}],
        }
    ]
    (folder / "docs" / "docs-webgpt.json").write_text(json.dumps(docs))
    for source in sets._LFQA_SOURCES:
        row = {
            "question_id": "7",
            "question": "Why?",
            "answers": ["A.", "B."],
            "annotations": [
                {"answer": " First one.", "labels": labels},
                {"answer": "Second.", "labels": labels},
            ],
        }
        (folder / "annotations" / f"annotations-{source}.json").write_text(json.dumps([row]))


def write_qags(root):
    folder = root / "qags" / "data"
    folder.mkdir(parents=True)
    for part in ("cnndm", "xsum"):
        votes = [{"worker_id": w, "response": r} for w, r in enumerate(["yes", "no", "no"])]
        row = {
            "article": "It grew 98. 7 per cent.",
            "summary_sentences": [{"sentence": "It grew 98.7%.", "responses": votes}],
        }
        (folder / f"mturk_{part}.jsonl").write_text(json.dumps(row) + "\n")


def test_statements_carry_the_raters_majority_their_previous_sentence_and_passages(tmp_path):
    write_lfqa(tmp_path, ["supported", "not_supported", "supported"])
    write_qags(tmp_path)
    items = sets.load(tmp_path)
    lfqa = [i for i in items if i.set == "abstractive answers"]
    assert len(lfqa) == 2 * len(sets._LFQA_SOURCES)
    first, second = lfqa[:2]
    assert (first.statement, first.previous, first.label) == ("First one.", "", SUPPORTED)
    assert second.previous == "First one." and first.group == second.group == "lfqa:7"
    assert [p.text for p in first.passages] == ["Because."]
    qags = [i for i in items if i.set == "summaries"]
    assert [i.label for i in qags] == [NOT_SUPPORTED, NOT_SUPPORTED]  # two of three said no
    assert qags[0].passages[0].text == "It grew 98.7 per cent."  # the detokenized number mended


def test_three_different_labels_are_partially_and_the_split_follows_the_group():
    assert sets._majority([SUPPORTED, PARTIALLY, NOT_SUPPORTED]) == PARTIALLY
    assert sets._majority([SUPPORTED, SUPPORTED, NOT_SUPPORTED]) == SUPPORTED
    splits = {
        sets.Statement(str(n), "s", "x", f"q{n % 40}", "s", "", (), SUPPORTED).split for n in range(200)
    }
    assert splits == {"dev", "test"}
    a = sets.Statement("1", "s", "x", "q1", "one", "", (), SUPPORTED)
    b = sets.Statement("2", "s", "y", "q1", "two", "", (), NOT_SUPPORTED)
    assert a.split == b.split  # a question's statements stay on one side


def test_absent_or_altered_files_are_named_before_anything_is_read(tmp_path):
    assert len(sets.missing(tmp_path)) == sum(len(s.files) for s in sets.SOURCES)
    write_qags(tmp_path)  # present, but not the pinned files
    problems = sets.missing(tmp_path)
    assert "qags: data/mturk_cnndm.jsonl is not the pinned file" in problems
    assert all("not found" in p for p in problems if p.startswith("lfqa_verification"))
