"""Fusing two rankings of the same pages: reciprocal rank fusion and weighted score fusion.

Both work on the candidates alone (the union of the lists, a few hundred rows, never an array the size of the
collection) and return (rows ascending, fused scores).
"""

from __future__ import annotations

import numpy as np

RRF_K = 60


def _union(lists: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The rows of every list, ascending and once each, and each list's positions in that union."""
    rows = np.unique(np.concatenate([np.asarray(r, dtype=np.int64) for r in lists])) if lists else np.zeros(0)
    rows = rows.astype(np.int64)
    return rows, [np.searchsorted(rows, np.asarray(r, dtype=np.int64)) for r in lists]


def rrf(rankings: list[np.ndarray], k: int = RRF_K) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal rank fusion (Cormack et al. 2009): score = sum over rankings of 1 / (k + rank), rank from 1.

    Each ranking is an array of page rows, best first; a page absent from a ranking gets nothing from it.
    Returns (rows, fused scores) of the pages in any ranking, rows ascending."""
    rows, positions = _union(rankings)
    fused = np.zeros(len(rows), dtype=np.float64)
    for at in positions:  # added ranking by ranking, in order
        fused[at] += 1.0 / (k + np.arange(1, len(at) + 1, dtype=np.float64))
    return rows, fused


def weighted(
    candidates: list[tuple[np.ndarray, np.ndarray]], weights: list[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted score fusion: each list's scores min-max normalised to [0, 1] over its own candidates,
    then summed with the given weights. A page absent from a list gets 0 from it.

    Returns (rows, fused scores) of the pages in any list, rows ascending."""
    rows, positions = _union([list_rows for list_rows, _ in candidates])
    fused = np.zeros(len(rows), dtype=np.float64)
    for at, (_, scores), weight in zip(positions, candidates, weights, strict=True):
        if len(at) == 0:
            continue
        low, high = float(scores.min()), float(scores.max())
        normalised = (scores - low) / (high - low) if high > low else np.ones(len(scores))
        fused[at] += weight * normalised
    return rows, fused
