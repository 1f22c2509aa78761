"""Runs, both kinds: storing one with its question results, and the summary the API, the CLI and a job's result
report of it (the seed's shape for a retrieval run; the answer metrics, refusal and diagnoses for an answer run)."""

from __future__ import annotations

from collections.abc import Sequence

from evalsite.errors import EvalsiteError
from evaluation.models import EvaluationRun, QuestionResult
from evaluation.runs.selectors import GoldenQuestion
from evaluation.runs.slices import SliceRow, Subset, breakdown
from goldenset.models import Collection
from goldenset.vocabulary.metric_names import ANSWER_SCORE


def questions_in(
    questions: Sequence[GoldenQuestion], subset: Subset, collections: Sequence[Collection]
) -> list[GoldenQuestion]:
    """The golden questions a subset admits, in order; a subset that admits none is the request's error (400),
    never an empty run."""
    if not subset:
        return list(questions)
    chosen = [q for q in questions if subset.admits(q.tags, q.origin, q.reviewed)]
    if not chosen:
        raise empty_subset(subset, collections)
    return chosen


def empty_subset(subset: Subset, collections: Sequence[Collection]) -> EvalsiteError:
    field = subset.first_field()
    slugs = [c.slug for c in collections]
    return EvalsiteError(
        "empty-golden-set",
        f"{field}: the subset ({subset.describe()}) selects no golden entry to evaluate in {', '.join(slugs)}.",
        details={"field": field, "subset": subset.as_dict(), "collection_ids": slugs},
    )


def run_slices(results: Sequence[QuestionResult], scores: Sequence[float | None] | None = None) -> dict:
    """A run's per-slice breakdown (evaluation.runs.slices.breakdown) from its results before they are stored: the
    scored questions only (a failed one is in no mean). `scores`: an answer run's per-question score in 0..1,
    one per result, shown as the run's score is (0-100); with them the answerable slices are added."""
    rows = []
    for i, result in enumerate(results):
        if result.error:
            continue
        values: dict[str, float] = {}
        if scores is not None and scores[i] is not None:
            values[ANSWER_SCORE] = 100.0 * scores[i]  # type: ignore[operator]
        values.update(result.metrics)
        rows.append(SliceRow(result.tags, result.origin, result.answerable, values))
    return breakdown(rows, by_answerable=scores is not None)


def run_store(
    run: EvaluationRun,
    collections: Sequence[Collection],
    results: Sequence[QuestionResult],
    batch_size: int = 500,
) -> EvaluationRun:
    """Save a new run, link its collections and insert its question results (inside the caller's transaction:
    a batch of runs is stored whole or not at all)."""
    run.collection_ids = [c.slug for c in collections]
    # The content version of each collection it evaluated, for every kind of run (a retrieval run's index
    # recorded the one it held): a later change of the content marks the run (selectors.content_changed_since).
    run.index_info = {
        "content_versions": {c.slug: c.content_version for c in collections},
        **(run.index_info or {}),
    }
    run.question_count = len(results)
    run.save(force_insert=True)
    run.collections.set(collections)
    for result in results:
        result.run = run
    QuestionResult.objects.bulk_create(results, batch_size=batch_size)
    return run
