"""Significance and uncertainty for comparing evaluation runs over the same golden questions. Numpy only: no Django.

The unit of sampling is the question: a run's score on a metric is the mean of its per-question scores, so

- ``bootstrap_ci`` gives a percentile bootstrap interval for that mean (resample questions with replacement);
- ``paired_randomization_test`` asks whether two configurations differ on the same questions, with the paired
  (Fisher/Pitman) randomization test that Smucker, Allan & Carterette (CIKM 2007, "A comparison of statistical
  significance tests for information retrieval evaluation") recommend for IR: under the null hypothesis the two
  systems are exchangeable on each question, so the sign of each per-question difference is a coin flip;
- ``bootstrap_cis`` and ``paired_randomization_tests`` do the same for every row of a matrix at once (one row
  per run, or per pair of runs): the resamples and sign flips are drawn once and serve every row, so each row
  gets the very numbers the single-row function gives it (which is that function: they share one body);
- ``align_by_question`` keeps only the questions every run scored, so the pairing is honest;
- ``pairwise_comparisons`` runs the test for every pair of configurations.

Everything is deterministic given ``seed`` (numpy's ``default_rng``). Work is done in blocks of at most
``_BLOCK_CELLS`` random draws, so memory stays bounded however many questions there are.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

import numpy as np

__all__ = [
    "Aligned",
    "PairwiseResult",
    "align_by_question",
    "bootstrap_ci",
    "bootstrap_cis",
    "latency_summary",
    "paired_randomization_test",
    "paired_randomization_tests",
    "pairwise_comparisons",
]

_BLOCK_CELLS = 262_144  # random draws per block: small enough to stay in cache (2 MB of int64 indexes)
_TIE_TOLERANCE = 1e-12

K = TypeVar("K", str, int)


def _as_scores(values: Sequence[float] | np.ndarray, name: str = "values") -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers")
    if array.size == 0:
        raise ValueError(f"{name} is empty: need at least one question")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinity")
    return array


def _as_rows(values: np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a matrix: one row per series, one column per question")
    if array.shape[1] == 0:
        raise ValueError(f"{name} is empty: need at least one question")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinity")
    return array


def _blocks(total: int, n: int) -> list[int]:
    """Split ``total`` rows of ``n`` draws each into blocks of at most ``_BLOCK_CELLS`` draws."""
    rows = max(1, _BLOCK_CELLS // n)
    return [min(rows, total - start) for start in range(0, total, rows)]


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean of ``values`` (one score per question).

    Draws ``resamples`` x n question indexes with replacement, takes each resample's mean, and returns the
    (1 - confidence) / 2 and (1 + confidence) / 2 percentiles (numpy's linear interpolation, as
    ``scipy.stats.bootstrap(method="percentile")``). One value gives (v, v). Raises ValueError when ``values``
    is empty or not finite, or when ``confidence`` or ``resamples`` is out of range. ``bootstrap_cis`` of a
    one-row matrix.
    """
    scores = _as_scores(values)
    return bootstrap_cis(scores[None, :], confidence=confidence, resamples=resamples, seed=seed)[0]


def bootstrap_cis(
    matrix: np.ndarray, *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> list[tuple[float, float]]:
    """``bootstrap_ci`` of every row of ``matrix`` (one row per run, one column per question), in row order.

    One set of resamples of question indexes serves every row: with the same seed each row gets the resamples
    ``bootstrap_ci`` draws for it alone, so each interval is the one ``bootstrap_ci(row)`` gives. Each block of
    resamples is counted (how often each question was drawn) and every row's resample means are one matrix
    product, rather than a pass per row. A matrix of one column gives (v, v) per row; one of no rows, []. Raises
    ValueError when ``matrix`` is not 2-D, has no columns or a value that is not finite, or when ``confidence``
    or ``resamples`` is out of range.
    """
    matrix = _as_rows(matrix, "matrix")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1 (exclusive)")
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    rows_total, n = matrix.shape
    if rows_total == 0:
        return []
    if n == 1:
        return [(float(v), float(v)) for v in matrix[:, 0]]
    rng = np.random.default_rng(seed)
    blocks = []
    for rows in _blocks(resamples, n):
        picks = rng.integers(0, n, size=(rows, n))
        counts = np.bincount((np.arange(rows)[:, None] * n + picks).ravel(), minlength=rows * n).reshape(
            rows, n
        )
        blocks.append(matrix @ counts.T / n)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(np.concatenate(blocks, axis=1), [tail, 100.0 - tail], axis=1)
    return [(float(lo), float(hi)) for lo, hi in zip(low, high, strict=True)]


def paired_randomization_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    permutations: int = 10000,
    seed: int = 0,
) -> float:
    """Two-sided p-value that the mean of the paired differences ``a[i] - b[i]`` is zero.

    The Fisher/Pitman paired permutation (randomization) test used in IR evaluation (Smucker, Allan & Carterette
    2007): each of ``permutations`` draws flips the sign of every difference at random; the p-value is
    (1 + #{|permuted mean| >= |observed mean| - 1e-12}) / (1 + permutations), so it is never 0 and a run
    compared with itself gets exactly 1.0. ``a`` and ``b`` must score the same questions in the same order
    (see ``align_by_question``); different lengths raise ValueError. ``paired_randomization_tests`` of the one
    row ``a - b``.
    """
    first, second = _as_scores(a, "a"), _as_scores(b, "b")
    if first.size != second.size:
        raise ValueError(
            f"paired samples differ in length ({first.size} != {second.size}): align them by question"
        )
    return paired_randomization_tests((first - second)[None, :], permutations=permutations, seed=seed)[0]


def paired_randomization_tests(
    differences: np.ndarray, *, permutations: int = 10000, seed: int = 0
) -> list[float]:
    """``paired_randomization_test`` for every row of ``differences``, in row order.

    Row i holds one pair's per-question differences ``a - b`` (the same questions in the same order for both
    runs of the pair; rows may be different pairs, or the same pair on different metrics). The sign flips are
    drawn once and every row sees the flips the single test draws with the same seed, so each p-value is
    ``paired_randomization_test(a, b)``'s. No rows give []. Raises ValueError when ``differences`` is not 2-D,
    has no columns or a value that is not finite, or when ``permutations`` is below 1.
    """
    differences = _as_rows(differences, "differences")
    if permutations < 1:
        raise ValueError("permutations must be at least 1")
    pairs, n = differences.shape
    if pairs == 0:
        return []
    observed = np.abs(differences.mean(axis=1))
    totals = differences.sum(axis=1)
    rng = np.random.default_rng(seed)
    extreme = np.zeros(pairs, dtype=np.int64)
    for rows in _blocks(permutations, n):
        # One random bit per question: 1 flips the sign, so the permuted sum is total - 2 * (flipped part).
        flips = np.unpackbits(
            rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8), axis=1, count=n
        )
        permuted = np.abs(totals[None, :] - 2.0 * (flips.astype(float) @ differences.T)) / n
        extreme += np.count_nonzero(permuted >= observed[None, :] - _TIE_TOLERANCE, axis=0)
    return [float((1 + e) / (1 + permutations)) for e in extreme]


@dataclass(frozen=True)
class PairwiseResult:
    """One pair of configurations compared over the same questions; ``difference`` is ``mean_a - mean_b``."""

    label_a: str
    label_b: str
    mean_a: float
    mean_b: float
    difference: float
    p_value: float
    significant: bool


def pairwise_comparisons(
    per_label: Mapping[str, Sequence[float] | np.ndarray],
    *,
    alpha: float = 0.05,
    permutations: int = 10000,
    seed: int = 0,
) -> list[PairwiseResult]:
    """Run ``paired_randomization_test`` for every pair of labels, in input order ((a, b), (a, c), (b, c), ...).

    Each label's scores must be over the same questions in the same order. ``significant`` is ``p_value < alpha``,
    per pair, with no correction for multiple comparisons (with many pairs, expect some false positives).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be between 0 and 1 (exclusive)")
    results = []
    for (label_a, a), (label_b, b) in itertools.combinations(per_label.items(), 2):
        p_value = paired_randomization_test(a, b, permutations=permutations, seed=seed)
        mean_a, mean_b = float(np.mean(a)), float(np.mean(b))
        results.append(
            PairwiseResult(label_a, label_b, mean_a, mean_b, mean_a - mean_b, p_value, p_value < alpha)
        )
    return results


class Aligned(NamedTuple, Generic[K]):
    """Scores of several runs on the questions they all have: ``matrix[run, question]`` follows ``keys``."""

    keys: list[K]
    matrix: np.ndarray
    dropped: int


def align_by_question(runs: Sequence[Mapping[K, float | None]]) -> Aligned[K]:
    """Keep only the questions every run scored, so paired tests compare like with like.

    ``runs`` are mappings of question key -> score; a score of None or NaN counts as not scored (a question the
    judge could not read is excluded, never a silent zero). Returns ``Aligned(keys, matrix, dropped)``: the
    common keys sorted, a float matrix of shape (len(runs), len(keys)) with one row per run in input order, and
    how many questions some but not all runs scored. No runs give empty keys, a (0, 0) matrix and 0 dropped.
    """
    scored = [
        {key for key, value in run.items() if value is not None and not math.isnan(value)} for run in runs
    ]
    if not scored:
        return Aligned([], np.zeros((0, 0)), 0)
    common = set.intersection(*scored)
    keys = sorted(common)
    matrix = np.array([[run[key] for key in keys] for run in runs], dtype=float).reshape(len(runs), len(keys))
    return Aligned(keys, matrix, len(set.union(*scored)) - len(common))


def latency_summary(latencies_ms: Sequence[float]) -> dict[str, float] | None:
    """p50, p95, p99 (numpy's linear interpolation between order statistics), mean and max of call latencies
    in milliseconds, rounded to the microsecond; None when there are none."""
    if not len(latencies_ms):
        return None
    values = np.asarray(latencies_ms, dtype=np.float64)
    p50, p95, p99 = np.percentile(values, [50, 95, 99]).tolist()
    return {
        "p50": round(p50, 3),
        "p95": round(p95, 3),
        "p99": round(p99, 3),
        "mean": round(float(values.mean()), 3),
        "max": round(float(values.max()), 3),
        "count": int(len(values)),
    }
