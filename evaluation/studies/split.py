"""A golden set cut in two with a seed: a tuning part the trials see and a confirmation part only the winner and
the baseline are scored on. Plain Python: no Django import.

Stratified by tag: the questions are grouped by their first tag (in sorted order; untagged ones together) and each
group gives the confirmation part its share, so a tag with few questions is on both sides rather than all on one.
Within a group the order is sha256(seed, key): the same seed and keys give the same split whatever order the
golden set is read in, and adding a question moves no other. The shares are rounded by largest remainder, so the
confirmation part has round(share x n) questions in all.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_PART = 2  # questions each part needs at least (a bootstrap interval of one question says nothing)


@dataclass(frozen=True)
class Split:
    tuning: tuple[str, ...]
    confirmation: tuple[str, ...]


def _order(seed: int, key: str) -> str:
    return hashlib.sha256(f"study-split:{seed}:{key}".encode()).hexdigest()


def split_questions(questions: Sequence[tuple[str, Sequence[str]]], *, share: float, seed: int) -> Split:
    """(tuning keys, confirmation keys) of questions given as (key, tags), `share` of them to confirmation.
    Raises ValueError when share is not in (0, 1), a key repeats, or either part would hold fewer than MIN_PART."""
    if not 0.0 < share < 1.0:
        raise ValueError("share must be between 0 and 1 (exclusive)")
    keys = [key for key, _ in questions]
    if len(set(keys)) != len(keys):
        raise ValueError("a question key repeats")
    total = round(share * len(keys))
    if total < MIN_PART or len(keys) - total < MIN_PART:
        raise ValueError(
            f"{len(keys)} questions split {1 - share:.0%} / {share:.0%} leave a part with fewer than {MIN_PART}"
        )
    groups: dict[str, list[str]] = {}
    for key, tags in questions:
        groups.setdefault(min(tags) if tags else "", []).append(key)
    ideal = {tag: share * len(members) for tag, members in groups.items()}
    counts = {tag: math.floor(value) for tag, value in ideal.items()}
    by_remainder = sorted(groups, key=lambda tag: (-(ideal[tag] - counts[tag]), tag))
    for tag in by_remainder[: total - sum(counts.values())]:
        counts[tag] += 1
    tuning: list[str] = []
    confirmation: list[str] = []
    for tag in sorted(groups):
        ordered = sorted(groups[tag], key=lambda key: _order(seed, key))
        confirmation.extend(ordered[: counts[tag]])
        tuning.extend(ordered[counts[tag] :])
    position = {key: i for i, key in enumerate(keys)}  # each part in the golden set's own order
    return Split(
        tuple(sorted(tuning, key=position.__getitem__)), tuple(sorted(confirmation, key=position.__getitem__))
    )
