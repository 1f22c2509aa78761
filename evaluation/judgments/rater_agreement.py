"""How a rater's grades agree with others' on the documents both graded. Plain Python: no Django import.

Used by a pool's agreement report (evaluation.judgments.pools.pool_agreement) and by the click model's import
(evaluation.judgments.click_import): a person against another, a person against the others' combined grade, a
machine assessor against the people's combined grade.
"""

from __future__ import annotations

from evaluation.judgments.agreement import rounded, weighted_kappa
from evaluation.judgments.grades import GRADES, combine

__all__ = ["machine_agreement", "others_grade", "pair_agreement"]


def machine_agreement(machine: str, grades: list[tuple[int | None, int | None]]) -> dict:
    """A machine assessor against the people's combined grade, on the items both graded: the confusion matrix
    (rows: people's grade 0-3, columns: the machine's), weighted kappa, and per people's grade the share the
    machine gave the same grade."""
    both = [(a, b) for a, b in grades if a is not None and b is not None]
    matrix = [[0] * len(GRADES) for _ in GRADES]
    for people_grade, machine_grade in both:
        matrix[people_grade][machine_grade] += 1
    kappa = weighted_kappa([a for a, _ in both], [b for _, b in both], GRADES) if both else None
    return {
        "rater": machine,
        "items": len(both),
        "weighted_kappa": rounded(kappa),
        "confusion": matrix,
        "same_grade": {
            str(g): rounded(matrix[g][g] / sum(matrix[g])) if sum(matrix[g]) else None for g in GRADES
        },
    }


def others_grade(grades: dict[str, int | None], rater: str, people: list[str]) -> int | None:
    return combine([grades.get(r) for r in people if r != rater]).grade


def pair_agreement(first: str, second: str, grades: list[tuple[int | None, int | None]]) -> dict:
    both = [(a, b) for a, b in grades if a is not None and b is not None]
    kappa = weighted_kappa([a for a, _ in both], [b for _, b in both], GRADES) if both else None
    return {"raters": [first, second], "items": len(both), "weighted_kappa": rounded(kappa)}
