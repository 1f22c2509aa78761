"""Judge samples through an answer evaluation: the request's judge_samples and judge_temperature read strictly
(400s naming the field) over REST and the CLI, the judge's settings recorded in the run config, and the judge's
confidence per question and its mean per metric in the run's summary, against the scripted server."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from evalsite.jobs.models import Job, JobStatus
from evaluation.answers import judge_llm
from evaluation.answers.judge import HEURISTIC_VERSION
from evaluation.models import EvaluationRun
from tests.answer_support import scripted_rag
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.support import answer_entries, answers_gate, member_of

ANSWERS = "/lmkit/v1/search/evaluate/answers"
METRICS = ("faithfulness", "context_recall", "answer_relevancy", "citation_precision", "context_relevancy")


@pytest.fixture
def golden(world):
    answer_entries(world.collection, "refund", "shipping")
    return world


@pytest.fixture
def evaluate(golden, django_capture_on_commit_callbacks):
    def post(**body):
        with django_capture_on_commit_callbacks(execute=True):
            return golden.client.post(ANSWERS, {"collection_id": "handbook", **body}, format="json")

    return post


@pytest.fixture
def llm(llm_server, settings):
    settings.EVALSITE_LLM_BASE_URL = llm_server.url
    settings.EVALSITE_LLM_MODEL = "scripted"
    settings.EVALSITE_LLM_MAX_ATTEMPTS = 1
    settings.EVALSITE_LLM_CONCURRENCY = 4
    return llm_server


def runs_of(response) -> list[EvaluationRun]:
    assert response.status_code == 202, response.json()
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.status == JobStatus.COMPLETED, job.error
    return [EvaluationRun.objects.get(pk=r["run_id"]) for r in job.result["runs"]]


def faithfulness_by_seed(llm_server) -> None:
    """Seeds 0 and 1 support every answer statement, seed 2 none: each statement's majority is supported, with
    2 of 3 agreeing. Every other judgement (and the answers) comes from scripted_rag, which agrees with all."""
    supported = json.dumps({"verdicts": [{"statement": 1, "supported": True, "reason": "yes"}]})
    unsupported = json.dumps({"verdicts": [{"statement": 1, "supported": False, "reason": "no"}]})
    llm_server.reply_by_seed(r"Answer statements:", {0: supported, 1: supported, 2: unsupported})
    llm_server.reply(r".", scripted_rag)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"judge_samples": 2}, "judge_samples"),
        ({"judge_samples": 0}, "judge_samples"),
        ({"judge_samples": 11}, "judge_samples"),
        ({"judge_samples": "many"}, "judge_samples"),
        ({"judge_samples": 3, "judge_temperature": 2.5}, "judge_temperature"),
        ({"judge_samples": 3, "judge_temperature": "warm"}, "judge_temperature"),
        ({"judge_temperature": 0.7}, "judge_temperature"),  # one judgement is made at temperature 0
    ],
)
def test_bad_judge_sampling_is_a_400_naming_the_field(evaluate, body, field):
    response = evaluate(**body)
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["message"]
    assert not Job.objects.exists()


def test_a_sampled_judge_records_its_settings_and_confidence(evaluate, llm):
    faithfulness_by_seed(llm)
    (run,) = runs_of(evaluate(configs=[{"label": "k3"}], judge_samples=3, judge_temperature=0.4))
    assert run.mode == "llm-judge"
    assert (run.config["judge_model"], run.config["judge_samples"], run.config["judge_temperature"]) == (
        "scripted",
        3,
        0.4,
    )
    judged = [r for r in run.results.order_by("position") if "faithfulness" in r.judgements]
    assert judged
    for result in judged:
        faithful = result.judgements["faithfulness"]
        assert faithful["value"] == 1.0 and faithful["method"] == "llm-judge"
        assert faithful["detail"]["confidence"] == pytest.approx(0.6667)
        assert {row["confidence"] for row in faithful["detail"]["statements"]} == {0.6667}
        assert faithful["detail"]["samples"] == {"asked": 3, "readable": 3, "unreadable": 0, "failed": 0}
    confidence = run.summary["judge_confidence"]
    assert confidence["faithfulness"] == pytest.approx(0.6667)
    assert {confidence[m] for m in METRICS if m != "faithfulness"} == {1.0}  # scripted_rag never disagrees
    judge_requests = [
        r.body for r in llm.requests if "Answer statements:" in r.body["messages"][-1]["content"]
    ]
    assert len(judge_requests) == 3 * len(judged)
    assert {b["temperature"] for b in judge_requests} == {0.4} and {b["seed"] for b in judge_requests} == {
        0,
        1,
        2,
    }
    # Every judge call is counted: the judge's requests are all requests but the answers'.
    answer_calls = run.summary["usage"]["answer_calls"]
    assert run.summary["usage"]["judge_calls"] == llm.count("/v1/chat/completions") - answer_calls
    assert run.summary["usage"]["judge_calls"] % 3 == 0


def test_one_judgement_is_the_default_at_temperature_0(evaluate, llm):
    faithfulness_by_seed(llm)  # no seed is sent with one judgement: scripted_rag answers
    (run,) = runs_of(evaluate(configs=[{"label": "k1"}]))
    assert (run.config["judge_samples"], run.config["judge_temperature"]) == (1, 0.0)
    assert run.summary["judge_confidence"] == {}
    assert all(
        "confidence" not in r.judgements.get("faithfulness", {}).get("detail", {}) for r in run.results.all()
    )
    assert {r.body["temperature"] for r in llm.requests if r.path == "/v1/chat/completions"} == {0.0}


def test_samples_asked_of_the_heuristic_are_recorded_as_one_with_a_warning(evaluate):
    (run,) = runs_of(evaluate(configs=[{"label": "offline"}], judge_samples=3))
    assert (run.config["judge_model"], run.config["judge_samples"], run.config["judge_temperature"]) == (
        "heuristic",
        1,
        None,
    )
    assert any(
        w.startswith("judge_samples 3 not used: the heuristic judge is deterministic") for w in run.warnings
    )


def test_the_job_result_and_the_runs_endpoint_show_the_confidence(evaluate, llm, golden):
    faithfulness_by_seed(llm)
    response = evaluate(configs=[{"label": "k3"}], judge_samples=3)
    job = Job.objects.get(pk=response.json()["job_id"])
    (summary,) = job.result["runs"]
    assert summary["judge_confidence"]["faithfulness"] == pytest.approx(0.6667)
    assert summary["config"]["judge_samples"] == 3 and summary["config"]["judge_temperature"] == 0.7
    listed = golden.client.get("/lmkit/v1/search/evaluate/runs", {"collection_id": "handbook"}).json()
    (run,) = listed["results"]
    assert run["summary"]["judge_confidence"]["faithfulness"] == pytest.approx(0.6667)


# --- the CLI ------------------------------------------------------------------------------------------------------


def test_the_cli_takes_judge_samples_and_records_them(golden, llm):
    faithfulness_by_seed(llm)
    code, text = answers_gate("--judge-samples", "3", "--judge-temperature", "0.5", "--format", "json")
    assert code == 0, text
    (run,) = json.loads(text)["runs"]
    assert run["config"]["judge_samples"] == 3 and run["config"]["judge_temperature"] == 0.5
    assert run["judge_confidence"]["faithfulness"] == pytest.approx(0.6667)


@pytest.mark.parametrize(
    ("args", "field"),
    [(("--judge-samples", "4"), "judge_samples"), (("--judge-temperature", "0.5"), "judge_temperature")],
)
def test_bad_cli_judge_sampling_is_exit_2_naming_the_field(golden, capsys, args, field):
    from evalsite.management.base import EvalsiteCommand  # noqa: F401  (one-line errors)

    with pytest.raises(SystemExit) as exit_info:
        call_command(
            "evaluate", "--answers", "--cluster", "acme", "--tenant", "search", "--collection", "handbook",
            "--no-llm", *args,
        )  # fmt: skip
    assert exit_info.value.code == 2
    assert f"{field}: " in capsys.readouterr().err
    assert not EvaluationRun.objects.exists()


def test_runs_record_their_judge_and_compare_warns_when_judges_differ(evaluate, llm, golden):
    llm.reply(r".", scripted_rag)
    (chat,) = runs_of(evaluate(configs=[{"label": "chat judge"}]))
    (offline,) = runs_of(evaluate(configs=[{"label": "heuristic judge"}], judge_model="heuristic"))
    assert (chat.config["judge_version"], chat.config["judge_prompts"]) == (
        judge_llm.PROMPT_VERSION,
        judge_llm.PROMPT_SHA256,
    )
    assert (offline.config["judge_version"], offline.config["judge_prompts"]) == (HEURISTIC_VERSION, None)
    # Every prompt the chat judge was sent is one the run's config names by its hash.
    sent = {r.body["messages"][0]["content"] for r in llm.requests if r.path == "/v1/chat/completions"}
    judged = {hashlib.sha256(p.encode()).hexdigest() for p in sent if p in judge_llm.PROMPTS.values()}
    assert judged and judged <= set(chat.config["judge_prompts"].values())

    browser = Client()
    browser.force_login(member_of(golden.tenant, "reader"))
    url = reverse("dashboard:compare") + f"?run={chat.pk}&run={offline.pk}"
    page = browser.get(url)
    assert page.status_code == 200
    warning = page.context["judge_mismatch"]
    assert warning.differs == ("model", "version")
    assert warning.judges == {
        "chat judge": f"scripted (version {judge_llm.PROMPT_VERSION})",
        "heuristic judge": f"heuristic (version {HEURISTIC_VERSION})",
    }
    assert warning.older == ()  # both judged by this release: the models differ
    html = page.content.decode()
    assert 'id="judge-mismatch"' in html and "evaluate them again with one judge model" in html

    # A run judged by an earlier heuristic is the one named to evaluate again.
    earlier = EvaluationRun.objects.get(pk=offline.pk)
    earlier.config = {**earlier.config, "judge_version": "evalsite-heuristic-1"}
    earlier.save(update_fields=["config"])
    (current,) = runs_of(evaluate(configs=[{"label": "heuristic again"}], judge_model="heuristic"))
    page = browser.get(reverse("dashboard:compare") + f"?run={offline.pk}&run={current.pk}")
    assert page.context["judge_mismatch"].older == ("heuristic judge",)
    assert "evaluate heuristic judge again with the same configuration" in page.content.decode()
    # Models differ as well: evaluating the older run again would not make the judges one.
    page = browser.get(reverse("dashboard:compare") + f"?run={offline.pk}&run={chat.pk}")
    assert page.context["judge_mismatch"].differs == ("model", "version")
    assert "evaluate them again with one judge model" in page.content.decode()

    (again,) = runs_of(evaluate(configs=[{"label": "chat judge again"}]))
    page = browser.get(reverse("dashboard:compare") + f"?run={chat.pk}&run={again.pk}")
    assert page.context["judge_mismatch"] is None and 'id="judge-mismatch"' not in page.content.decode()
