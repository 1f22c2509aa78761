"""How well a judge agrees with people: the measures of a calibration report (issue 15). Numpy only: no Django.

Labels are human verdicts, True for pass; scores are a judge's continuous scores (higher: more likely to pass).
- ``roc_auc``: the probability that a random passing item scores above a random failing one, ties counting
  half (the Mann-Whitney U statistic over n_pass x n_fail);
- ``confusion`` / ``balanced_accuracy``: a verdict at a threshold (score >= threshold passes) against labels;
- ``cohen_kappa``: agreement of two raters on categories beyond chance, (p_o - p_e) / (1 - p_e);
- ``fleiss_kappa``: agreement of a fixed number of raters per item (a count matrix, items x categories);
- ``krippendorff_alpha``: nominal alpha for any number of raters with missing ratings (None), from the
  coincidence matrix, 1 - D_o / D_e;
- ``reliability_bins``: scores binned, each bin's mean score beside its human pass rate;
- ``best_threshold``: the threshold maximising balanced accuracy (midpoints between distinct scores), with a
  percentile bootstrap interval over items for a seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _arrays(scores: Sequence[float], labels: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError("scores and labels must be two lists of the same length")
    if np.isnan(s).any():
        raise ValueError("a NaN score cannot be ranked")
    return s, y


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given their average rank."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=np.float64)
    sorted_values = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """AUC of the scores against the labels; None when either class is absent (it is undefined then)."""
    s, y = _arrays(scores, labels)
    positives, negatives = int(y.sum()), int((~y).sum())
    if not positives or not negatives:
        return None
    ranks = _ranks(s)
    u = ranks[y].sum() - positives * (positives + 1) / 2
    return float(u / (positives * negatives))


@dataclass(frozen=True)
class Confusion:
    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def specificity(self) -> float | None:
        return self.tn / (self.tn + self.fp) if self.tn + self.fp else None

    @property
    def balanced_accuracy(self) -> float | None:
        if self.recall is None or self.specificity is None:
            return None
        return (self.recall + self.specificity) / 2


def confusion(scores: Sequence[float], labels: Sequence[bool], threshold: float) -> Confusion:
    s, y = _arrays(scores, labels)
    predicted = s >= threshold
    return Confusion(
        tp=int((predicted & y).sum()),
        fp=int((predicted & ~y).sum()),
        tn=int((~predicted & ~y).sum()),
        fn=int((~predicted & y).sum()),
    )


def balanced_accuracy(scores: Sequence[float], labels: Sequence[bool], threshold: float) -> float | None:
    return confusion(scores, labels, threshold).balanced_accuracy


def cohen_kappa(first: Sequence, second: Sequence) -> float | None:
    """Cohen's kappa of two raters' categories (any hashable values); None when chance agreement is total."""
    if len(first) != len(second) or not first:
        raise ValueError("two non-empty lists of the same length")
    categories = sorted(set(first) | set(second), key=repr)
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    expected = sum((list(first).count(c) / n) * (list(second).count(c) / n) for c in categories)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa from a matrix of items x categories, each row the raters' counts (same total per row)."""
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2 or not len(table):
        raise ValueError("a matrix of items x categories")
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError("every item needs the same number of raters, at least 2")
    n, r = len(table), raters[0]
    p_items = ((table * table).sum(axis=1) - r) / (r * (r - 1))
    p_bar = p_items.mean()
    shares = table.sum(axis=0) / (n * r)
    p_e = float((shares * shares).sum())
    if p_e == 1:
        return None
    return float((p_bar - p_e) / (1 - p_e))


def krippendorff_alpha(ratings: Sequence[Sequence[object | None]], metric: str = "nominal") -> float | None:
    """Krippendorff's alpha; `ratings` is items x raters, None for a missing rating. Items with fewer than two
    ratings are not pairable and are left out. None when there is no disagreement to expect.

    `metric` is how far apart two values are: "nominal" (any two different values, equally), "interval"
    (numbers: their squared difference) or "ordinal" (ranked values: the squared count of values between them,
    Krippendorff's ordinal difference, for relevance grades)."""
    values: list[list[object]] = [[v for v in item if v is not None] for item in ratings]
    values = [item for item in values if len(item) >= 2]
    if not values:
        return None
    categories = sorted({v for item in values for v in item}, key=repr)
    if metric != "nominal":
        categories = sorted({v for item in values for v in item})  # type: ignore[type-var]
    index = {c: i for i, c in enumerate(categories)}
    coincidence = np.zeros((len(categories), len(categories)))
    for item in values:
        m = len(item)
        for a in range(m):
            for b in range(m):
                if a != b:
                    coincidence[index[item[a]], index[item[b]]] += 1 / (m - 1)
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    delta = _differences(categories, n_c, metric)
    observed = float((coincidence * delta).sum())
    expected = float((np.outer(n_c, n_c) * delta).sum()) / (n - 1)
    if expected == 0:
        return None
    return float(1 - observed / expected)


def _differences(categories: Sequence, n_c: np.ndarray, metric: str) -> np.ndarray:
    """The squared difference of every pair of categories under the metric."""
    k = len(categories)
    if metric == "nominal":
        return 1.0 - np.eye(k)
    if metric == "interval":
        numbers = np.asarray(categories, dtype=np.float64)
        return (numbers[:, None] - numbers[None, :]) ** 2
    if metric == "ordinal":
        delta = np.zeros((k, k))
        for i in range(k):
            for j in range(k):
                low, high = min(i, j), max(i, j)
                between = n_c[low : high + 1].sum() - (n_c[low] + n_c[high]) / 2
                delta[i, j] = between**2
        return delta
    raise ValueError(f"unknown metric {metric!r}: nominal, interval or ordinal")


def weighted_kappa(first: Sequence[int], second: Sequence[int], categories: Sequence[int]) -> float | None:
    """Cohen's kappa with quadratic weights for two raters' ordered grades (each one of `categories`, in order):
    1 - sum(w * observed) / sum(w * expected), w = (i - j)^2 / (k - 1)^2. None when chance disagreement is nil."""
    if len(first) != len(second) or not first:
        raise ValueError("two non-empty lists of the same length")
    k = len(categories)
    index = {c: i for i, c in enumerate(categories)}
    observed = np.zeros((k, k))
    for a, b in zip(first, second, strict=True):
        observed[index[a], index[b]] += 1
    observed /= len(first)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    ranks = np.arange(k, dtype=np.float64)
    weights = (ranks[:, None] - ranks[None, :]) ** 2 / max(1, (k - 1) ** 2)
    chance = float((weights * expected).sum())
    if chance == 0:
        return None
    return 1.0 - float((weights * observed).sum()) / chance


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    count: int
    mean_score: float | None
    pass_rate: float | None


def reliability_bins(scores: Sequence[float], labels: Sequence[bool], bins: int = 10) -> list[Bin]:
    """Equal-width bins over [0, 1] (the last one closed): each bin's item count, mean score and the share of its
    items people passed (None for an empty bin)."""
    s, y = _arrays(scores, labels)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, bins - 1)
    out = []
    for b in range(bins):
        inside = which == b
        count = int(inside.sum())
        out.append(
            Bin(
                float(edges[b]),
                float(edges[b + 1]),
                count,
                float(s[inside].mean()) if count else None,
                float(y[inside].mean()) if count else None,
            )
        )
    return out


@dataclass(frozen=True)
class Threshold:
    value: float
    balanced_accuracy: float
    low: float  # the bootstrap interval of the best threshold
    high: float


def _best(s: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(threshold, balanced accuracy) of the best cut, every cut scored at once: with the scores sorted, the
    items passing a cut at the k-th distinct score are those from its first index on (cumulative counts)."""
    order = np.argsort(s, kind="mergesort")
    ordered, passing = s[order], y[order]
    distinct, first = np.unique(ordered, return_index=True)
    positives, negatives = passing.sum(), (~passing).sum()
    below_pass = np.concatenate([[0], np.cumsum(passing)])[
        first
    ]  # positives scoring under each distinct value
    below_fail = first - below_pass
    # cuts: at each distinct score (its midpoint with the one below; the lowest passes everything), then above all
    true_pos = np.concatenate([positives - below_pass, [0]])
    true_neg = np.concatenate([below_fail, [negatives]])
    accuracy = (true_pos / positives + true_neg / negatives) / 2
    cuts = np.concatenate(
        [[distinct[0]], (distinct[:-1] + distinct[1:]) / 2, [np.nextafter(distinct[-1], np.inf)]]
    )
    k = int(np.argmax(accuracy))  # the first (lowest) best cut
    return float(cuts[k]), float(accuracy[k])


def best_threshold(
    scores: Sequence[float],
    labels: Sequence[bool],
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Threshold | None:
    """The threshold maximising balanced accuracy (the lowest such, between distinct scores), with a percentile
    bootstrap interval over items; None when either class is absent."""
    s, y = _arrays(scores, labels)
    if not y.any() or y.all():
        return None
    value, score = _best(s, y)
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(resamples):
        pick = rng.integers(0, len(s), len(s))
        if y[pick].any() and not y[pick].all():
            found.append(_best(s[pick], y[pick])[0])
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(found, [tail, 100 - tail]).tolist() if found else (value, value)
    return Threshold(value, score, float(low), float(high))


def roc_points(scores: Sequence[float], labels: Sequence[bool]) -> list[tuple[float, float]]:
    """The ROC curve as (false positive rate, true positive rate) points, from (0, 0) to (1, 1), one point per
    distinct score (tied items move together); [] when either class is absent."""
    s, y = _arrays(scores, labels)
    positives, negatives = int(y.sum()), int((~y).sum())
    if not positives or not negatives:
        return []
    order = np.argsort(-s, kind="mergesort")
    ordered, passing = s[order], y[order]
    last = np.r_[np.nonzero(np.diff(ordered))[0], len(ordered) - 1]  # the last index of each distinct score
    tp = np.cumsum(passing)[last]
    fp = (last + 1) - tp
    return [(0.0, 0.0), *zip((fp / negatives).tolist(), (tp / positives).tolist(), strict=True)]


def rounded(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def judge_agreement(
    scores: Sequence[float], labels: Sequence[bool], threshold: float, *, seed: int = 0
) -> dict:
    """A judge against people on one metric: n, AUC of the continuous score, the verdict at `threshold`
    (confusion, precision, recall, balanced accuracy, Cohen's kappa with the people's label), the reliability
    bins, the ROC points and the best balanced-accuracy threshold with its bootstrap interval. JSON-ready."""
    s, y = [float(v) for v in scores], [bool(v) for v in labels]
    cut = confusion(s, y, threshold)
    verdicts = [v >= threshold for v in s]
    best = best_threshold(s, y, seed=seed) if len(s) else None
    return {
        "n": int(len(s)),
        "positives": sum(y),
        "auc": rounded(roc_auc(s, y)) if len(s) else None,
        "threshold": threshold,
        "confusion": {"tp": cut.tp, "fp": cut.fp, "tn": cut.tn, "fn": cut.fn},
        "precision": rounded(cut.precision),
        "recall": rounded(cut.recall),
        "balanced_accuracy": rounded(cut.balanced_accuracy),
        "cohen_kappa": rounded(cohen_kappa(verdicts, y)) if len(s) else None,
        "reliability": [
            {
                "low": b.low,
                "high": b.high,
                "count": b.count,
                "mean_score": rounded(b.mean_score),
                "pass_rate": rounded(b.pass_rate),
            }
            for b in reliability_bins(s, y)
        ],
        "roc": [[round(x, 6), round(t, 6)] for x, t in roc_points(s, y)],
        "best_threshold": None
        if best is None
        else {
            "value": round(best.value, 6),
            "balanced_accuracy": round(best.balanced_accuracy, 4),
            "low": round(best.low, 6),
            "high": round(best.high, 6),
        },
    }


def rater_agreement(items: Sequence[Sequence[object | None]]) -> dict:
    """The raters' agreement with each other over items x raters (None: not rated): Krippendorff's alpha over
    every item two or more rated, and Fleiss' kappa when every such item has the same number of raters."""
    rated = [[v for v in item if v is not None] for item in items]
    pairable = [item for item in rated if len(item) >= 2]
    fleiss = None
    if pairable and len({len(item) for item in pairable}) == 1:
        categories = sorted({v for item in pairable for v in item}, key=repr)
        fleiss = fleiss_kappa([[item.count(c) for c in categories] for item in pairable])
    return {
        "items": len(rated),
        "items_rated_twice": len(pairable),
        "krippendorff_alpha": rounded(krippendorff_alpha(items)),
        "fleiss_kappa": rounded(fleiss),
    }
