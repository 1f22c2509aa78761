"""The diagnosis of a retrieval question, decided here and nowhere else: error (a target's failed call), miss (no
expected document retrieved), partial (some missed) or pass. It is not stored: a retrieval run's questions are
diagnosed when they are read (the run's page, its REST detail, its CSV and JUnit downloads, the CLI), from what
is stored (first relevant rank, missing documents, error). An answer question's diagnosis is its verdict's
(evaluation.answers.verdicts), stored with it, and passes through. Plain Python: no Django import."""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.answers.verdicts import ERROR, PASS

MISS, PARTIAL = "miss", "partial"
RETRIEVAL_DIAGNOSES = (PASS, PARTIAL, MISS, ERROR)
RETRIEVAL_DIAGNOSIS_MEANING = {
    PASS: "every expected document was retrieved",
    PARTIAL: "some expected documents were not retrieved",
    MISS: "no expected document was retrieved",
    ERROR: "the call failed: the question is left out of every mean",
}


def retrieval_diagnosis(
    stored: str, first_relevant_rank: int | None, missing: Sequence[str], error: str = ""
) -> str:
    """The run's own diagnosis when it made one (answer runs); for retrieval: error (a target's failed call),
    miss, partial or pass."""
    if stored:
        return stored
    if error:
        return ERROR
    if first_relevant_rank is None:
        return MISS
    return PARTIAL if missing else PASS
