"""The keyless lexical relevance assessor (issue 26, item 4): its score, its grades, and a pool judged by it from
the command line and as a job, stored beside people's judgments under its own name and never combined with
theirs."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from evaluation.judgments.agreement import weighted_kappa
from evaluation.judgments.grades import is_machine
from evaluation.judgments.lexical import CUTS, LEXICAL_RATER, Cuts, grade_of, idf_of, lexical_score
from evaluation.judgments.pools import pool_agreement, pool_progress
from evaluation.models import RelevanceJudgment
from tests.evaluation.test_assessors import SCOPE

IDF = idf_of(["refunds within thirty days", "shipping takes two days", "the warranty covers defects"])


def test_the_score_is_the_idf_weighted_share_of_the_questions_words_the_text_holds():
    assert lexical_score("refunds days", "", "refunds within thirty days", IDF) == 1.0
    assert lexical_score("refunds days", "", "nothing in common", IDF) == 0.0
    # "days" is in two texts of three, "refunds" in one: holding only the rarer word weighs more
    rare, common = (
        lexical_score("refunds days", "", "refunds", IDF),
        lexical_score("refunds days", "", "days", IDF),
    )
    assert rare > 0.5 > common > 0 and rare + common == pytest.approx(1.0)
    # a reference answer counts half: the question's words held, the answer's not
    assert lexical_score("refunds", "warranty defects", "refunds", IDF) == pytest.approx(0.5)
    # stop words and a question with no content word
    assert lexical_score("what is the", "", "what is the", IDF) == 0.0


def test_the_cuts_give_grades_0_to_3_and_are_ordered():
    assert CUTS.related < CUTS.relevant < CUTS.perfect
    assert [grade_of(s, Cuts(0.2, 0.5, 0.8)) for s in (0.0, 0.2, 0.49, 0.5, 0.79, 0.8, 1.0)] == [
        0,
        1,
        1,
        2,
        2,
        3,
        3,
    ]
    assert is_machine(LEXICAL_RATER) and LEXICAL_RATER == "lexical-relevance:evalsite-lexical-1"


def test_the_lexical_assessor_judges_a_pool_from_the_command_line_beside_people(world, pool):
    out = StringIO()
    call_command("judge", *SCOPE, "--pool", str(pool.pk), "--assessor", "lexical", stdout=out)
    items = pool.items.count()
    assert f"{items} of {items} documents judged by {LEXICAL_RATER}" in out.getvalue()
    judgments = list(RelevanceJudgment.objects.filter(pool=pool, rater=LEXICAL_RATER))
    assert len(judgments) == items
    for j in judgments:
        assert j.detail["version"] == "evalsite-lexical-1" and j.detail["cuts"] == vars(CUTS)
        assert j.grade == grade_of(j.detail["score"])
    assert pool_progress(pool).judgments == 0  # not the raters' work
    # A person's grades and the assessor's: paired, never combined.
    for j in judgments:
        RelevanceJudgment.objects.create(
            tenant=world.tenant, collection=world.collection, entry=j.entry, document_id=j.document_id,
            grade=0, rater="alice", pool=pool,
        )  # fmt: skip
    agreement = pool_agreement(pool)
    pair = next(p for p in agreement["pairs"] if p["raters"] == ["alice", LEXICAL_RATER])
    expected = weighted_kappa([0] * items, [j.grade for j in judgments], (0, 1, 2, 3))
    assert pair["items"] == items and pair["weighted_kappa"] == pytest.approx(expected, abs=1e-4)
    assert agreement["combined_grades"] == {"0": items} and agreement["items_graded_twice"] == 0
    report = world.client.get("/lmkit/v1/search/evaluate/calibration", {"collection_id": "handbook"})
    assert report.status_code == 200, report.json()
    (assessor,) = report.json()["relevance_assessors"]
    assert assessor["rater"] == LEXICAL_RATER and assessor["items"] == items
    assert assessor["weighted_kappa"] == pair["weighted_kappa"] and sum(assessor["confusion"][0]) == items
    # Again: nothing left for it.
    out = StringIO()
    call_command("judge", *SCOPE, "--pool", str(pool.pk), "--assessor", "lexical", stdout=out)
    assert "0 of 0 documents judged" in out.getvalue()


def test_the_lexical_assessor_needs_no_endpoint_as_a_job(
    world, pool, settings, django_capture_on_commit_callbacks
):
    settings.EVALSITE_LLM_BASE_URL = ""
    url = f"/lmkit/v1/search/judgments/pools/{pool.pk}/assess"
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(url, {"assessor": "lexical"}, format="json")
    assert response.status_code == 202, response.json()
    job = world.client.get(f"/lmkit/v1/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "Completed" and job["result"]["rater"] == LEXICAL_RATER
    assert RelevanceJudgment.objects.filter(pool=pool, rater=LEXICAL_RATER).count() == pool.items.count()
    bad = world.client.post(url, {"assessor": "bm25"}, format="json")
    assert bad.status_code == 400 and "assessor" in bad.json()["error"]["message"]
