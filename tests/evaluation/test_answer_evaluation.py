"""POST /lmkit/v1/search/answer and /search/evaluate/answers, and `manage.py evaluate --answers`: the grounded
answer users get, and the evaluation that scores it, stored as runs of kind answers; offline (extractive +
heuristic) and against the scripted server (LLM answers, LLM judge, faults)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from django.core.management import call_command

from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationRun, QuestionResult, RunKind
from tests.answer_support import decline_everything, scripted_rag
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.support import answer_entries, answers_gate, answers_gate_verdict
from tests.worker_support import job_ended, job_until

ANSWERS = "/lmkit/v1/search/evaluate/answers"
ANSWER = "/lmkit/v1/search/answer"
METRICS = ("faithfulness", "context_recall", "answer_relevancy", "citation_precision", "context_relevancy")


@pytest.fixture
def golden(world):
    answer_entries(world.collection)
    return world


@pytest.fixture
def evaluate(golden, django_capture_on_commit_callbacks):
    def post(**body):
        with django_capture_on_commit_callbacks(execute=True):
            response = golden.client.post(ANSWERS, {"collection_id": "handbook", **body}, format="json")
        return response

    return post


def runs_of(response) -> list[EvaluationRun]:
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.status == JobStatus.COMPLETED, job.error
    return [EvaluationRun.objects.get(pk=r["run_id"]) for r in job.result["runs"]]


# --- offline --------------------------------------------------------------------------------------------------


def test_an_offline_evaluation_persists_one_answer_run_per_configuration(evaluate):
    response = evaluate(
        configs=[
            {"label": "ft", "search_type": "FullText"},
            {"search_type": "Hybrid", "groundedness": "High"},
        ],
        unanswerable_questions=["Can I pay with bitcoin at the store?"],
    )
    assert response.status_code == 202, response.json()
    first, second = runs_of(response)
    assert (first.label, second.label) == ("ft", "Hybrid Rrf groundedness:High")
    for run in (first, second):
        assert run.kind == RunKind.ANSWERS and run.mode == "heuristic"
        assert run.question_count == 5
        assert run.config["model"] == "extractive" and run.config["judge_model"] == "heuristic"
        assert {run.metric_methods[m] for m in METRICS if m in run.metrics} == {"heuristic"}
        assert 0 <= run.metrics["score"] <= 100
        refusal = run.summary["refusal"]
        assert (refusal["unanswerable"], refusal["answerable"]) == (2, 3)
        assert "refusal_recall" in run.metrics and "false_refusal_rate" in run.metrics
        assert sum(run.summary["diagnosis"].values()) == 5
    results = list(first.results.order_by("position"))
    refunds = results[0]
    assert "30 days" in refunds.answer and refunds.citations[0]["document_id"] == "refunds"
    assert refunds.context[0]["document_id"] == "refunds" and "full refund" in refunds.context[0]["text"]
    assert refunds.judgements["faithfulness"]["method"] == "heuristic"
    assert refunds.judgements["faithfulness"]["detail"]["statements"]
    assert refunds.metrics["faithfulness"] == refunds.judgements["faithfulness"]["value"]
    assert refunds.answerable is True and refunds.refused is False and refunds.diagnosis
    assert results[3].answerable is False and results[4].question == "Can I pay with bitcoin at the store?"


def test_heuristic_mode_is_deterministic(evaluate):
    def snapshot() -> list:
        (run,) = runs_of(evaluate(configs=[{"search_type": "FullText", "groundedness": "Medium"}]))
        rows = QuestionResult.objects.filter(run=run).order_by("position")
        return [
            run.metrics,
            run.summary["refusal"],
            [(r.answer, r.citations, r.judgements, r.diagnosis, r.refused, r.passed) for r in rows],
        ]

    assert snapshot() == snapshot()


def test_a_stricter_groundedness_declines_more(evaluate):
    off, high = runs_of(
        evaluate(
            configs=[{"label": "off", "groundedness": "Off"}, {"label": "high", "groundedness": "High"}],
            unanswerable_questions=["Which planets have rings made of ice?"],
        )
    )
    assert off.summary["refusal"]["refusal_recall"] <= high.summary["refusal"]["refusal_recall"]
    assert high.summary["refusal"]["refusal_recall"] == 1.0


@pytest.mark.parametrize(
    "body, field",
    [
        ({"configs": [{"groundedness": "Extreme"}]}, "configs[0].groundedness"),
        ({"configs": [{"search_typ": "FullText"}]}, "configs[0].search_typ"),
        ({"metric_thresholds": {"faithfulness": 2}}, "metric_thresholds.faithfulness"),
        ({"metric_thresholds": {"accuracy": 0.5}}, "metric_thresholds.accuracy"),
        ({"configs": [{"model": "llama3"}]}, "configs[0].model"),  # no endpoint configured
        ({"judge_model": "llama3"}, "judge_model"),
        ({"max_questions": 0}, "max_questions"),
        ({"unanswerable_questions": "not a list"}, "unanswerable_questions"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(evaluate, body, field):
    response = evaluate(**body)
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["message"]
    assert not Job.objects.exists()


def test_another_tenants_collection_is_not_found(golden):
    response = golden.other_client.post(ANSWERS, {"collection_id": "handbook"}, format="json")
    assert response.status_code == 202  # the rival has its own "handbook"
    hidden = golden.other_client.post(ANSWER, {"collection_id": "nope", "query": "refund"}, format="json")
    assert hidden.status_code == 404


def test_max_questions_bounds_the_golden_entries_and_says_so(evaluate):
    (run,) = runs_of(evaluate(max_questions=2))
    assert run.question_count == 2
    assert any("max_questions: 2 of the 4" in w for w in run.warnings)


# --- the answer endpoint ---------------------------------------------------------------------------------------


def test_the_answer_endpoint_answers_from_the_retrieved_pages_with_citations(golden):
    response = golden.client.post(
        ANSWER, {"collection_id": "handbook", "query": "How long do I have to get a refund?"}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["refused"] is False and body["method"] == "extractive"
    assert "30 days" in body["answer"] and "[1]" in body["answer"]
    assert body["citations"][0] == {
        "number": 1,
        "document_id": "refunds",
        "statement": body["citations"][0]["statement"],
    }
    assert body["passages"][0]["document_id"] == "refunds" and body["passages"][0]["number"] == 1


def test_the_answer_endpoint_declines_an_off_topic_question_when_grounded(golden):
    response = golden.client.post(
        ANSWER,
        {
            "collection_id": "handbook",
            "query": "Which volcano erupted in Iceland in 2010?",
            "groundedness": "High",
        },
        format="json",
    )
    assert response.json()["refused"] is True and response.json()["citations"] == []


def test_the_answer_endpoint_rejects_a_bad_groundedness(golden):
    response = golden.client.post(
        ANSWER, {"collection_id": "handbook", "query": "refund", "groundedness": "Very"}, format="json"
    )
    assert response.status_code == 400 and "groundedness" in response.json()["error"]["message"]


# --- with the scripted server -----------------------------------------------------------------------------------


@pytest.fixture
def llm(llm_server, settings):
    settings.EVALSITE_LLM_BASE_URL = llm_server.url
    settings.EVALSITE_LLM_MODEL = "scripted"
    settings.EVALSITE_LLM_MAX_ATTEMPTS = 1
    settings.EVALSITE_LLM_CONCURRENCY = 4
    return llm_server


def test_an_llm_judged_run_is_labelled_llm_judge(evaluate, llm):
    llm.reply(r".", scripted_rag)
    (run,) = runs_of(evaluate(configs=[{"label": "llm"}]))
    assert run.mode == "llm-judge"
    assert run.config["model"] == "scripted" and run.config["judge_model"] == "scripted"
    assert {run.metric_methods[m] for m in METRICS} == {"llm-judge"}
    assert run.metrics["faithfulness"] == 1.0  # the scripted judge supports everything
    with_passages = sum(1 for r in run.results.all() if r.context)  # nothing retrieved: declined, no call
    assert run.summary["usage"]["judge_calls"] > 0 and run.summary["usage"]["answer_calls"] == with_passages
    first = run.results.order_by("position").first()
    assert first.answer.endswith("[1].") and first.judgements["answer_relevancy"]["value"] == 0.75


def test_a_pipeline_that_declines_everything_has_refusal_recall_1_and_false_refusal_rate_1(evaluate, llm):
    llm.reply(r"^Question:", decline_everything)
    llm.reply(r".", scripted_rag)
    (run,) = runs_of(evaluate(unanswerable_questions=["Can I pay with bitcoin?"]))
    assert run.metrics["refusal_recall"] == 1.0
    assert run.metrics["false_refusal_rate"] == 1.0
    # The four golden questions and the extra unanswerable one: every one declined.
    assert [r.refused for r in run.results.order_by("position")] == [True] * 5


def test_a_failing_questions_reasons_are_a_field_of_their_own(golden, evaluate, llm):
    """Why a question failed is `reasons`, apart from its warnings, in the store and in the run's detail."""
    llm.reply(r"^Question:", decline_everything)
    llm.reply(r".", scripted_rag)
    (run,) = runs_of(evaluate())
    results = list(run.results.order_by("position"))
    failed = [r for r in results if r.passed is False]
    assert failed and all(r.reasons for r in failed)
    assert all(
        reason.startswith(("generation:", "retrieval:", "declined")) for r in failed for reason in r.reasons
    )
    assert not any(reason in r.warnings for r in results for reason in r.reasons)
    assert all(r.reasons == [] for r in results if r.passed)
    detail = golden.client.get(f"/lmkit/v1/search/evaluate/runs/{run.pk}").json()
    shown = {q["position"]: q["reasons"] for q in detail["results"]}
    assert shown == {r.position: r.reasons for r in results}


def test_judge_failures_fall_back_to_the_heuristic_and_say_so(evaluate, llm):
    llm.reply(r".", scripted_rag)
    llm.fail_next(*([500] * 1000))  # every call fails: extractive answers (model "extractive"), judge down
    (run,) = runs_of(evaluate(configs=[{"model": "extractive"}]))
    assert run.mode == "heuristic"  # a configured judge whose every call failed
    answered = [r for r in run.results.all() if r.answerable and not r.refused]
    assert answered
    for result in answered:
        faithfulness = result.judgements["faithfulness"]
        assert faithfulness["method"] == "heuristic" and faithfulness["fallback"].startswith(
            "judge call failed"
        )
    assert any("the judge call failed" in w for w in run.warnings)


def test_unreadable_judgements_are_excluded_with_a_warning_never_zero(evaluate, llm):
    llm.reply(r"Answer statements:", "The answer looks fine to me.")  # faithfulness judgements unreadable
    llm.reply(r".", scripted_rag)
    (run,) = runs_of(evaluate(configs=[{"model": "extractive"}]))
    # One faithfulness prompt per answered question: the three answerable ones (the gift-wrapping question
    # retrieves nothing and is declined without a call); every one got the unreadable reply.
    unreadable = sum(
        1
        for r in llm.requests
        if r.path == "/v1/chat/completions" and "Answer statements:" in r.body["messages"][-1]["content"]
    )
    assert unreadable == 3
    assert run.summary["excluded"]["faithfulness"] == {"unreadable": unreadable}
    # No question could be scored on faithfulness: absent from the run's metrics and None in its summary, not 0.
    assert "faithfulness" not in run.metrics and "faithfulness" not in run.metric_methods
    assert run.summary["metrics"]["faithfulness"] is None
    assert run.metrics["context_recall"] == 1.0  # the other metrics are scored as usual
    assert run.warnings == [
        "faithfulness: 3 question(s) excluded: the judge's answer could not be read",
        "faithfulness: no question could be scored on this metric",
    ]
    checked = 0
    for result in run.results.order_by("position"):
        judged = result.judgements.get("faithfulness")
        if result.answerable:
            assert judged["excluded"] == "unreadable" and judged["value"] is None, judged
            assert "faithfulness" not in result.metrics
            checked += 1
        else:
            assert judged is None  # declined without a call: nothing to judge
    assert checked == run.summary["excluded"]["faithfulness"]["unreadable"]


def test_a_failed_answer_is_an_error_not_a_score(evaluate, llm):
    llm.reply(r".", scripted_rag)
    llm.fail_next(*([503] * 1000))
    (run,) = runs_of(evaluate(configs=[{"label": "down"}], judge_model="heuristic"))
    # The gift-wrapping question retrieves nothing and is declined without a call; the three others fail.
    assert run.summary["diagnosis"] == {"error": 3, "pass": 1}
    assert run.metrics["score"] == 100.0  # the one question that could be scored, not zeros for the rest
    assert "3 question(s) got no answer (the model call failed) and are left out of the means" in run.warnings
    assert "faithfulness" not in run.metrics  # no answered question: absent, not 0


# --- the CLI gate -----------------------------------------------------------------------------------------------


def test_the_answer_gate_passes_and_fails_on_the_score(golden):
    code, text = answers_gate("--no-llm", "--fail-under", "0")
    assert code == 0 and "gate: score >= 0 for every configuration: PASS" in text
    code, text = answers_gate("--no-llm", "--fail-under", "100")
    assert code == 1 and "FAIL" in text


def test_the_answer_gate_in_junit_fails_its_own_case_alone_and_says_its_verdict_on_stderr(golden):
    code, text, err = answers_gate_verdict("--no-llm", "--fail-under", "100", "--format", "junit")
    root = ET.fromstring(text)
    (suite,) = root.findall("testsuite")
    run = EvaluationRun.objects.get(pk=suite.find("properties/property[@name='run_id']").get("value"))
    score = run.metrics["score"]
    assert code == 1 and score < 100 and root.get("failures") == "1"
    failure = suite.find("testcase[@name='gate: score >= 100']/failure")
    assert failure.get("message") == f"score {score:.1f} < 100"
    assert err == f"gate failed: score >= 100: {run.label} {score:.1f} < 100\n"
    not_passed = sum(1 for r in run.results.all() if not r.passed)
    assert root.get("skipped") == str(not_passed)  # a question that fell short is skipped, never failed
    code, text, err = answers_gate_verdict("--no-llm", "--fail-under", "0", "--format", "junit")
    root = ET.fromstring(text)
    assert code == 0 and (root.get("failures"), root.get("errors")) == ("0", "0")
    assert root.find("testsuite/testcase").get("name") == "gate: score >= 0"
    assert err.startswith("gate passed: score >= 0: ") and err.count("\n") == 1
    code, text, err = answers_gate_verdict("--no-llm", "--format", "junit")  # no bar: no gate, no gate case
    root = ET.fromstring(text)
    assert code == 0 and not any(c.get("name").startswith("gate:") for c in root.iter("testcase"))
    assert err == "gate: none (no --fail-under); score reported only\n"


def test_the_answer_gate_writes_json(golden, tmp_path):
    questions = tmp_path / "unanswerable.txt"
    questions.write_text("Can I pay with bitcoin?\n\nDo you ship to Mars?\n")
    code, text = answers_gate(
        "--no-llm", "--format", "json", "--unanswerable", str(questions), "--metric-threshold", "0.5"
    )
    document = json.loads(text)
    assert code == 0 and document["passed"] is True
    (run,) = document["runs"]
    assert run["refusal"]["unanswerable"] == 3 and run["mode"] == "heuristic"
    assert run["config"]["thresholds"]["faithfulness"] == 0.5


def test_a_bad_bar_is_exit_2(golden, capsys):
    from evalsite.management.base import EvalsiteCommand  # noqa: F401  (one-line errors)

    with pytest.raises(SystemExit) as exit_info:
        call_command(
            "evaluate", "--answers", "--cluster", "acme", "--tenant", "search", "--collection", "handbook",
            "--fail-under", "150",
        )  # fmt: skip
    assert exit_info.value.code == 2


@pytest.fixture
def llm_env(llm_server, monkeypatch):
    """The scripted model for this process and, through the environment, for a worker started after it."""
    from django.conf import settings

    llm_server.reply(r".", scripted_rag)
    for name, value in {"EVALSITE_LLM_BASE_URL": llm_server.url, "EVALSITE_LLM_MODEL": "scripted"}.items():
        monkeypatch.setenv(name, value)
        monkeypatch.setattr(settings, name, value)
    return llm_server


def test_an_answer_evaluation_runs_in_a_real_worker(golden, llm_env, manage_env, transactional_db, qcluster):
    """The job through a real qcluster process, with the scripted model answering and judging."""

    response = golden.client.post(
        ANSWERS,
        {
            "collection_id": "handbook",
            "configs": [{"label": "worker"}],
            "unanswerable_questions": ["Bitcoin?"],
        },
        format="json",
    )
    assert response.status_code == 202, response.json()
    job_id = response.json()["job_id"]
    body = job_until(golden.client, job_id, job_ended, worker=qcluster)
    assert body["status"] == "Completed", body
    (summary,) = body["result"]["runs"]
    assert summary["mode"] == "llm-judge" and summary["question_count"] == 5
    run = EvaluationRun.objects.get(pk=summary["run_id"])
    assert run.results.count() == 5 and run.job_id is not None
    assert llm_env.count("/v1/chat/completions") >= 4


def test_injected_faults_never_give_an_unlabelled_or_silent_score(evaluate, llm, settings):
    """Timeouts, 500s, bodies that are not JSON or cut short, and unreadable judgements, mixed: every stored
    value carries its method, every missing one its reason, and the run's counts and warnings add up."""
    settings.EVALSITE_LLM_TIMEOUT = 1
    llm.hang_seconds = 1.5
    llm.reply(r"Citations to check:", "Looks right.")  # citation judgements unreadable
    llm.reply(r".", scripted_rag)
    llm.fail_next(*(["hang", 500, "malformed", "truncated", "ok", 503] * 6))
    runs = runs_of(
        evaluate(
            configs=[{"label": "faulty", "model": "extractive"}, {"label": "faulty llm"}],
            unanswerable_questions=["Can I pay with bitcoin?"],
        )
    )
    assert len(runs) == 2
    total_fallbacks = 0
    for run in runs:
        total_fallbacks += check_run(run)
    assert total_fallbacks > 0  # the faults did reach the judge


def check_run(run: EvaluationRun) -> int:
    unreadable = dict.fromkeys(METRICS, 0)
    fallbacks = dict.fromkeys(METRICS, 0)
    results = list(run.results.all())
    assert len(results) == run.question_count == 5  # the four golden questions and the unanswerable one
    for result in results:
        assert result.diagnosis in ("pass", "retrieval", "generation", "error")
        for name, judged in result.judgements.items():
            assert judged["method"] in ("heuristic", "llm-judge")
            if judged["value"] is None:
                assert judged["excluded"] in ("not-applicable", "unreadable") and name not in result.metrics
                unreadable[name] += judged["excluded"] == "unreadable"
            else:
                assert judged["excluded"] is None and 0 <= judged["value"] <= 1
                assert result.metrics[name] == judged["value"]
            if judged["fallback"]:
                assert judged["method"] == "heuristic"
                fallbacks[name] += 1
    for name in METRICS:
        assert run.summary["excluded"][name].get("unreadable", 0) == unreadable[name]
        assert run.summary["fallbacks"][name] == fallbacks[name]
        if unreadable[name]:
            assert f"{name}: {unreadable[name]} question(s) excluded" in " ".join(run.warnings)
        if fallbacks[name]:
            assert f"{name}: the judge call failed for {fallbacks[name]} question(s)" in " ".join(
                run.warnings
            )
    assert all(value == value for value in run.metrics.values())  # no NaN anywhere
    errors = run.summary["diagnosis"].get("error", 0)
    assert errors == run.results.filter(diagnosis="error").count()
    if errors:
        assert any("got no answer" in w for w in run.warnings)
    return sum(fallbacks.values())


def test_model_text_no_database_can_store_is_cleaned_before_it_is_stored(evaluate, llm):
    dirty = json.dumps({"answer": "Refunds\x00 take 30 days \ud800 [1].", "refused": False})
    llm.reply(r"^Question:[^\n]*\n\nPassages:", lambda m: dirty)  # the answer prompt, not a judge's
    llm.reply(r"Answer statements:", "Not JSON \x00 \udfff at all")  # unreadable: kept in the detail
    llm.reply(r".", scripted_rag)
    (run,) = runs_of(evaluate(configs=[{"label": "dirty"}]))
    first = run.results.order_by("position").first()
    assert first.answer == "Refunds take 30 days \ufffd [1]."
    assert first.judgements["faithfulness"]["excluded"] == "unreadable"
    stored = json.dumps(first.judgements, ensure_ascii=False)
    assert "\x00" not in stored and "\udfff" not in stored and "Not JSON  \ufffd at all" in stored


def test_the_runs_api_returns_an_answer_run_whole(evaluate, golden):
    (run,) = runs_of(evaluate(configs=[{"label": "api"}]))
    body = golden.client.get(f"/lmkit/v1/search/evaluate/runs/{run.pk}").json()
    assert body["kind"] == "answers" and body["mode"] == "heuristic"
    assert body["summary"]["refusal"]["answerable"] == 3
    first = body["results"][0]
    assert first["answer"] and first["citations"] and first["passages"][0]["number"] == 1
    assert first["judgements"]["faithfulness"]["method"] == "heuristic"
    assert first["answerable"] is True and first["refused"] is False and first["passed"] in (True, False)
    listed = golden.client.get("/lmkit/v1/search/evaluate/runs?kind=answers").json()
    assert [r["run_id"] for r in listed["results"]] == [str(run.pk)]


def test_the_answer_endpoint_asks_the_model_and_says_when_it_cannot(golden, llm):
    llm.reply(r".", scripted_rag)
    body = {"collection_id": "handbook", "query": "How long do I have to get a refund?", "model": "m1"}
    answered = golden.client.post(ANSWER, body, format="json")
    assert answered.status_code == 200, answered.json()
    data = answered.json()
    assert data["method"] == "llm" and data["model"] == "m1" and data["refused"] is False
    assert data["answer"].endswith("[1].") and data["citations"][0]["number"] == 1
    assert {r.body["model"] for r in llm.requests} == {"m1"}

    llm.fail_next(500)
    failed = golden.client.post(ANSWER, {**body, "query": "Where do refunds go?"}, format="json")
    assert failed.status_code == 503
    assert failed.json()["error"]["code"] == "llm-unavailable"
    assert llm.url not in json.dumps(failed.json())  # the endpoint's address stays in the log
