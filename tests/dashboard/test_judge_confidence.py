"""The judge's samples on the dashboard: the answer launcher's judge_samples and judge_temperature (errors on their
fields), and the answer run page showing the judge's mean confidence beside each judged metric."""

from __future__ import annotations

import re

from django.urls import reverse

from evalsite.jobs.models import Job
from tests.dashboard.conftest import SEARCH_CONFIG, launch_data, question_url, run_url, text_of


def answer_launch_data(**fields) -> dict:
    fields = {"judge_model": "", "max_questions": "", "unanswerable_questions": "", **fields}
    defaults = {**SEARCH_CONFIG, "top_k": "3", "model": "", "groundedness": "Off"}
    return launch_data([{"enabled": True, "label": "x"}], ("handbook",), defaults=defaults, **fields)


def test_the_launcher_takes_judge_samples_and_puts_their_errors_on_their_fields(alice, world, golden):
    page = alice.get(reverse("dashboard:launch-answers"))
    assert b'name="judge_samples"' in page.content and b'name="judge_temperature"' in page.content
    even = alice.post(reverse("dashboard:launch-answers"), answer_launch_data(judge_samples="4"))
    assert even.status_code == 400
    assert "Expected an odd whole number from 1 to 9" in " ".join(
        even.context["form"].errors["judge_samples"]
    )
    alone = alice.post(reverse("dashboard:launch-answers"), answer_launch_data(judge_temperature="0.5"))
    assert alone.status_code == 400
    assert "Only with judge_samples above 1" in " ".join(alone.context["form"].errors["judge_temperature"])
    assert not Job.objects.exists()
    launched = alice.post(
        reverse("dashboard:launch-answers"), answer_launch_data(judge_samples="3", judge_temperature="0.4")
    )
    assert launched.status_code == 302
    job = Job.objects.get()
    assert (job.input["judge_samples"], job.input["judge_temperature"]) == (3, 0.4)


def test_the_run_page_shows_the_judges_confidence_beside_its_metric(alice, answer_batch):
    run = answer_batch.judged
    before = alice.get(run_url(run))
    assert b"data-confidence" not in before.content  # judged once: no confidence to show
    run.summary = {**run.summary, "judge_confidence": {"faithfulness": 0.7778, "answer_relevancy": 1.0}}
    run.save(update_fields=["summary"])
    page = alice.get(run_url(run))
    tiles = {
        name: tile
        for name, tile in re.findall(r'data-metric="(\w+)">(.*?)</div>', page.content.decode(), flags=re.S)
    }
    assert "confidence 0.78" in tiles["faithfulness"] and "confidence 1.00" in tiles["answer_relevancy"]
    assert "confidence" not in tiles["context_recall"]
    assert "confidence 0.78" in text_of(page)


def test_the_question_page_shows_each_verdicts_confidence(alice, answer_batch):
    run = answer_batch.judged
    result = run.results.order_by("position").first()
    detail = {
        "statements": [
            {"text": "Refunds take 30 days.", "supported": True, "reason": "r", "confidence": 0.6667}
        ],
        "confidence": 0.6667,
        "samples": {"asked": 3, "readable": 3, "unreadable": 0, "failed": 0},
    }
    judgement = {"value": 1.0, "method": "llm-judge", "detail": detail, "excluded": None, "fallback": None}
    result.judgements = {**result.judgements, "faithfulness": judgement}
    result.save(update_fields=["judgements"])
    page = text_of(alice.get(question_url(run, result.position)))
    assert "Refunds take 30 days. confidence 0.6667" in page
    # each count as stored (a jsonb column keeps no key order, so no order is asserted)
    assert all(
        f'"{key}": {n}' in page
        for key, n in (("asked", 3), ("readable", 3), ("unreadable", 0), ("failed", 0))
    )
