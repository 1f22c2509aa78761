"""Rankings side by side (issue 26, item 7): two retrieval runs question by question, how alike their top k are
without any judgment (overlap, Jaccard, rank-biased overlap), least alike first, and which questions got better
or worse; reached from Compare's pairwise table."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.configs import parse_configs
from evaluation.models import QuestionResult
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from evaluation.retrieval.similarity import rankings_similarity

URL = reverse("dashboard:compare-rankings")


def rankings(run, k):
    return {str(r.entry_id): [doc for doc, _ in r.ranked][:k] for r in QuestionResult.objects.filter(run=run)}


def test_compare_links_each_pair_of_retrieval_runs_to_its_rankings(alice, world, batch):
    html = alice.get(reverse("dashboard:compare") + f"?batch={batch.batch_id}").content.decode()
    assert html.count('class="small rankings-link"') == 3  # three runs: three pairs
    a, b = batch.runs[0], batch.runs[1]
    assert f"{URL}?a={b.pk}&amp;b={a.pk}" in html


def test_the_rankings_of_two_runs_side_by_side(alice, world, batch):
    first, second = batch.runs[0], batch.runs[1]  # fulltext, vector
    page = alice.get(f"{URL}?a={first.pk}&b={second.pk}&k=3")
    assert page.status_code == 200
    context = page.context
    expected = rankings_similarity(rankings(first, 3), rankings(second, 3), 3, 0.9)
    assert context["summary"]["questions"] == len(expected) == 3
    assert context["summary"]["rbo"] == pytest.approx(sum(s.rbo for s in expected) / 3)
    assert [p.rbo for p in context["least_alike"]] == sorted(s.rbo for s in expected)
    deltas = [p.delta for p in context["least_alike"]]
    assert context["metric"] == "ndcg@3"
    assert context["summary"]["better"] == sum(1 for d in deltas if d > 0)
    assert context["summary"]["worse"] == sum(1 for d in deltas if d < 0)
    assert 'id="rbo-chart"' in page.content.decode()


def test_a_run_against_its_twin_is_identical(alice, world, golden):
    configs = parse_configs([{"label": "one"}, {"label": "two"}], available_rerankers())
    _, (one, two) = evaluate_retrieval(
        tenant=world.tenant, collections=[world.collection], ks=[3], configs=configs
    )
    context = alice.get(f"{URL}?a={one.pk}&b={two.pk}").context
    assert context["summary"]["identical"] == context["summary"]["questions"] == 3
    assert context["summary"]["rbo"] == pytest.approx(1.0)
    assert context["summary"]["same"] == 3 and context["better"] == context["worse"] == []


def test_answer_runs_unknown_and_foreign_runs_are_refused(alice, world, batch, answer_batch, outsider):
    answer = alice.get(f"{URL}?a={answer_batch.heuristic.pk}&b={answer_batch.judged.pk}")
    assert answer.status_code == 400 and "retrieval runs" in answer.content.decode()
    assert alice.get(f"{URL}?a={batch.runs[0].pk}&b=00000000-0000-0000-0000-000000000000").status_code == 404
    assert alice.get(f"{URL}?a=not-a-run&b={batch.runs[0].pk}").status_code == 400
    rob = Client()
    rob.force_login(outsider)
    assert rob.get(f"{URL}?a={batch.runs[0].pk}&b={batch.runs[1].pk}").status_code == 404
