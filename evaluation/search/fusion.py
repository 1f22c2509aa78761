"""Fusing two rankings of the same pages: reciprocal rank fusion and weighted score fusion."""

from __future__ import annotations

import numpy as np

RRF_K = 60


def rrf(rankings: list[np.ndarray], size: int, k: int = RRF_K) -> np.ndarray:
    """Reciprocal rank fusion (Cormack et al. 2009): score = sum over rankings of 1 / (k + rank), rank from 1.

    Each ranking is an array of page rows, best first; a page absent from a ranking gets nothing from it.
    Returns a score per page row (0 for pages in no ranking).
    """
    fused = np.zeros(size, dtype=np.float64)
    for ranking in rankings:
        fused[ranking] += 1.0 / (k + np.arange(1, len(ranking) + 1, dtype=np.float64))
    return fused


def weighted(candidates: list[tuple[np.ndarray, np.ndarray]], weights: list[float], size: int) -> np.ndarray:
    """Weighted score fusion: each list's scores min-max normalised to [0, 1] over its own candidates,
    then summed with the given weights. A page absent from a list gets 0 from it."""
    fused = np.zeros(size, dtype=np.float64)
    for (rows, scores), weight in zip(candidates, weights, strict=True):
        if len(rows) == 0:
            continue
        low, high = float(scores.min()), float(scores.max())
        normalised = (scores - low) / (high - low) if high > low else np.ones(len(scores))
        fused[rows] += weight * normalised
    return fused
