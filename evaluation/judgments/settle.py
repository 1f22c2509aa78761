"""The items of a pool its raters split on, and a curator's grade settling each.

A split is an item two people graded `grades.split_at(scale)` or more apart on the collection's scale (2; 1 on
binary), every grade taken on that scale (grades.grade_on). A curator settles it with a grade of their own,
stored as their judgment of the item, rater "settled-by:user:<name>" (so that a curator who rated the item keeps
their rating), with detail {"settles": true} (pools.judgments_record), audited like any judgment; the pool's apply then takes that grade for the item instead of the raters' median
(apply.pool_grades). A settling grade is no rater's work: progress and agreement leave it out.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalsite.errors import EvalsiteError
from evaluation.judgments.grades import (
    SETTLER_PREFIX,
    combine,
    grade_on,
    is_machine,
    is_settlement,
    settler,
    split_at,
)
from evaluation.judgments.pools import JudgmentRow, judgments_record
from evaluation.models import JudgmentPool, PoolItem, RelevanceJudgment
from goldenset.services.scales import collection_scale


@dataclass(frozen=True)
class Split:
    item: PoolItem
    grades: dict[str, int]  # person -> their grade on the collection's scale, by name
    combined: int  # the raters' median, which apply would take without a settlement
    settled: int | None  # the curator's settling grade, if any
    settled_by: str


def pool_splits(pool: JudgmentPool, *, settled_too: bool = True) -> list[Split]:
    """The items people split on, in the pool's order, with each person's grade; settled ones too unless
    `settled_too` is False."""
    scale = collection_scale(pool.collection)
    people: dict[tuple, dict[str, int | None]] = {}
    settlements: dict[tuple, tuple[int | None, str]] = {}
    rows = RelevanceJudgment.objects.filter(pool=pool).order_by("updated_at", "id")
    for entry_id, document_id, rater, grade, detail in rows.values_list(
        "entry_id", "document_id", "rater", "grade", "detail"
    ):
        if is_settlement(detail):
            settlements[(entry_id, document_id)] = (
                grade_on(grade, detail, scale),
                rater.removeprefix(SETTLER_PREFIX),
            )
        elif not is_machine(rater) and grade is not None:
            people.setdefault((entry_id, document_id), {})[rater] = grade_on(grade, detail, scale)
    apart = split_at(scale)
    split_pairs = {pair for pair, grades in people.items() if combine(list(grades.values()), apart).split}
    if not split_pairs:
        return []
    found = []
    for item in pool.items.filter(entry_id__in={e for e, _ in split_pairs}).select_related("entry"):
        pair = (item.entry_id, item.document_id)
        if pair not in split_pairs:
            continue
        settled, by = settlements.get(pair, (None, ""))
        if settled is not None and not settled_too:
            continue
        grades = {rater: grade for rater, grade in sorted(people[pair].items()) if grade is not None}
        found.append(Split(item, grades, combine(list(grades.values()), apart).grade or 0, settled, by))
    return sorted(found, key=lambda s: s.item.position)


def split_settle(*, pool: JudgmentPool, position: int, grade: int, rater: str, actor: str) -> PoolItem:
    """The curator's (`rater`) settling grade of the split item at `position`; a 400 naming the field when the
    grade is not on the collection's scale or the item is no split."""
    scale = collection_scale(pool.collection)
    if grade not in scale:
        raise EvalsiteError(
            "validation-error",
            f"grade: {grade!r} is not a grade of the collection's {scale.name} scale "
            f"({', '.join(map(str, scale.grades))}).",
            details={"field": "grade"},
        )
    split = next((s for s in pool_splits(pool) if s.item.position == position), None)
    if split is None:
        raise EvalsiteError(
            "validation-error",
            f"position: no item the raters split on at {position}.",
            details={"field": "position"},
        )
    item = split.item
    row = JudgmentRow(
        "settlement", item.entry.key or str(item.entry_id), item.document_id, grade, settler(rater), ""
    )
    judgments_record(collection=pool.collection, rows=[row], actor=actor, pool=pool, settles=True)
    return item
