"""Compare warns when the runs' judged@k differ enough to bias the standard measures (issue 26, item 6)."""

from __future__ import annotations

from evaluation.configs import parse_configs
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset.models import GoldenEntry
from tests.dashboard.conftest import compare_url


def evaluate(world, label):
    _, (run,) = evaluate_retrieval(
        tenant=world.tenant,
        collections=[world.collection],
        ks=[1, 3],
        configs=parse_configs([{"label": label}], available_rerankers()),
    )
    return run


def test_runs_judged_unevenly_are_flagged_and_runs_judged_alike_are_not(alice, world, golden):
    before = evaluate(world, "before judging")
    # The golden set grows: every document the run ranked in its top 3 that nobody had judged is judged not
    # relevant (grade 0, as a pool's application writes it).
    for result in before.results.all():
        entry = GoldenEntry.objects.get(pk=result.entry_id)
        for document_id, _ in result.ranked:
            entry.grades.setdefault(
                document_id, 0
            ) if document_id not in entry.expected_document_ids else None
        entry.save()
    after = evaluate(world, "after judging")
    assert after.metrics["judged@3"] > before.metrics["judged@3"] + 0.1
    # Grade 0 is no gain: the standard measures did not move, the runs are the same configuration.
    assert after.metrics["ndcg@3"] == before.metrics["ndcg@3"]

    page = alice.get(compare_url(before, after))
    assert page.status_code == 200
    gap = page.context["judged_gap"]
    assert gap.metric == "judged@3" and (gap.most, gap.least) == ("after judging", "before judging")
    assert gap.shares == {
        "before judging": before.metrics["judged@3"],
        "after judging": after.metrics["judged@3"],
    }
    assert gap.read_instead == "ndcg_cond@3"
    text = page.content.decode()
    assert 'id="judged-gap"' in text and "Read ndcg_cond@3 beside them" in text
    assert "Judge what these runs found" in text  # the remedy, on the same page

    again = evaluate(world, "judged alike")
    page = alice.get(compare_url(after, again))
    assert page.context["judged_gap"] is None and 'id="judged-gap"' not in page.content.decode()
