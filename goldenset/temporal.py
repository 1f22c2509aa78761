"""A document's temporal status at an instant: current, not_yet_valid, expired or superseded.

valid_until is inclusive (a date-only value was stored as the last instant of its day). A document is
superseded at an instant when a document that names it in `supersedes` has come into force by then (its
valid_from is unset or not after the instant); a successor that later expired still supersedes it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

CURRENT, NOT_YET_VALID, EXPIRED, SUPERSEDED = "current", "not_yet_valid", "expired", "superseded"
ALWAYS, NEVER = np.iinfo(np.int64).min, np.iinfo(np.int64).max  # an unset valid_from, an unset valid_until
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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


def has_temporal_data(documents: Sequence[Validity]) -> bool:
    return any(d.valid_from or d.valid_until or d.supersedes for d in documents)


def micros(value: datetime | None, unset: int) -> int:
    """An instant as whole microseconds since the epoch (exact: no float on the way); `unset` for None. A naive
    datetime is read as UTC."""
    if value is None:
        return unset
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return (aware - EPOCH) // timedelta(microseconds=1)


@dataclass(eq=False)
class TimeTable:
    """The validity of a corpus's documents: two arrays of a row each (16 bytes a document, whatever the
    collection's size, mapped from a saved index), the few supersessions, and the documents without pages that
    supersede some. What a time filter reads, with `statuses`' meaning: `visible` equals `statuses` at any
    instant (tests/evaluation/test_temporal.py), without a Python object per document."""

    valid_from: np.ndarray  # int64 microseconds since the epoch, ALWAYS when unset
    valid_until: np.ndarray  # int64 microseconds, inclusive, NEVER when unset
    supersedes: dict[int, tuple[str, ...]] = field(default_factory=dict)  # row -> the ids it names
    successors: list[Validity] = field(default_factory=list)
    # (superseding row, or -1-k for successors[k]; superseded row) for each name found among the rows
    pairs: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def of(cls, count: int, rows: Mapping[int, Validity], successors: Sequence[Validity] = ()) -> TimeTable:
        """The table of `count` documents, of which those in `rows` (row -> its Validity) have time data."""
        valid_from = np.full(count, ALWAYS, dtype=np.int64)
        valid_until = np.full(count, NEVER, dtype=np.int64)
        supersedes = {}
        for row, validity in rows.items():
            valid_from[row] = micros(validity.valid_from, ALWAYS)
            valid_until[row] = micros(validity.valid_until, NEVER)
            if validity.supersedes:
                supersedes[row] = tuple(validity.supersedes)
        return cls(valid_from, valid_until, supersedes, list(successors))

    def carried(
        self, old_rows: np.ndarray, fresh: Mapping[int, Validity], successors: Sequence[Validity]
    ) -> TimeTable:
        """The table of a new version whose row r is this table's row old_rows[r] (-1: a document read anew,
        its Validity in `fresh`)."""
        kept = old_rows >= 0
        table = TimeTable.of(len(old_rows), fresh, successors)
        table.valid_from[kept] = self.valid_from[old_rows[kept]]
        table.valid_until[kept] = self.valid_until[old_rows[kept]]
        if self.supersedes:
            new_row = np.full(len(self.valid_from), -1, dtype=np.int64)
            new_row[old_rows[kept]] = np.flatnonzero(kept)
            for row, names in self.supersedes.items():
                if new_row[row] >= 0:
                    table.supersedes[int(new_row[row])] = names
        return table

    @property
    def temporal(self) -> bool:
        """Whether any document has time data (without any, every document is always current)."""
        return bool(
            self.supersedes
            or has_temporal_data(self.successors)
            or (self.valid_from != ALWAYS).any()
            or (self.valid_until != NEVER).any()
        )

    def resolve(self, row_of: Callable[[Collection[str]], dict[str, int]], ids: Sequence[str]) -> None:
        """Find the rows of the ids the supersessions name (`row_of`: the rows of those found); `ids` gives a
        superseding row's own id, which it does not hide."""
        named = {name for names in self.supersedes.values() for name in names}
        named |= {name for s in self.successors for name in s.supersedes}
        found = row_of(named) if named else {}
        by, old = [], []
        for row, names in self.supersedes.items():
            own = ids[row]
            for name in names:
                if name in found and name != own:
                    by.append(row)
                    old.append(found[name])
        for k, successor in enumerate(self.successors):
            for name in successor.supersedes:
                if name in found and name != successor.document_id:
                    by.append(-1 - k)
                    old.append(found[name])
        self.pairs = (np.array(by, dtype=np.int64), np.array(old, dtype=np.int64))

    def visible(self, at: datetime, include_superseded: bool) -> np.ndarray:
        """Which documents search may return at `at`: current ones, plus superseded and expired ones when
        asked; never one not yet valid (at that instant it does not exist)."""
        if self.pairs is None:
            raise ValueError("TimeTable.visible before resolve")
        instant = micros(at, ALWAYS)
        shown = self.valid_from <= instant
        if include_superseded:
            return shown
        shown &= self.valid_until >= instant
        by, old = self.pairs
        if len(by):  # a superseded document is hidden once its successor is in force
            starts = np.empty(len(by), dtype=np.int64)
            mine = by >= 0
            starts[mine] = self.valid_from[by[mine]]
            if not mine.all():
                theirs = np.array([micros(s.valid_from, ALWAYS) for s in self.successors], dtype=np.int64)
                starts[~mine] = theirs[-1 - by[~mine]]
            shown[old[starts <= instant]] = False
        return shown

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TimeTable)
            and np.array_equal(self.valid_from, other.valid_from)
            and np.array_equal(self.valid_until, other.valid_until)
            and self.supersedes == other.supersedes
            and self.successors == other.successors
        )
