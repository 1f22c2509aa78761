"""How alike two rankings of one question are, without any judgment: overlap@k, Jaccard@k and rank-biased
overlap. Plain Python: no Django import.

A change to a configuration can be read before anyone judges what it finds: the share of the top k the two
rankings have in common (overlap@k), the same over their union (Jaccard@k), and rank-biased overlap (Webber,
Moffat and Zobel, "A similarity measure for indefinite rankings", TOIS 2010), which weighs agreement near the top
more: with persistence p, depth d counts p^(d-1) as much as depth 1 (p = 0.9: the top 10 carry 86% of the weight).
The RBO given is their extrapolated RBO_ext (eq. 32), which assumes the agreement seen at the lists' ends goes on:
1 for identical rankings, 0 for rankings with nothing in common.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["QuestionSimilarity", "jaccard_at", "overlap_at", "rankings_similarity", "rbo"]


def _top(ranking: Sequence[str], k: int) -> set[str]:
    if k < 1:
        raise ValueError(f"a cutoff must be a positive integer, got {k!r}")
    top = ranking[:k]
    if len(set(top)) != len(top):
        raise ValueError("a ranking lists a document more than once")
    return set(top)


def overlap_at(first: Sequence[str], second: Sequence[str], k: int) -> float:
    """The documents both top-k hold, over k."""
    return len(_top(first, k) & _top(second, k)) / k


def jaccard_at(first: Sequence[str], second: Sequence[str], k: int) -> float:
    """The documents both top-k hold, over those either holds; 1.0 when both are empty (nothing differs)."""
    a, b = _top(first, k), _top(second, k)
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def rbo(first: Sequence[str], second: Sequence[str], p: float = 0.9) -> float:
    """Extrapolated rank-biased overlap of two rankings (of any lengths, each without repeats), persistence p."""
    if not 0 < p < 1:
        raise ValueError(f"the persistence p is between 0 and 1, got {p!r}")
    if len(set(first)) != len(first) or len(set(second)) != len(second):
        raise ValueError("a ranking lists a document more than once")
    short, long = (first, second) if len(first) <= len(second) else (second, first)
    s, length = len(short), len(long)
    if length == 0:
        return 1.0  # two empty rankings: nothing differs
    if s == 0:
        return 0.0
    seen_short: set[str] = set()
    seen_long: set[str] = set()
    overlap = 0  # X_d: the documents the two prefixes of depth d share
    total = 0.0
    x_s = 0
    for d in range(1, length + 1):
        item_long = long[d - 1]
        if d <= s:
            item_short = short[d - 1]
            if item_short == item_long:
                overlap += 1
            else:
                overlap += (item_short in seen_long) + (item_long in seen_short)
            seen_short.add(item_short)
        else:
            overlap += item_long in seen_short
        seen_long.add(item_long)
        total += overlap / d * p**d
        if d == s:
            x_s = overlap
        if d > s:
            total += x_s * (d - s) / (s * d) * p**d
    return (1 - p) / p * total + ((overlap - x_s) / length + x_s / s) * p**length


@dataclass(frozen=True)
class QuestionSimilarity:
    question: str  # the question's key in the rankings given
    overlap: float  # overlap@k
    jaccard: float  # Jaccard@k
    rbo: float  # extrapolated RBO of the rankings cut at k


def rankings_similarity(
    first: Mapping[str, Sequence[str]], second: Mapping[str, Sequence[str]], k: int = 10, p: float = 0.9
) -> list[QuestionSimilarity]:
    """Per question both rankings answered (in `first`'s order), how alike their top k are; least alike first
    is the caller's sort."""
    return [
        QuestionSimilarity(
            question,
            overlap_at(ranking, second[question], k),
            jaccard_at(ranking, second[question], k),
            rbo(list(ranking[:k]), list(second[question][:k]), p),
        )
        for question, ranking in first.items()
        if question in second
    ]
