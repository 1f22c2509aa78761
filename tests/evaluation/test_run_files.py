"""Run files: the TREC and JSONL readers (evaluation.retrieval.run_files), POST /lmkit/v1/search/evaluate/run-file and
`manage.py evaluate_run`. A built-in run exported as a TREC run file and uploaded again scores the same."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from evalsite.errors import EvalsiteError
from evaluation.dashboard.runs_reads import run_trec
from evaluation.models import EvaluationRun
from evaluation.retrieval.run_files import parse_run_file
from tests.support import handbook_entries, refused

URL = "/lmkit/v1/search/evaluate/run-file"


def error_of(data: bytes) -> EvalsiteError:
    with pytest.raises(EvalsiteError) as caught:
        parse_run_file(data)
    return caught.value


def test_trec_and_jsonl_run_files_are_read_by_tag_query_and_document():
    trec = parse_run_file(b"q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.0 bm25\n\nq2 Q0 d3 1 7 dense\n")
    assert trec.form == "trec" and trec.lines == 3
    assert trec.runs == {"bm25": {"q1": {"d1": 2.5, "d2": 1.0}}, "dense": {"q2": {"d3": 7.0}}}
    jsonl = parse_run_file(
        b'{"query_id": "q1", "document_id": "d1", "score": 2.5}\n'
        b'{"query_id": 7, "document_id": "d2", "score": 1, "tag": "x"}\n'
    )
    assert jsonl.form == "jsonl" and jsonl.runs == {"run": {"q1": {"d1": 2.5}}, "x": {"7": {"d2": 1.0}}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b"q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 bm25\n",
            "line 2: expected 6 columns (qid Q0 docid rank score tag), found 5.",
        ),
        (b"q1 Q0 d1 1 high bm25\n", "line 1: score 'high' is not a number."),
        (b"q1 Q0 d1 1 nan bm25\n", "line 1: score 'nan' is not a finite number."),
        (
            b"q1 Q0 d1 1 1 t\n\nq1 Q0 d1 2 0.5 t\n",
            "line 3: document 'd1' is listed twice for query 'q1' in run 't'.",
        ),
        (b'{"query_id": "q1", "document_id": "d1", "score": 1}\n{"query_id": "q1"', "line 2: not JSON"),
        (b'{"query_id": "q1", "score": 1}\n', "line 1: document_id is missing."),
        (b'{"query_id": "q1", "document_id": null, "score": 1}\n', "line 1: document_id must be a non-empty"),
        (b'{"query_id": "q1", "document_id": "d", "score": true}\n', "line 1: score True is not a number."),
        (b"q1 Q0 d\xff 1 1 t\n", "the file is not UTF-8 (byte 7)."),
        (b"{" + b'"a": [' * 100_000 + b"\n", "line 1: not JSON"),
    ],
)
def test_a_malformed_run_file_is_refused_naming_the_line(data, message):
    error = error_of(data)
    assert error.code == "run-file-invalid" and error.message.startswith(message), error.message
    assert error_of(b"\n \n").code == "empty-file"


def test_a_builtin_run_exported_as_a_trec_file_scores_the_same_uploaded_again(world):
    handbook_entries(world.collection)
    evaluated = world.client.post(
        "/lmkit/v1/search/evaluate",
        {"collection_id": "handbook", "ks": [1, 3, 10], "configs": [{"label": "built in"}]},
        format="json",
    ).json()
    builtin = EvaluationRun.objects.get(pk=evaluated["runs"][0]["run_id"])
    exported = run_trec(builtin).encode()
    extra = b"ghost Q0 refunds 1 9.0 built_in\n"  # a query id that is no golden question
    upload = SimpleUploadedFile("exported.trec", exported + extra)
    response = world.client.post(URL, {"collection_id": "handbook", "ks": "1,3,10", "file": upload})
    assert response.status_code == 200, response.json()
    (run,) = response.json()["runs"]
    assert run["label"] == "built_in" and run["config"] == {
        "label": "built_in",
        "run_file": "exported.trec",
        "top_k": None,
    }
    assert run["metrics"].keys() == builtin.metrics.keys()
    for name, value in builtin.metrics.items():
        assert run["metrics"][name] == pytest.approx(value, abs=1e-9), name
    assert any(
        "1 query ids of run 'built_in' are no golden question" in w and "ghost" in w for w in run["warnings"]
    )
    stored = EvaluationRun.objects.get(pk=run["run_id"])
    mine = [r.ranked for r in builtin.results.order_by("position")]
    assert [r.ranked for r in stored.results.order_by("position")] == mine


def test_questions_missing_from_a_run_score_zero_and_ids_outside_the_collection_are_unjudged(world):
    handbook_entries(world.collection)
    lines = [
        {"query_id": "q1", "document_id": "refunds", "score": 2, "tag": "a"},
        {"query_id": "q1", "document_id": "elsewhere-7", "score": 3, "tag": "a"},
        {"query_id": "q2", "document_id": "shipping", "score": 1, "tag": "a"},
        {"query_id": "q3", "document_id": "warranty", "score": 1, "tag": "b"},
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    response = world.client.post(
        URL, {"collection_id": "handbook", "ks": "1,5", "file": SimpleUploadedFile("r.jsonl", data)}
    )
    assert response.status_code == 200, response.json()
    a, b = response.json()["runs"]
    # a: q1 ranks an unknown id first, then its document; q2 right; q3 absent (retrieved nothing)
    assert a["metrics"]["mrr"] == pytest.approx((1 / 2 + 1 + 0) / 3, abs=1e-12)
    assert a["unjudged"] == {"unjudged@1": 1, "unjudged@5": 1}
    assert any("1 golden questions have no line in run 'a'" in w and "q3" in w for w in a["warnings"])
    assert any("are not documents of the collection" in w for w in a["warnings"])
    assert b["metrics"]["recall@5"] == pytest.approx(1 / 3, abs=1e-12)


def test_a_malformed_upload_stores_nothing_and_another_tenants_collection_is_404(world):
    handbook_entries(world.collection)
    bad = SimpleUploadedFile("bad.trec", b"q1 Q0 refunds 1 1.0 t\nq2 Q0 shipping\n")
    error = refused(
        world.client.post(URL, {"collection_id": "handbook", "file": bad}), 400, "run-file-invalid"
    )
    assert error["details"] == {"line": 2}
    assert not EvaluationRun.objects.exists()
    good = SimpleUploadedFile("good.trec", b"q1 Q0 refunds 1 1.0 t\n")
    refused(
        world.other_client.post(URL, {"collection_id": "handbook", "file": good}), 400, "empty-golden-set"
    )
    refused(world.client.post(URL, {"collection_id": "nope", "file": good}), 404, "not-found")
    refused(world.client.post(URL, {"collection_id": "handbook"}), 400, "validation-error")


def test_the_command_line_scores_a_run_file_and_gates_on_it(world, tmp_path):
    handbook_entries(world.collection)
    path = tmp_path / "run.trec"
    path.write_text(
        "q1 Q0 refunds 1 3 good\nq2 Q0 shipping 1 3 good\nq3 Q0 warranty 1 3 good\nq1 Q0 shipping 1 1 bad\n"
    )

    def run(*args: str) -> tuple[int, str, str]:
        out, err = StringIO(), StringIO()
        try:
            call_command(
                "evaluate_run", str(path), "--cluster", "acme", "--tenant", "search", "--collection", "handbook",
                *args, stdout=out, stderr=err,
            )  # fmt: skip
        except SystemExit as exc:
            return int(exc.code or 0), out.getvalue(), err.getvalue()
        return 0, out.getvalue(), err.getvalue()

    code, out, _ = run("--metric", "mrr", "--fail-under", "0.5")
    assert (
        code == 1
        and "good" in out
        and "gate: mrr >= 0.5 for every configuration: FAIL (bad: 0.0000 < 0.5)" in out
    )
    code, out, err = run("--format", "json", "--ks", "1", "--metric", "mrr")
    assert code == 0, err
    assert [r["label"] for r in json.loads(out)["runs"]] == ["good", "bad"]
    path.write_text("q1 Q0 refunds 1\n")
    code, _, err = run()
    assert code == 2 and err.startswith("error [run-file-invalid] line 1: expected 6 columns")
