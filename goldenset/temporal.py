"""A document's temporal status at an instant: current, not_yet_valid, expired or superseded.

valid_until is inclusive (a date-only value was stored as the last instant of its day). A document is
superseded at an instant when a document that names it in `supersedes` has come into force by then (its
valid_from is unset or not after the instant); a successor that later expired still supersedes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

CURRENT, NOT_YET_VALID, EXPIRED, SUPERSEDED = "current", "not_yet_valid", "expired", "superseded"


@dataclass(frozen=True)
class Validity:
    document_id: str
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    supersedes: tuple[str, ...] = ()


def statuses(documents: Sequence[Validity], at: datetime, successors: Sequence[Validity] = ()) -> list[str]:
    """The status of each document at `at` (an aware datetime).

    `successors` are further documents that only take part as superseders (say, ones with no pages to search).
    """
    everyone = [*documents, *successors]
    in_force = {d.document_id for d in everyone if d.valid_from is None or d.valid_from <= at}
    # A document naming itself (a new version sent under the old id "replacing" itself) does not hide itself.
    superseded = {
        old for d in everyone if d.document_id in in_force for old in d.supersedes if old != d.document_id
    }
    out = []
    for d in documents:
        if d.valid_from is not None and d.valid_from > at:
            out.append(NOT_YET_VALID)
        elif d.document_id in superseded:
            out.append(SUPERSEDED)
        elif d.valid_until is not None and d.valid_until < at:
            out.append(EXPIRED)
        else:
            out.append(CURRENT)
    return out


def visible_mask(
    documents: Sequence[Validity], at: datetime, include_superseded: bool, successors: Sequence[Validity] = ()
) -> np.ndarray:
    """Which documents search may return: current ones, plus superseded and expired ones when asked.

    A document not yet valid at the instant is never returned: at that instant it does not exist.
    """
    allowed = {CURRENT, SUPERSEDED, EXPIRED} if include_superseded else {CURRENT}
    return np.array([s in allowed for s in statuses(documents, at, successors)], dtype=bool)


def has_temporal_data(documents: Sequence[Validity]) -> bool:
    return any(d.valid_from or d.valid_until or d.supersedes for d in documents)
