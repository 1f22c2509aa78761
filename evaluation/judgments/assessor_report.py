"""Every machine relevance assessor of a collection against its people: on each (question, document) both graded,
in any pool or from clicks, the machine's grade against the people's combined grade (their median,
evaluation.judgments.grades.combine). The calibration report shows it beside the answer judges'."""

from __future__ import annotations

from evaluation.judgments.grades import combine, is_machine
from evaluation.judgments.rater_agreement import machine_agreement
from evaluation.models import RelevanceJudgment
from goldenset.models import Collection


def assessors_against_people(collection: Collection) -> list[dict]:
    """Per machine rater (sorted): items both graded, confusion matrix, weighted kappa, same grade per grade."""
    people: dict[tuple, list[int | None]] = {}
    machines: dict[str, dict[tuple, int | None]] = {}
    rows = RelevanceJudgment.objects.filter(collection=collection).values_list(
        "entry_id", "document_id", "rater", "grade"
    )
    for entry_id, document_id, rater, grade in rows.iterator(2000):
        pair = (entry_id, document_id)
        if is_machine(rater):
            machines.setdefault(rater, {})[pair] = grade
        else:
            people.setdefault(pair, []).append(grade)
    combined = {pair: combine(grades).grade for pair, grades in people.items()}
    return [
        machine_agreement(rater, [(combined.get(pair), grade) for pair, grade in graded.items()])
        for rater, graded in sorted(machines.items())
    ]
