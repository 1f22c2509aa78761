"""A chat model as a relevance assessor (issue 26, item 4): the versioned prompt and the reading of its answer
(pure), and a pool judged through the scripted model server over real HTTP, including unreadable answers and
failed calls, which are counted and never turned into grades."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from evalsite.audit.models import AuditEvent
from evaluation.judgments.assessors import (
    PROMPT_SHA,
    PROMPT_VERSION,
    Verdict,
    majority,
    messages,
    read_grade,
)
from evaluation.judgments.pools import pool_progress
from evaluation.models import JudgmentPool, RelevanceJudgment
from tests.conftest import person_client
from tests.llm_server import llm_server_fixture  # noqa: F401

SCOPE = ["--cluster", "acme", "--tenant", "search", "--collection", "handbook"]
RATER = "llm-relevance:scripted"


# --- the prompt and its answer -----------------------------------------------------------------------------------


def test_the_prompt_holds_the_scale_the_question_and_the_passage_cut():
    (message,) = messages("How long is the refund window?", "x" * 10_000)
    text = message["content"]
    assert message["role"] == "user" and "How long is the refund window?" in text
    assert "3 = perfectly relevant" in text and "##final score: <grade>" in text
    assert "x" * 4000 in text and "x" * 4001 not in text
    assert PROMPT_VERSION == "evalsite-relevance-1" and len(PROMPT_SHA) == 64


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ("M: 2, T: 2\n##final score: 2", 2),
        ("##Final Score: 3", 3),
        ("first ##final score: 1 then, thinking again, ##final score: 0", 0),  # the last one counts
        ("##final score: 4", None),  # off the scale: unreadable, not 3
        ("The passage is relevant.", None),
        ("", None),
    ],
)
def test_an_answer_is_read_by_its_last_final_score_line_or_not_at_all(answer, grade):
    assert read_grade(answer) == grade


def test_samples_combine_by_majority_the_lower_grade_on_a_tie_unreadable_left_out():
    assert majority([2, 2, 3]) == Verdict(2, (2, 2, 3), 2 / 3)
    assert majority([1, 3]).grade == 1
    assert majority([None, 3, None]) == Verdict(3, (None, 3, None), 1.0)
    assert majority([None, None]).grade is None and majority([]).grade is None


# --- a pool judged over HTTP -------------------------------------------------------------------------------------


@pytest.fixture
def model(llm_server, settings):
    settings.EVALSITE_LLM_BASE_URL = llm_server.url
    settings.EVALSITE_LLM_MODEL = "scripted"
    settings.EVALSITE_LLM_MAX_ATTEMPTS = 1
    return llm_server


def judge(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("judge", *SCOPE, *args, stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def test_the_model_judges_the_pool_beside_people_with_its_prompt_recorded(world, pool, model):
    model.reply(r"Passage: Orders ship", "intent: shipping\n##final score: 3")
    model.reply(r"##final score: <grade>", "##final score: 0")
    code, out, _ = judge("--pool", str(pool.pk))
    items = pool.items.count()
    assert code == 0 and f"{items} of {items} documents judged by {RATER}" in out, out
    judgments = RelevanceJudgment.objects.filter(pool=pool, rater=RATER)
    assert judgments.count() == items
    for j in judgments:
        text = pool.items.get(entry=j.entry, document_id=j.document_id)
        assert j.grade == (3 if j.document_id == "shipping" else 0), (text, j.grade)
        assert j.detail["prompt_version"] == PROMPT_VERSION and j.detail["prompt_sha256"] == PROMPT_SHA
        assert j.detail["samples"] == [j.grade]
    assert AuditEvent.objects.filter(object_type="judgment", actor="command:judge").count() == 1
    assert pool_progress(pool).judgments == 0  # a machine's judgments are not the raters' work
    # Again: nothing left for it, nothing asked.
    asked = model.count("/v1/chat/completions")
    code, out, _ = judge("--pool", str(pool.pk))
    assert code == 0 and "0 of 0 documents judged" in out and model.count("/v1/chat/completions") == asked


def test_several_samples_give_their_majority(world, pool, model):
    model.reply_by_seed(
        r"##final score: <grade>", {0: "##final score: 1", 1: "##final score: 3", 2: "##final score: 3"}
    )
    code, out, _ = judge("--pool", str(pool.pk), "--samples", "3")
    assert code == 0, out
    for j in RelevanceJudgment.objects.filter(pool=pool, rater=RATER):
        assert (j.grade, j.detail["samples"], j.detail["agreement"]) == (3, [1, 3, 3], 0.6667)


def test_unreadable_answers_and_failed_calls_are_counted_never_graded(world, pool, model):
    items = list(pool.items.order_by("position"))
    model.reply(r"##final score: <grade>", "It looks fairly relevant to me.")
    code, out, _ = judge("--pool", str(pool.pk))
    assert code == 0 and f"0 of {len(items)} documents judged" in out and f"{len(items)} unreadable" in out
    assert not RelevanceJudgment.objects.exists()
    model.fail_next(*([500] * (len(items) + 2)))
    code, out, _ = judge("--pool", str(pool.pk))
    assert code == 0 and f"{len(items)} failed calls" in out, out
    assert not RelevanceJudgment.objects.exists()


def test_without_an_endpoint_or_with_a_foreign_pool_it_stops_in_one_line(world, pool, settings):
    settings.EVALSITE_LLM_BASE_URL = ""
    settings.EVALSITE_LLM_MODEL = "scripted"
    code, out, err = judge("--pool", str(pool.pk))
    assert (code, out) == (2, "") and "No LLM endpoint configured" in err
    code, out, err = judge("--pool", "00000000-0000-0000-0000-000000000000")
    assert (code, out) == (2, "") and "not found" in err
    assert not RelevanceJudgment.objects.exists() and JudgmentPool.objects.count() == 1


def test_no_person_may_judge_under_a_machines_name(world, pool):
    item = pool.items.first()
    body = {"collection_id": "handbook", "pool_id": str(pool.pk),
            "judgments": [{"question_id": item.entry.key, "document_id": item.document_id, "grade": 3,
                           "rater": RATER}]}  # fmt: skip
    # live, a person judges as themselves only
    response = person_client(world, "alice").post("/lmkit/v1/search/judgments", body, format="json")
    assert (
        response.status_code == 400 and response.json()["error"]["details"]["field"] == "judgments[0].rater"
    )
    # a curator's file may name other raters, never a machine's name
    qrels = SimpleUploadedFile("m.qrels", f"{item.entry.key} 0 {item.document_id} 3\n".encode())
    response = world.client.post(
        "/lmkit/v1/search/judgments",
        {"collection_id": "handbook", "file": qrels, "rater": RATER},
        format="multipart",
    )
    assert response.status_code == 400 and "machine assessor" in response.json()["error"]["message"]
    answer = person_client(world, "alice").get(
        f"/lmkit/v1/search/judgments/pools/{pool.pk}/next", {"rater": RATER}
    )
    assert answer.status_code == 400 and not RelevanceJudgment.objects.exists()


# --- as a job over REST ------------------------------------------------------------------------------------------


def test_the_model_judges_a_pool_as_a_job_over_rest(world, pool, model, django_capture_on_commit_callbacks):
    model.reply(r"##final score: <grade>", "##final score: 2")
    url = f"/lmkit/v1/search/judgments/pools/{pool.pk}/assess"
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(url, {"samples": 1}, format="json")
    assert response.status_code == 202, response.json()
    job = world.client.get(f"/lmkit/v1/jobs/{response.json()['job_id']}").json()
    items = pool.items.count()
    assert (job["kind"], job["status"], job["progress_done"], job["progress_total"]) == (
        "Assess",
        "Completed",
        items,
        items,
    )
    assert job["result"]["judged"] == items and job["result"]["grades"] == {"2": items}
    assert RelevanceJudgment.objects.filter(pool=pool, rater=RATER, grade=2).count() == items
    assert AuditEvent.objects.filter(object_type="judgment", actor__startswith="api-key:").exists()


def test_the_job_is_refused_without_an_endpoint_or_for_another_tenants_pool(world, pool, settings):
    url = f"/lmkit/v1/search/judgments/pools/{pool.pk}/assess"
    settings.EVALSITE_LLM_BASE_URL = ""
    response = world.client.post(url, {}, format="json")
    assert response.status_code == 503 and response.json()["error"]["code"] == "llm-unavailable"
    settings.EVALSITE_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    assert world.other_client.post(url, {}, format="json").status_code == 404
    bad = world.client.post(url, {"samples": 10}, format="json")
    assert bad.status_code == 400 and "samples" in bad.json()["error"]["message"]
    assert not RelevanceJudgment.objects.exists()
