"""Evaluations restricted to a subset of the golden set (tags, origin, reviewed_only, skip_unreviewed_generated)
through POST /search/evaluate, /search/evaluate/answers and `manage.py evaluate`, and the per-slice breakdown
every run stores and the run detail answers."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationRun, QuestionResult
from goldenset.models import GoldenEntry, Origin
from goldenset.services import EntryInput, golden_entries_add
from tests.schema_support import conforms, errors, served_schema
from tests.support import db_state, refused

URL = "/lmkit/v1/search/evaluate"
ANSWERS = "/lmkit/v1/search/evaluate/answers"
EVERY = {"tags": [], "origin": [], "reviewed_only": False, "skip_unreviewed_generated": False}


def entry(question: str, document: str, key: str, tags: list[str], **fields) -> EntryInput:
    return EntryInput(
        question=question, expected_document_ids=[document] if document else [], key=key, tags=tags, **fields
    )


@pytest.fixture
def golden(world):
    """FullText finds a, b at rank 1 (every metric 1.0) and never finds c's document (every metric 0.0).

    a: billing, faq; Manual, unreviewed     b: faq; Generated, reviewed     c: billing; Generated, unreviewed
    d: faq; Imported, reviewed, no expected document (asked by answer evaluations only)
    """

    def add(entries, origin, reviewed):
        golden_entries_add(
            collection=world.collection, entries=entries, actor="test", origin=origin, reviewed=reviewed
        )

    add([entry("How long is the refund window?", "refunds", "a", ["billing", "faq"])], Origin.MANUAL, False)
    add([entry("When does express shipping arrive?", "shipping", "b", ["faq"])], Origin.GENERATED, True)
    add(
        [entry("When does the next day express shipping arrive?", "warranty", "c", ["billing"])],
        Origin.GENERATED,
        False,
    )
    add([entry("Who is the chief executive?", "", "d", ["faq"], answerable=False)], Origin.IMPORTED, True)
    return world


def evaluate(world, **body):
    response = world.client.post(URL, {"collection_id": "handbook", "ks": [1], **body}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def asked(run_summary: dict) -> list[str]:
    return list(
        QuestionResult.objects.filter(run_id=run_summary["run_id"])
        .order_by("position")
        .values_list("entry_key", flat=True)
    )


def figures(value: float, n: int) -> dict:
    # At depth 1 with only the expected documents judged, the top document is judged exactly when it is
    # relevant, so every measure for incomplete judgments equals the share of questions found at rank 1 too.
    measures = ("recall@1", "ndcg@1", "mrr", "judged@1", "ndcg_cond@1", "bpref", "map_cond")
    return {"n": n, **dict.fromkeys(measures, value)}


# --- retrieval: the subset --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "keys", "label"),
    [
        ({"tags": ["billing"]}, ["a", "c"], "FullText tags:billing"),
        ({"origin": ["generated"]}, ["b", "c"], "FullText origin:Generated"),
        ({"reviewed_only": True}, ["b"], "FullText reviewed_only"),
        ({"skip_unreviewed_generated": "true"}, ["a", "b"], "FullText skip_unreviewed_generated"),
        (
            {"tags": ["faq", "billing"], "origin": ["Generated"]},
            ["b", "c"],
            "FullText tags:faq,billing origin:Generated",
        ),
    ],
)
def test_a_subset_asks_only_its_entries_and_the_run_records_it(golden, body, keys, label):
    run = evaluate(golden, **body)["runs"][0]
    assert asked(run) == keys and run["question_count"] == len(keys)
    assert run["label"] == label
    recorded = {**EVERY, **body}
    recorded["origin"] = [o.capitalize() for o in recorded["origin"]]
    recorded["skip_unreviewed_generated"] = bool(recorded["skip_unreviewed_generated"])
    assert run["config"]["subset"] == recorded
    assert EvaluationRun.objects.get(pk=run["run_id"]).config["subset"] == recorded


def test_without_a_subset_every_entry_is_asked_and_the_config_has_no_subset(golden):
    run = evaluate(golden)["runs"][0]
    assert asked(run) == ["a", "b", "c"] and "subset" not in run["config"] and run["label"] == "FullText"


def test_a_configurations_own_subset_field_replaces_the_bodys(golden):
    runs = evaluate(
        golden,
        tags=["faq"],
        reviewed_only=False,
        configs=[
            {"label": "faq"},
            {"label": "billing", "tags": ["billing"]},
            {"label": "reviewed", "reviewed_only": True},
        ],
    )["runs"]
    assert [asked(r) for r in runs] == [["a", "b"], ["a", "c"], ["b"]]
    assert [r["config"]["subset"]["tags"] for r in runs] == [["faq"], ["billing"], ["faq"]]


def test_the_golden_fingerprint_is_that_of_the_questions_asked(golden):
    everything = evaluate(golden)["runs"][0]
    billing = evaluate(golden, tags=["billing"])["runs"][0]
    same_questions = evaluate(golden, tags=["billing", "no-entry-has-this"])["runs"][0]
    fingerprints = {
        name: EvaluationRun.objects.get(pk=r["run_id"]).golden_fingerprint
        for name, r in [("everything", everything), ("billing", billing), ("same", same_questions)]
    }
    assert fingerprints["everything"] != fingerprints["billing"]
    assert fingerprints["billing"] == fingerprints["same"]  # the same questions compare question by question


def test_the_subset_travels_through_a_job(golden, django_capture_on_commit_callbacks):
    with override_settings(EVALSITE_EVALUATE_SYNC_LIMIT=1), django_capture_on_commit_callbacks(execute=True):
        response = golden.client.post(
            URL, {"collection_id": "handbook", "ks": [1], "tags": ["billing"]}, format="json"
        )
    assert response.status_code == 202, response.json()
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.status == JobStatus.COMPLETED, job.error
    run = EvaluationRun.objects.get(pk=job.result["runs"][0]["run_id"])
    assert run.config["subset"]["tags"] == ["billing"] and run.question_count == 2


# --- retrieval: bad subsets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"tags": "billing"}, "validation-error", "tags"),
        ({"origin": ["Robot"]}, "validation-error", "origin[0]"),
        ({"origin": "Manual"}, "validation-error", "origin"),
        ({"reviewed_only": "sometimes"}, "validation-error", "reviewed_only"),
        ({"configs": [{}, {"tags": [1]}]}, "validation-error", "configs[1].tags[0]"),
        ({"tags": ["no-entry-has-this"]}, "empty-golden-set", "tags"),
        (
            {"origin": ["Imported"]},
            "empty-golden-set",
            "origin",
        ),  # d is imported, but has no expected document
        ({"tags": ["billing"], "reviewed_only": True}, "empty-golden-set", "tags"),
        ({"configs": [{}, {"reviewed_only": True, "tags": ["billing"]}]}, "empty-golden-set", "tags"),
    ],
)
def test_a_bad_or_empty_subset_is_a_400_naming_the_field_and_stores_nothing(golden, body, code, field):
    before = db_state()
    error = refused(golden.client.post(URL, {"collection_id": "handbook", **body}, format="json"), 400, code)
    assert error["details"]["field"] == field and error["message"].startswith(f"{field}: ")
    assert db_state() == before


def test_an_empty_subset_is_refused_before_a_job_is_made(golden):
    with override_settings(EVALSITE_EVALUATE_SYNC_LIMIT=1):
        error = refused(
            golden.client.post(URL, {"collection_id": "handbook", "tags": ["nothing"]}, format="json"),
            400,
            "empty-golden-set",
        )
    assert error["details"]["subset"] == {**EVERY, "tags": ["nothing"]}
    assert not Job.objects.exists()


def test_another_tenants_entries_are_never_asked(golden):
    """The rival's handbook has no golden entries: its subset finds none of ours, and our run is a 404 to it."""
    error = refused(
        golden.other_client.post(URL, {"collection_id": "handbook", "tags": ["billing"]}, format="json"),
        400,
        "empty-golden-set",
    )
    assert "subset" not in error["details"]  # its golden set is empty, whatever the subset
    run = evaluate(golden, tags=["billing"])["runs"][0]
    refused(golden.other_client.get(f"{URL}/runs/{run['run_id']}"), 404, "not-found")


# --- the slices ---------------------------------------------------------------------------------------------------


def test_every_run_stores_and_answers_its_metrics_per_tag_and_origin(golden):
    run = evaluate(golden)["runs"][0]
    expected = {
        "tag": {"billing": figures(0.5, 2), "faq": figures(1.0, 2)},
        "origin": {"Generated": figures(0.5, 2), "Manual": figures(1.0, 1)},
    }
    assert run["slices"] == expected
    detail = golden.client.get(f"{URL}/runs/{run['run_id']}").json()
    assert detail["slices"] == expected
    assert [(q["entry_key"], q["tags"], q["origin"]) for q in detail["results"]] == [
        ("a", ["billing", "faq"], "Manual"),
        ("b", ["faq"], "Generated"),
        ("c", ["billing"], "Generated"),
    ]
    assert EvaluationRun.objects.get(pk=run["run_id"]).slices == expected
    listed = golden.client.get(f"{URL}/runs").json()["results"][0]
    assert "slices" not in listed  # lists stay light: the detail has them


def test_a_restricted_runs_slices_cover_its_questions_only(golden):
    run = evaluate(golden, origin=["Generated"])["runs"][0]
    assert run["slices"] == {
        "tag": {"billing": figures(0.0, 1), "faq": figures(1.0, 1)},
        "origin": {"Generated": figures(0.5, 2)},
    }


def test_slices_are_a_snapshot_later_edits_of_an_entry_change_nothing(golden):
    run = evaluate(golden)["runs"][0]
    GoldenEntry.objects.filter(key="a").delete()
    detail = golden.client.get(f"{URL}/runs/{run['run_id']}").json()
    assert detail["slices"]["origin"]["Manual"] == figures(1.0, 1)
    assert detail["results"][0]["tags"] == ["billing", "faq"]


# --- answers ------------------------------------------------------------------------------------------------------


def test_an_answer_evaluation_takes_a_subset_and_slices_answerable_too(
    golden, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = golden.client.post(
            ANSWERS,
            {
                "collection_id": "handbook",
                "tags": ["faq"],
                "unanswerable_questions": ["Can I pay in bitcoin?"],
            },
            format="json",
        )
    assert response.status_code == 202, response.json()
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.status == JobStatus.COMPLETED, job.error
    run = EvaluationRun.objects.get(pk=job.result["runs"][0]["run_id"])
    assert run.config["subset"] == {**EVERY, "tags": ["faq"]} and run.label == "FullText tags:faq"
    results = list(run.results.order_by("position"))
    # a, b and d carry faq (c does not); the request's own unanswerable question is always asked
    assert [(r.entry_key, r.origin, r.answerable) for r in results] == [
        ("a", "Manual", True),
        ("b", "Generated", True),
        ("d", "Imported", False),
        ("", "", False),
    ]
    slices = run.slices
    assert {kind: {name: f["n"] for name, f in by.items()} for kind, by in slices.items()} == {
        "tag": {"billing": 1, "faq": 3},
        "origin": {"Generated": 1, "Imported": 1, "Manual": 1},
        "answerable": {"false": 2, "true": 2},
    }
    answered = [r for r in results if r.answerable]
    for name in ("faithfulness", "answer_relevancy"):  # (no reference answers here: no context_recall)
        values = [r.metrics[name] for r in answered if name in r.metrics]
        assert slices["answerable"]["true"][name] == pytest.approx(sum(values) / len(values))
    assert slices["origin"]["Manual"]["answer_relevancy"] == results[0].metrics["answer_relevancy"]
    assert "context_recall" not in slices["tag"]["faq"]
    assert job.result["runs"][0]["slices"] == slices


def test_an_answer_evaluation_with_an_empty_subset_is_refused_before_a_job(golden):
    error = refused(
        golden.client.post(
            ANSWERS,
            {"collection_id": "handbook", "configs": [{"origin": ["Imported"], "tags": ["billing"]}]},
            format="json",
        ),
        400,
        "empty-golden-set",
    )
    assert error["details"]["field"] == "tags"
    assert not Job.objects.exists()


# --- the CLI ------------------------------------------------------------------------------------------------------


def cli(*args: str) -> str:
    out = StringIO()
    call_command(
        "evaluate",
        "--cluster",
        "acme",
        "--tenant",
        "search",
        "--collection",
        "handbook",
        "--ks",
        "1",
        "--metric",
        "mrr",
        *args,
        stdout=out,
    )
    return out.getvalue()


def test_the_cli_restricts_by_tag_and_prints_the_breakdown(golden):
    out = cli("--tag", "billing", "--tag", "nothing-else")
    run = EvaluationRun.objects.get()
    assert run.config["subset"] == {**EVERY, "tags": ["billing", "nothing-else"]} and run.question_count == 2
    lines = out.splitlines()
    start = lines.index("per slice:")
    assert lines[start + 1].split() == ["configuration", "slice", "n", "recall@1", "ndcg@1", "mrr"] + [
        "judged@1", "ndcg_cond@1", "bpref", "map_cond",
    ]  # fmt: skip
    assert [line.split()[-9:-4] for line in lines[start + 2 : start + 6]] == [
        ["tag:billing", "2", "0.5000", "0.5000", "0.5000"],
        ["tag:faq", "1", "1.0000", "1.0000", "1.0000"],  # a carries faq too
        ["origin:Generated", "1", "0.0000", "0.0000", "0.0000"],
        ["origin:Manual", "1", "1.0000", "1.0000", "1.0000"],
    ]


def test_the_cli_markdown_has_the_breakdown_and_other_subset_switches(golden):
    out = cli("--format", "markdown", "--origin", "Generated", "--skip-unreviewed-generated")
    run = EvaluationRun.objects.get()
    assert run.config["subset"] == {**EVERY, "origin": ["Generated"], "skip_unreviewed_generated": True}
    assert (
        "| configuration | slice | n | recall@1 | ndcg@1 | mrr | judged@1 | ndcg_cond@1 | bpref | map_cond |"
        in out
    )
    assert (
        "| FullText origin:Generated skip_unreviewed_generated | tag:faq | 1 | 1.0000 | 1.0000 | 1.0000 | 1.0000 |"
        in out
    )


def test_the_cli_answers_take_a_tag_too(golden):
    out = cli("--answers", "--no-llm", "--tag", "billing")
    run = EvaluationRun.objects.get()
    assert run.config["subset"]["tags"] == ["billing"] and run.question_count == 2
    assert "per slice:" in out and "answerable:true" in out


# --- the documented shapes ----------------------------------------------------------------------------------------


def test_restricted_runs_and_their_slices_hold_to_the_served_schema(
    golden, django_capture_on_commit_callbacks
):
    schema = served_schema()
    body = {
        "collection_id": "handbook",
        "ks": [1],
        "tags": ["billing"],
        "configs": [{}, {"origin": ["Manual"]}],
    }
    done = conforms(schema, golden.client.post(URL, body, format="json"), URL, "post", 200)
    assert all(r["config"]["subset"] and r["slices"]["tag"] for r in done["runs"])
    detail_path = f"{URL}/runs/{{run_id}}"
    for run in done["runs"]:
        detail = conforms(schema, golden.client.get(f"{URL}/runs/{run['run_id']}"), detail_path, "get", 200)
        assert detail["slices"] == run["slices"]
    with django_capture_on_commit_callbacks(execute=True):
        accepted = golden.client.post(
            ANSWERS, {"collection_id": "handbook", "reviewed_only": True}, format="json"
        )
    job = Job.objects.get(pk=accepted.json()["job_id"])
    assert job.status == JobStatus.COMPLETED, job.error
    assert errors(schema, "AnswerEvaluationOut", job.result) == []
    answer_run = job.result["runs"][0]
    assert answer_run["config"]["subset"]["reviewed_only"] is True and answer_run["slices"]["answerable"]
    detail = conforms(
        schema, golden.client.get(f"{URL}/runs/{answer_run['run_id']}"), detail_path, "get", 200
    )
    assert detail["slices"] == answer_run["slices"]
