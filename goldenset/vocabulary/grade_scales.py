"""The grade scales a collection's relevance grades are given on. Plain Python: no Django import.

A collection declares one (goldenset.models.Collection.grade_scale): binary (0 not relevant, 1 relevant), 0-2,
0-3 (TREC deep learning's and UMBRELA's four levels, the judging workspace's scale before scales existed) or 0-4.
Every grade stored for it is on that scale, so a binary "relevant" is never read as the low grade of another
scale (an imported answer passage at 1 under a judged passage at 3 in nDCG's ideal ranking).

`converted` carries a grade from one scale to another:
- 0 stays 0 on every scale: judged not relevant stays judged not relevant.
- Onto binary, a grade is relevant (1) when it is above the middle of its scale (2 * grade > top), as TREC's
  deep-learning tracks binarize 0-3 (2 and 3 relevant; 1, "related, does not answer", not): 0-2 -> 2; 0-4 -> 3
  and 4.
- Otherwise a grade keeps its place on the scale, grade * target top / source top rounded half up, and a grade
  above 0 stays above 0. So binary 1 becomes the target's top: a binary qrel marks what answers the question
  (BEIR's and ClapNQ's answer passages), the best a document can be, and a passage judged later on the graded
  scale can equal it, never outrank it. 0-3 -> 0-4: 1, 3, 4; 0-4 -> 0-3: 1, 2, 2, 3; 0-2 -> 0-3: 2, 3.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "BINARY",
    "DEFAULT_SCALE",
    "SCALES",
    "SCALE_NAMES",
    "Scale",
    "converted",
    "scale_for_grades",
    "scale_named",
]


@dataclass(frozen=True)
class Scale:
    name: str  # "binary" | "0-2" | "0-3" | "0-4"
    meaning: dict[int, str]  # grade -> what it means

    @property
    def grades(self) -> tuple[int, ...]:
        return tuple(sorted(self.meaning))

    @property
    def top(self) -> int:
        return max(self.meaning)

    def __contains__(self, grade: object) -> bool:
        return isinstance(grade, int) and not isinstance(grade, bool) and grade in self.meaning

    def __hash__(self) -> int:
        return hash(self.name)


NOT_RELEVANT = "not relevant: nothing to do with the question"
BINARY = "binary"
SCALES: dict[str, Scale] = {
    BINARY: Scale(BINARY, {0: NOT_RELEVANT, 1: "relevant: answers the question, or part of it"}),
    "0-2": Scale(
        "0-2",
        {
            0: NOT_RELEVANT,
            1: "partially relevant: on the topic, or answers part of the question",
            2: "relevant: holds the answer to the question",
        },
    ),
    "0-3": Scale(
        "0-3",
        {
            0: NOT_RELEVANT,
            1: "related: on the topic, but does not answer the question",
            2: "relevant: answers part of the question, or answers it unclearly",
            3: "perfectly relevant: dedicated to the question, holds the exact answer",
        },
    ),
    "0-4": Scale(
        "0-4",
        {
            0: NOT_RELEVANT,
            1: "related: on the topic, but does not answer the question",
            2: "somewhat relevant: answers a small part of the question",
            3: "relevant: answers most of the question, or answers it unclearly",
            4: "perfectly relevant: dedicated to the question, holds the exact and whole answer",
        },
    ),
}
SCALE_NAMES: tuple[str, ...] = tuple(SCALES)  # smallest first
DEFAULT_SCALE = "0-3"


def scale_named(name: str) -> Scale:
    """The scale of that name; a ValueError naming the known ones for any other."""
    found = SCALES.get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"{name!r} is no grade scale; the scales are {', '.join(SCALE_NAMES)}")
    return found


def scale_for_grades(grades: Iterable[int]) -> Scale:
    """The smallest scale holding every grade given (binary for none, or only 0 and 1); a ValueError when no
    scale holds them (a negative grade, one above 4)."""
    given = set(grades)
    for scale in SCALES.values():
        if all(g in scale for g in given):
            return scale
    beyond = sorted((g for g in given if g not in SCALES["0-4"]), key=repr)
    raise ValueError(f"no grade scale holds {beyond[0]!r}; the scales are {', '.join(SCALE_NAMES)}")


def converted(grade: int, source: Scale, target: Scale) -> int:
    """`grade`, given on `source`, on `target` (the rule is the module's docstring). A ValueError when the grade
    is not on `source`."""
    if grade not in source:
        raise ValueError(f"{grade!r} is not a grade of the {source.name} scale ({_listed(source)})")
    if source.name == target.name or grade == 0:
        return grade
    if target.top == 1:
        return 1 if 2 * grade > source.top else 0
    placed = Fraction(grade * target.top, source.top) + Fraction(1, 2)
    return max(1, min(target.top, placed.numerator // placed.denominator))


def _listed(scale: Scale) -> str:
    return ", ".join(map(str, scale.grades))
