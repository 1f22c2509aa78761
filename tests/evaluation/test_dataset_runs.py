"""Whole evaluations of the real collections through the service, checked against pytrec_eval and the
reference BM25 figures of ../shared/datasets/README.md."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from evaluation.configs import parse_configs
from evaluation.models import QuestionResult
from evaluation.retrieval import metrics
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset.models import Collection

pytrec_eval = pytest.importorskip("pytrec_eval")

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"
pytestmark = pytest.mark.skipif(not DATASETS.exists(), reason=f"{DATASETS} is not here (it is in CI)")

# nDCG@10, R@100, MRR@10 at top 100, k1=1.5, b=0.75, tokenizer [a-z0-9]+ on lowercased title + text.
REFERENCE = {
    ("cranfield", "okapi"): (0.3370, 0.6865, 0.4930),
    ("cranfield", "lucene"): (0.3494, 0.7045, 0.5019),
    ("vaswani_npl", "okapi"): (0.3456, 0.4522, 0.6472),
    ("vaswani_npl", "lucene"): (0.3520, 0.4600, 0.6466),
}


def _import(name: str) -> Collection:
    call_command(
        "import_beir",
        str(DATASETS / name),
        "--cluster",
        "ds",
        "--tenant",
        "ds",
        "--collection",
        name,
        stdout=StringIO(),
    )
    return Collection.objects.get(slug=name)


@pytest.mark.parametrize("name", ["cranfield", "vaswani_npl"])
def test_fulltext_runs_equal_trec_eval_and_the_reference_figures(db, name):
    collection = _import(name)
    configs = parse_configs(
        [{"label": "okapi", "bm25_variant": "okapi"}, {"label": "lucene", "bm25_variant": "lucene"}],
        available_rerankers(),
    )
    _, runs = evaluate_retrieval(
        tenant=collection.tenant, collections=[collection], ks=[1, 5, 10, 100], configs=configs
    )

    for run in runs:
        results = list(QuestionResult.objects.filter(run=run).order_by("position"))
        qrels = {r.entry_key: {d: int(g) for d, g in r.expected.items()} for r in results}
        run_scores = {r.entry_key: {d: float(s) for d, s in r.ranked} for r in results}
        oracle = pytrec_eval.RelevanceEvaluator(
            qrels, {"recall.1,5,10,100", "ndcg_cut.1,5,10,100", "recip_rank"}
        )
        expected = oracle.evaluate(run_scores)
        for result in results:
            ours, theirs = result.metrics, expected[result.entry_key]
            for k in (1, 5, 10, 100):
                assert ours[f"recall@{k}"] == pytest.approx(theirs[f"recall_{k}"], abs=1e-9)
                assert ours[f"ndcg@{k}"] == pytest.approx(theirs[f"ndcg_cut_{k}"], abs=1e-9)
            assert ours["mrr"] == pytest.approx(theirs["recip_rank"], abs=1e-9)
            # The stored ranking is already in trec_eval's order: ranks reported are the ranks it sees.
            assert [d for d, _ in result.ranked] == metrics.rank_run(run_scores[result.entry_key])

        mrr_at_10 = sum(
            metrics.reciprocal_rank_at([d for d, _ in r.ranked], qrels[r.entry_key], 10) for r in results
        ) / len(results)
        figures = (run.metrics["ndcg@10"], run.metrics["recall@100"], mrr_at_10)
        reference = REFERENCE[(name, run.label)]
        assert figures == pytest.approx(reference, abs=0.005), (run.label, figures, reference)
        assert run.question_count == len(qrels)
