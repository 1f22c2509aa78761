"""The Compare page: runs over the same questions side by side, every metric's mean with a bootstrap interval
and a paired randomization test per pair of runs, and the chart; computed once per set of runs."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.utils import timezone

from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import Tenant
from evaluation.answers.judge_identity import judge_mismatch
from evaluation.answers.verdicts import ERROR
from evaluation.dashboard import answer_runs_reads, charts
from evaluation.dashboard.answer_runs_reads import (
    Refusal,
    run_refusal,
    run_score,
    stored_int,
    stored_mapping,
    stored_number,
)
from evaluation.dashboard.common_reads import Memo, ordered_metrics
from evaluation.dashboard.runs_reads import batch_runs
from evaluation.models import EvaluationRun, QuestionResult
from evaluation.retrieval.completeness import judged_gap
from evaluation.runs import stats
from goldenset.vocabulary.metric_names import ANSWER_SCORE, JUDGED_METRICS, JUDGED_SHARE

MAX_COMPARE_RUNS = 20


def compare_runs(
    *, tenant: Tenant, run_ids: Sequence[str] = (), batch_id: str | None = None
) -> list[EvaluationRun]:
    """The runs to compare, oldest first: a batch, or runs picked by id; all of one collection (or one set of
    collections), since only runs over the same questions can be compared question by question."""
    if batch_id:
        try:
            batch = uuid.UUID(str(batch_id))
        except ValueError:
            raise EvalsiteError("bad-request", f"{batch_id!r} is not a batch id.") from None
        runs = batch_runs(tenant=tenant, batch_id=batch)
        if not runs:
            raise EvalsiteError("not-found", f"Batch {batch_id} not found.", status=404)
    else:
        ids = []
        for value in dict.fromkeys(run_ids):
            try:
                ids.append(uuid.UUID(str(value)))
            except ValueError:
                raise EvalsiteError("bad-request", f"{value!r} is not a run id.") from None
        if len(ids) > MAX_COMPARE_RUNS:
            raise EvalsiteError("too-many-runs", f"Select at most {MAX_COMPARE_RUNS} runs to compare.")
        runs = list(EvaluationRun.objects.filter(tenant=tenant, pk__in=ids).order_by("created_at", "id"))
        if len(runs) != len(ids):
            raise EvalsiteError("not-found", "Some selected runs were not found.", status=404)
    if len(runs) < 2:
        raise EvalsiteError("too-few-runs", "Select at least two runs to compare.")
    kinds: dict[str, list[str]] = {}
    for run in runs:
        kinds.setdefault(run.kind, []).append(run.label)
    if len(kinds) > 1:
        named = "; ".join(
            f"{kind} runs: {', '.join(dict.fromkeys(labels))}" for kind, labels in sorted(kinds.items())
        )
        raise EvalsiteError(
            "mixed-kinds",
            "The selection mixes retrieval runs and answer runs ("
            + named
            + "): they are scored on different metrics, so compare runs of one kind.",
        )
    collection_sets = {tuple(sorted(run.collection_ids)) for run in runs}
    if len(collection_sets) > 1:
        names = sorted(", ".join(ids) for ids in collection_sets)
        raise EvalsiteError(
            "mixed-collections",
            "The selected runs belong to different collections ("
            + "; ".join(names)
            + "): compare runs of one collection, which answer the same questions.",
        )
    return runs


def compare_question_metrics(runs: Sequence[EvaluationRun]) -> dict[uuid.UUID, dict[str, dict[str, float]]]:
    """run id -> question (entry id) -> metric -> value, read as plain values in one query."""
    out: dict[uuid.UUID, dict[str, dict[str, float]]] = {run.pk: {} for run in runs}
    rows = QuestionResult.objects.filter(run__in=[run.pk for run in runs]).values_list(
        "run_id", "entry_id", "metrics"
    )
    for run_id, entry_id, values in rows:
        out[run_id][str(entry_id)] = values
    return out


def series_names(runs: Sequence[EvaluationRun]) -> list[str]:
    """A name per run: its label, and when labels repeat, the label with the run's time (and id) added."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.label] = counts.get(run.label, 0) + 1
    names = []
    for run in runs:
        if counts[run.label] == 1:
            names.append(run.label)
        else:
            names.append(
                f"{run.label} ({timezone.localtime(run.created_at):%Y-%m-%d %H:%M}, {str(run.pk)[:6]})"
            )
    return names


PERMUTATIONS = 10000
RESAMPLES = 2000
CONFIDENCE = 0.95
ALPHA = 0.05


@dataclass
class SeriesRow:
    run: EvaluationRun
    name: str
    color: str
    cells: list[tuple[str, float | None, tuple[float, float] | None, bool]]  # metric, mean, CI, best


@dataclass
class PairRow:
    name_a: str
    name_b: str
    color_a: str
    color_b: str
    cells: list[stats.PairwiseResult | None]
    metrics: list[str] = field(default_factory=list)  # the cells' metrics, in order
    run_a: str = ""  # the runs' ids, for the rankings side by side
    run_b: str = ""

    @property
    def by_metric(self) -> list[tuple[str, stats.PairwiseResult | None]]:
        return list(zip(self.metrics, self.cells, strict=True))


@dataclass(frozen=True)
class CompareStats:
    metric_names: list[str]
    means: dict[str, dict[str, float]]
    intervals: dict[str, dict[str, tuple[float, float]]]
    pair_results: dict[tuple[str, str], dict[str, stats.PairwiseResult]]
    questions: int
    dropped: int
    chart: str
    paired: dict[str, int]  # metric -> questions every run scored on it
    unpaired_score: list[str]  # answer runs whose score could not be paired question by question
    latency_chart: str = ""  # quality against p95 latency (retrieval runs that recorded their latency)


# Runs never change once written, so a comparison of the same runs is the same page: a repeat view skips the
# statistics and the chart.
_COMPARISONS = Memo(32)


def _compare_stats(
    runs: Sequence[EvaluationRun], names: list[str], colors: Mapping[str, str]
) -> CompareStats:
    unpaired_score: list[str] = []
    if runs[0].kind == answer_runs_reads.ANSWERS:
        # Answer runs: the judged metrics and the per-question score, question by question; a metric one run
        # could not score on any question is still listed (its cells read "—"). Refusal is run-level only.
        per_run, unpaired_score = answer_question_values(runs)
        scored = {name for values in per_run.values() for question in values.values() for name in question}
        metric_names = [name for name in (ANSWER_SCORE, *JUDGED_METRICS) if name in scored]
        metric_names += ordered_metrics(scored - set(metric_names))
        chart_metrics = [name for name in metric_names if name != ANSWER_SCORE]  # 0-100 beside 0-1: no
    else:
        per_run = compare_question_metrics(runs)
        metric_names = ordered_metrics(set.intersection(*(set(run.metrics) for run in runs)))
        # judged@k is how complete the judgments were, not how good the run is: in the tables, not the bars
        chart_metrics = [name for name in metric_names if not name.startswith(f"{JUDGED_SHARE}@")]
    means: dict[str, dict[str, float]] = {name: {} for name in names}
    intervals: dict[str, dict[str, tuple[float, float]]] = {name: {} for name in names}
    pair_results: dict[tuple[str, str], dict[str, stats.PairwiseResult]] = {}
    paired: dict[str, int] = {}
    questions = 0
    dropped = 0
    # Metrics scored on the same questions (usually all of them) are computed together: one set of resamples
    # and one set of sign flips serves every run, pair and metric of the group.
    groups: dict[tuple[str, ...], list[tuple[str, np.ndarray]]] = {}
    for metric in metric_names:
        aligned = stats.align_by_question(
            [{question: values.get(metric) for question, values in per_run[run.pk].items()} for run in runs]
        )
        paired[metric] = len(aligned.keys)
        if aligned.keys:
            groups.setdefault(tuple(aligned.keys), []).append((metric, aligned.matrix))
            questions = max(questions, len(aligned.keys))
            dropped = max(dropped, aligned.dropped)
    pairs = list(itertools.combinations(range(len(names)), 2))
    for group in groups.values():
        stacked = np.vstack([matrix for _, matrix in group])  # metric-major: row m * runs + i
        cis = stats.bootstrap_cis(stacked, confidence=CONFIDENCE, resamples=RESAMPLES)
        row_means = stacked.mean(axis=1)
        differences = np.array([matrix[a] - matrix[b] for _, matrix in group for a, b in pairs])
        p_values = stats.paired_randomization_tests(
            differences.reshape(len(group) * len(pairs), stacked.shape[1]), permutations=PERMUTATIONS
        )
        for m, (metric, _) in enumerate(group):
            base = m * len(names)
            for i, name in enumerate(names):
                means[name][metric] = float(row_means[base + i])
                intervals[name][metric] = cis[base + i]
            for j, (a, b) in enumerate(pairs):
                mean_a, mean_b = means[names[a]][metric], means[names[b]][metric]
                p_value = p_values[m * len(pairs) + j]
                pair_results.setdefault((names[a], names[b]), {})[metric] = stats.PairwiseResult(
                    names[a], names[b], mean_a, mean_b, mean_a - mean_b, p_value, p_value < ALPHA
                )
    series = [charts.CompareSeries(name, means[name], intervals[name], questions) for name in names]
    if runs[0].kind == answer_runs_reads.ANSWERS:
        # Each metric over its own questions; one no question could be paired on has no bars to draw.
        chart_metrics = [name for name in chart_metrics if paired[name]]
        figure = charts.compare_figure(series, chart_metrics, colors=colors, paired=paired)
    else:
        figure = charts.compare_figure(series, chart_metrics, colors=colors)
    latency_chart = ""
    if runs[0].kind != answer_runs_reads.ANSWERS:
        latency_chart = _latency_chart(runs, names, means, metric_names, colors)
    return CompareStats(
        metric_names,
        means,
        intervals,
        pair_results,
        questions,
        dropped,
        charts.figure_html(figure, "compare-chart", table_id="compare-means"),
        paired,
        unpaired_score,
        latency_chart,
    )


def _latency_chart(runs, names, means, metric_names, colors) -> str:
    """The scatter of quality (nDCG at the largest k, else the first metric) against p95 latency, for the runs
    that recorded their latency (runs stored before latency was recorded are left out); "" when none did."""
    ndcg = [m for m in metric_names if m.startswith("ndcg@")]
    metric = (
        max(ndcg, key=lambda m: int(m.split("@")[1])) if ndcg else (metric_names[0] if metric_names else "")
    )
    points = [
        (name, means[name][metric], run.summary["latency_ms"]["p95"])
        for run, name in zip(runs, names, strict=True)
        if (run.summary or {}).get("latency_ms") and metric in means[name]
    ]
    if not points:
        return ""
    figure = charts.latency_figure(points, metric, colors=colors)
    return charts.figure_html(figure, "latency-chart")


def comparison(runs: Sequence[EvaluationRun], label_colors: Mapping[str, str]) -> dict[str, Any]:
    """Means with bootstrap intervals per run and metric, and a paired randomization test per pair of runs and
    metric, all over the questions every run scored (a question one run lacks would unpair the test).
    `label_colors`: the tenant's (evaluation.dashboard.label_colors)."""
    names = series_names(runs)
    colors = [label_colors[run.label] for run in runs]
    name_colors = dict(zip(names, colors, strict=True))
    key = "|".join(f"{run.pk}={name}={color}" for run, name, color in zip(runs, names, colors, strict=True))
    computed: CompareStats | None = _COMPARISONS.get(key)
    if computed is None:
        computed = _compare_stats(runs, names, name_colors)
        _COMPARISONS.put(key, computed)
    metric_names, means, intervals = computed.metric_names, computed.means, computed.intervals
    pair_results, questions, dropped = computed.pair_results, computed.questions, computed.dropped
    best = {
        metric: max((means[name][metric] for name in names if metric in means[name]), default=None)
        for metric in metric_names
    }
    series_rows = [
        SeriesRow(
            run,
            name,
            color,
            [
                (
                    metric,
                    means[name].get(metric),
                    intervals[name].get(metric),
                    best[metric] is not None and means[name].get(metric) == best[metric],
                )
                for metric in metric_names
            ],
        )
        for run, name, color in zip(runs, names, colors, strict=True)
    ]
    color_of = name_colors
    run_of = {name: str(run.pk) for name, run in zip(names, runs, strict=True)}
    pair_rows = [
        PairRow(
            a,
            b,
            color_of[a],
            color_of[b],
            [results.get(metric) for metric in metric_names],
            metric_names,
            run_of[a],
            run_of[b],
        )  # fmt: skip
        for (a, b), results in pair_results.items()
    ]
    answers = runs[0].kind == answer_runs_reads.ANSWERS
    return {
        "answers": answers,
        "run_level_rows": run_level_rows(runs, names, colors) if answers else [],
        "paired": [computed.paired.get(metric, 0) for metric in metric_names],
        "unpaired_score": computed.unpaired_score,
        "runs": runs,
        "collection_ids": runs[0].collection_ids,
        "metric_names": metric_names,
        "series_rows": series_rows,
        "pair_rows": pair_rows,
        "questions": questions,
        "dropped": dropped,
        "chart": computed.chart,
        "latency_chart": computed.latency_chart,
        "alpha": ALPHA,
        "confidence": round(CONFIDENCE * 100),
        "permutations_text": f"{PERMUTATIONS:,}",
        "resamples_text": f"{RESAMPLES:,}",
        "same_batch": len({run.batch_id for run in runs}) == 1,
        "judged_gap": None if answers else judged_gap(means),
        "judge_mismatch": judge_mismatch(dict(zip(names, (r.config for r in runs), strict=True)))
        if answers
        else None,
    }


def latest_batch(*, tenant: Tenant) -> uuid.UUID | None:
    """The tenant's newest batch (what Compare offers when nothing is picked)."""
    return (
        EvaluationRun.objects.filter(tenant=tenant)
        .order_by("-created_at", "-id")
        .values_list("batch_id", flat=True)
        .first()
    )


def question_score(
    metrics: Mapping[str, Any], answerable: bool, refused: bool | None, diagnosis: str
) -> float | None:
    """A question's share of the run's score (0-100), as the run computed it: the mean of its metric values;
    a declined answerable question 0; an unanswerable one 100 when declined, else 0; a question with no answer
    (error) none. The run's score is the mean of these (Compare checks that before pairing them)."""
    if diagnosis == ERROR:
        return None
    if not answerable:
        return 100.0 if refused else 0.0
    if refused:
        return 0.0
    values = [v for v in (stored_number(x) for x in metrics.values()) if v is not None]
    return 100.0 * sum(values) / len(values) if values else None


def answer_question_values(
    runs: Sequence[EvaluationRun],
) -> tuple[dict[uuid.UUID, dict[str, dict[str, float]]], list[str]]:
    """run id -> question (entry id) -> metric -> value, the judged metrics and the per-question score, read in
    one query; and the runs whose per-question scores do not average to their stored score (so the score is
    shown for them, but not paired)."""
    out: dict[uuid.UUID, dict[str, dict[str, float]]] = {run.pk: {} for run in runs}
    rows = QuestionResult.objects.filter(run__in=[run.pk for run in runs]).values_list(
        "run_id", "entry_id", "metrics", "answerable", "refused", "diagnosis"
    )
    for run_id, entry_id, metrics, answerable, refused, diagnosis in rows:
        values = {
            name: v for name, raw in stored_mapping(metrics).items() if (v := stored_number(raw)) is not None
        }
        score = question_score(values, answerable, refused, diagnosis)
        if score is not None:
            values[ANSWER_SCORE] = score
        out[run_id][str(entry_id)] = values
    unmatched = []
    for run in runs:
        stored = run_score(run)
        scores = [v[ANSWER_SCORE] for v in out[run.pk].values() if ANSWER_SCORE in v]
        mean = sum(scores) / len(scores) if scores else None
        if stored is None or mean is None or abs(stored - mean) > 0.01:
            unmatched.append(str(run.pk))
    if unmatched:
        for run_id in out:
            for values in out[run_id].values():
                values.pop(ANSWER_SCORE, None)
    return out, unmatched


@dataclass
class RunLevelRow:
    """An answer run's run-level numbers on Compare: no interval, a table."""

    run: EvaluationRun
    name: str
    color: str
    score: float | None
    mode: str
    refusal: Refusal
    passed: int | None
    questions: int
    diagnosis: dict[str, int]


def run_level_rows(
    runs: Sequence[EvaluationRun], names: Sequence[str], colors: Sequence[str]
) -> list[RunLevelRow]:
    rows = []
    for run, name, color in zip(runs, names, colors, strict=True):
        summary = stored_mapping(run.summary)
        rows.append(
            RunLevelRow(
                run=run,
                name=name,
                color=color,
                score=run_score(run),
                mode=run.mode or str(summary.get("mode") or ""),
                refusal=run_refusal(run),
                passed=stored_int(summary["passed"]) if "passed" in summary else None,
                questions=run.question_count,
                diagnosis={k: stored_int(v) for k, v in stored_mapping(summary.get("diagnosis")).items()},
            )
        )
    return rows
