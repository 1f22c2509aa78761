"""Which item of a pool a rater gets next: the one they were given and have not judged, else the next in MaxMean's
order as judgments come in (evaluation.judgments.pooling.AdaptiveOrder), or in the pool's fixed order; never to
more raters than the pool asks for, never twice to one rater, whatever the race."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Collection

from django.db import transaction
from django.db.models import Count

from evalsite.errors import EvalsiteError
from evaluation.judgments.grades import MACHINE_PREFIXES, combine
from evaluation.judgments.pooling import AdaptiveOrder, PoolCandidate
from evaluation.judgments.pools import person_rater_error
from evaluation.models import JudgmentPool, PoolAssignment, PoolItem, RelevanceJudgment


def pool_next(*, pool: JudgmentPool, rater: str, skipped: Collection[int] = ()) -> PoolItem | None:
    """The item this rater should judge next: the one they were given and have not judged yet, else the next in
    the pool's order (MaxMean's as judgments come in, or the fixed one) that fewer than `raters_per_item` raters
    were given and this rater never was (None when there is none left for them). Two raters asking at once never take one place twice: each counts an item's
    raters with the item's row locked, and the one that finds the places taken goes on to the next item.

    `skipped`: the positions of items the rater passed over (the workspace's skip: nothing recorded). They stay
    theirs, and come back, first skipped first, only when nothing else is left for them."""
    if (error := person_rater_error(rater)) is not None:
        raise EvalsiteError("validation-error", f"rater: {error}.", details={"field": "rater"})
    open_ones = (
        PoolItem.objects.filter(pool=pool, assignments__rater=rater)
        .exclude(pk__in=_items_judged_by(pool, rater))
        .order_by("position")
    )
    if (open_one := open_ones.exclude(position__in=list(skipped)).first()) is not None:
        return open_one
    if (new := _next_new(pool, rater)) is not None:
        return new
    back = {item.position: item for item in open_ones}
    return next((back[p] for p in skipped if p in back), None)


def _next_new(pool: JudgmentPool, rater: str) -> PoolItem | None:
    """The next item nobody gave this rater, taken for them (None when none is left)."""
    for _ in range(20):  # each pass loses at most a race or two
        if pool.adaptive and (ranked := _adaptive_candidates(pool, rater)) is not None:
            candidates = ranked  # MaxMean's next few, computed once for every race this pass may lose
        else:
            first = _fixed_next(pool, rater)
            candidates = [] if first is None else [first.pk]
        if not candidates:
            return None
        for pk in candidates:
            if (item := _take(pool, pk, rater)) is not None:
                return item
    return None


def _take(pool: JudgmentPool, pk: int, rater: str) -> PoolItem | None:
    """The item given to this rater, or None when its places were taken (or it was theirs) meanwhile."""
    with transaction.atomic():
        # The item's row locked (PostgreSQL; SQLite's transactions are IMMEDIATE, one writer at a time), so the
        # count below sees every assignment committed before this one.
        locked = PoolItem.objects.select_for_update().get(pk=pk)
        given = PoolAssignment.objects.filter(item=locked)
        if given.count() >= pool.raters_per_item or given.filter(rater=rater).exists():
            return None  # another rater took the last place first
        PoolAssignment.objects.create(item=locked, rater=rater)
    return locked


def _fixed_next(pool: JudgmentPool, rater: str) -> PoolItem | None:
    """The first item in the pool's fixed order that fewer raters than it asks for were given, never this one."""
    return (
        pool.items.annotate(given=Count("assignments"))
        .filter(given__lt=pool.raters_per_item)
        .exclude(assignments__rater=rater)
        .order_by("position")
        .first()
    )


CANDIDATES = 10  # MaxMean's next items tried in turn when raters race for the first


def _adaptive_candidates(pool: JudgmentPool, rater: str) -> list[int] | None:
    """MaxMean's next items for this rater, best first (evaluation.judgments.pooling.AdaptiveOrder), over the
    people's combined grades so far (a grade of 1 or more is relevant; "cannot judge" is no judgment), among the
    items fewer raters than the pool asks for were given, never this one; None for a pool made before items kept
    their runs' ranks (the fixed order serves it)."""
    rows, place, order = _skeleton(pool)
    if order is None:
        return None
    grades: dict[int, list[int | None]] = {}
    people = RelevanceJudgment.objects.filter(pool=pool)
    for prefix in MACHINE_PREFIXES:
        people = people.exclude(rater__startswith=prefix)
    for entry_id, document_id, grade in people.values_list("entry_id", "document_id", "grade"):
        if (n := place.get((str(entry_id), document_id))) is not None:
            grades.setdefault(n, []).append(grade)
    given = Counter(PoolAssignment.objects.filter(item__pool=pool).values_list("item_id", flat=True))
    for n, found in grades.items():
        combined = combine(found).grade
        if combined is not None:  # still offered while the pool wants more raters for it
            order.record(n, combined >= 1, finished=given[rows[n][0]] >= pool.raters_per_item)
    mine = set(PoolAssignment.objects.filter(item__pool=pool, rater=rater).values_list("item_id", flat=True))
    unavailable = {n for n, (pk, *_) in enumerate(rows) if given[pk] >= pool.raters_per_item or pk in mine}
    return [rows[n][0] for n in order.ranked(unavailable, CANDIDATES)]


_SKELETONS: dict = {}  # pool id -> its items (never change once made), read once per process
_SKELETONS_KEPT = 16
_SKELETONS_LOCK = threading.Lock()  # a server's threads share it


def _skeleton(pool: JudgmentPool) -> tuple[list[tuple[int, str, str]], dict, AdaptiveOrder | None]:
    """The pool's items (pk, entry id, document id) in their fixed order, each (entry id, document id)'s place
    among them, and a fresh AdaptiveOrder over them."""
    with _SKELETONS_LOCK:
        cached = _SKELETONS.get(pool.pk)
    if cached is None:
        found = list(pool.items.order_by("position").values_list("pk", "entry_id", "document_id", "ranks"))
        rows = [(pk, str(entry_id), document_id) for pk, entry_id, document_id, _ in found]
        candidates = None
        if found and all(ranks for *_, ranks in found):
            candidates = [
                PoolCandidate(
                    str(entry_id), document_id, 0.0, len(ranks), 0, tuple(tuple(pair) for pair in ranks)
                )
                for _, entry_id, document_id, ranks in found
            ]
        place = {(entry_id, document_id): n for n, (_, entry_id, document_id) in enumerate(rows)}
        cached = (rows, place, candidates)
        with _SKELETONS_LOCK:
            while len(_SKELETONS) >= _SKELETONS_KEPT:
                _SKELETONS.pop(next(iter(_SKELETONS)))
            _SKELETONS[pool.pk] = cached
    rows, place, candidates = cached
    return rows, place, (AdaptiveOrder(candidates) if candidates is not None else None)


def _items_judged_by(pool: JudgmentPool, rater: str) -> list[int]:
    pairs = set(
        RelevanceJudgment.objects.filter(pool=pool, rater=rater).values_list("entry_id", "document_id")
    )
    mine = PoolItem.objects.filter(pool=pool, assignments__rater=rater)
    return [
        pk
        for pk, entry_id, document_id in mine.values_list("pk", "entry_id", "document_id")
        if (entry_id, document_id) in pairs
    ]
