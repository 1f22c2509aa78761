"""A finished study written as the study job writes one (its request validated, trials of every kind, the best,
a confirmation naming two real runs), for the dashboard's tests and the browser tour: no search runs."""

from __future__ import annotations

from django.utils import timezone

from evaluation.models import EvaluationRun, Study
from evaluation.retrieval.read_path import available_rerankers
from evaluation.studies.confirm import confirm
from evaluation.studies.request import parse_study_request
from evaluation.studies.space import applied

TRIALS = 60  # 47 of them complete: enough for importance (evaluation.studies.importance.MIN_TRIALS)
REQUEST = {
    "base": {"search_type": "FullText"},
    "space": {
        "bm25_k1": {"low": 0.3, "high": 3.0},
        "bm25_b": {"low": 0.1, "high": 1.0, "step": 0.1},
        "bm25_variant": ["lucene", "okapi"],
    },
    "metric": "ndcg@10",
    "budget": {"trials": TRIALS},
    "seed": 3,
}


def _value(k1: float, b: float, variant: str) -> float:
    """A landscape where k1 matters (a peak at 1.2), b a little and the variant not at all."""
    return round(
        0.62 - 0.08 * abs(k1 - 1.2) - 0.02 * abs(b - 0.7) + (0.001 if variant == "okapi" else 0.0), 6
    )


def synthetic_trials(count: int = TRIALS) -> list[dict]:
    trials = []
    for n in range(count):
        k1, b, variant = (
            round(0.3 + (n * 0.37) % 2.7, 4),
            round(0.1 + (n * 3 % 10) / 10, 1),
            ["lucene", "okapi"][n % 2],
        )
        trial = {
            "number": n, "values": {"bm25_k1": k1, "bm25_b": min(b, 1.0), "bm25_variant": variant},
            "value": _value(k1, min(b, 1.0), variant), "pruned": False, "questions": 150, "seconds": 0.21,
            "error": "", "p95_ms": 3.5 + n % 4, "infeasible": False,
        }  # fmt: skip
        if n % 5 == 3:
            trial.update(pruned=True, questions=38, value=round(trial["value"] - 0.05, 6))
        if n == 7:
            trial.update(value=None, error="RuntimeError: the index was rebuilt under the trial", questions=0)
        trials.append(trial)
    return trials


def finished_study(tenant, collection, baseline: EvaluationRun, winner: EvaluationRun, **fields) -> Study:
    """A completed study of `collection` whose confirmation compares the two runs given."""
    request = parse_study_request(REQUEST, available_rerankers())
    trials = synthetic_trials()
    complete = [t for t in trials if t["value"] is not None and not t["pruned"]]
    best = max(complete, key=lambda t: (t["value"], -t["number"]))
    outcome = confirm(
        [0.7, 0.6, 0.9, 0.5, 0.8, 0.75], [0.6, 0.6, 0.7, 0.5, 0.7, 0.7], configurations_tried=TRIALS - 1
    )
    side = lambda run, value, ci: {"run_id": str(run.pk), "value": value, "ci": list(ci)}  # noqa: E731
    study = Study.objects.create(
        tenant=tenant, collection=collection, request=request.job_input(), metric=request.metric,
        split={"tuning": 150, "confirmation": 150}, trials=trials, evaluations=3000, created_by="user:alice",
        best={"number": best["number"], "values": best["values"], "tuning_value": best["value"],
              "config": applied(request.base.request(), best["values"])},
        confirmation={
            "baseline": side(baseline, outcome.baseline, outcome.baseline_ci),
            "winner": side(winner, outcome.winner, outcome.winner_ci),
            "difference": outcome.difference, "p_value": outcome.p_value, "significant": outcome.significant,
            "configurations_tried": TRIALS - 1, "questions": outcome.questions, "verdict": outcome.verdict("ndcg@10"),
        },
        finished_at=timezone.now(), **fields,
    )  # fmt: skip
    return study
