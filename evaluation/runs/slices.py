"""Subsets and slices of a golden set. Plain Python: no Django import.

A *subset* restricts which golden entries an evaluation asks (by tag, origin, review state): a run measures
only those, records the subset in its config, and its golden fingerprint is that of the questions it asked.

A *slice* is a part of the questions a run did ask (those carrying one tag, of one origin, answerable or not).
`breakdown` computes every metric's mean per slice once, when the run is written, so pages that list or compare
runs read the figures and never recompute them from the question results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from goldenset.vocabulary.golden_fields import GENERATED

# A subset's fields, as a request, a configuration and a stored run's `config.subset` name them.
SUBSET_KEYS: tuple[str, ...] = ("tags", "origin", "reviewed_only", "skip_unreviewed_generated")
# Slice kinds, in the order they are shown.
TAG, ORIGIN, ANSWERABLE = "tag", "origin", "answerable"


@dataclass(frozen=True)
class Subset:
    """Which golden entries an evaluation asks; the empty subset (the default) asks every one.

    `tags`: entries carrying any of them; `origins`: entries of any of these origins; `reviewed_only`: entries a
    person marked reviewed; `skip_unreviewed_generated`: leave out generated entries nobody has reviewed yet
    (manual and imported ones stay, reviewed or not), the switch for "measure on what people vouched for"
    without dropping hand-written questions. The restrictions combine with AND."""

    tags: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()
    reviewed_only: bool = False
    skip_unreviewed_generated: bool = False

    def __bool__(self) -> bool:
        """True when it restricts anything."""
        return bool(self.tags or self.origins or self.reviewed_only or self.skip_unreviewed_generated)

    def admits(self, tags: Iterable[str], origin: str, reviewed: bool) -> bool:
        """Whether an entry with these tags, origin and review state is in the subset."""
        if self.tags and not set(self.tags).intersection(tags):
            return False
        if self.origins and origin not in self.origins:
            return False
        if self.reviewed_only and not reviewed:
            return False
        return not (self.skip_unreviewed_generated and origin == GENERATED and not reviewed)

    def as_dict(self) -> dict:
        """The subset as a run's config records it (`config.subset`) and a request sends it."""
        return {
            "tags": list(self.tags),
            "origin": list(self.origins),
            "reviewed_only": self.reviewed_only,
            "skip_unreviewed_generated": self.skip_unreviewed_generated,
        }

    def label_parts(self) -> list[str]:
        """What a default label says of the subset: a restricted run is a series of its own in trends."""
        parts = []
        if self.tags:
            parts.append("tags:" + ",".join(self.tags))
        if self.origins:
            parts.append("origin:" + ",".join(self.origins))
        if self.reviewed_only:
            parts.append("reviewed_only")
        if self.skip_unreviewed_generated:
            parts.append("skip_unreviewed_generated")
        return parts

    def describe(self) -> str:
        """One line for messages: `tags faq, billing; origin Generated; reviewed only`."""
        parts = []
        if self.tags:
            parts.append("tags " + ", ".join(self.tags))
        if self.origins:
            parts.append("origin " + ", ".join(self.origins))
        if self.reviewed_only:
            parts.append("reviewed only")
        if self.skip_unreviewed_generated:
            parts.append("unreviewed generated entries left out")
        return "; ".join(parts) or "every entry"

    def first_field(self) -> str:
        """The request field an error about this subset names: the first restriction it has."""
        for key, value in zip(SUBSET_KEYS, self.as_dict().values(), strict=True):
            if value:
                return key
        return "tags"


EVERY = Subset()  # no restriction: every golden entry (the default of every subset argument)


# --- the per-slice breakdown ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SliceRow:
    """One scored question as the breakdown sees it: its slices and its metric values (a metric the question
    was excluded from is absent, never a 0)."""

    tags: Sequence[str]
    origin: str  # "" for a question that is no golden entry (a request's unanswerable question)
    answerable: bool
    values: Mapping[str, float]


def breakdown(rows: Sequence[SliceRow], *, by_answerable: bool) -> dict[str, dict[str, dict]]:
    """Every metric's mean per slice: {"tag": {tag: {"n": questions, metric: mean, ...}}, "origin": {...},
    "answerable": {"true": ..., "false": ...}} (the last only when `by_answerable`: answer runs).

    `n` counts the slice's questions; a metric's mean is over those that carry it, null when none does. A
    question with several tags counts in each of their slices; one without an origin is in no origin slice.
    Slices are in sorted order, metrics in the order the rows first name them."""
    names = list(dict.fromkeys(name for row in rows for name in row.values))
    groups: dict[str, dict[str, list[SliceRow]]] = {TAG: {}, ORIGIN: {}}
    if by_answerable:
        groups[ANSWERABLE] = {}
    for row in rows:
        for tag in dict.fromkeys(row.tags):
            groups[TAG].setdefault(tag, []).append(row)
        if row.origin:
            groups[ORIGIN].setdefault(row.origin, []).append(row)
        if by_answerable:
            groups[ANSWERABLE].setdefault("true" if row.answerable else "false", []).append(row)
    return {
        kind: {name: slice_means(members, names) for name, members in sorted(slices.items())}
        for kind, slices in groups.items()
    }


def slice_means(rows: Sequence[SliceRow], names: Sequence[str]) -> dict:
    """{"n": len(rows), name: mean of the rows' values (None when no row has one)} for each metric name."""
    out: dict = {"n": len(rows)}
    for name in names:
        values = [row.values[name] for row in rows if name in row.values]
        out[name] = sum(values) / len(values) if values else None
    return out


def slice_metric_names(slices: Mapping[str, Mapping[str, Mapping]]) -> list[str]:
    """The metric names a stored breakdown holds, in its order (`n` is no metric)."""
    return list(
        dict.fromkeys(
            name for kind in slices.values() for figures in kind.values() for name in figures if name != "n"
        )
    )
