"""An answer evaluation as one value: the questions each configuration asks, and one pair per configuration and
question that the evaluation fills in (retrieved passages, then the answer, then its judgements) before the
pairs are stored as runs (evaluation.answers.answer_runs)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalsite.tenancy.models import Tenant
from evaluation.answers import judge, judge_votes
from evaluation.answers import writer as answer_writer
from evaluation.answers.configs import AnswerConfig
from evaluation.models import Target
from evaluation.runs import selectors
from evaluation.runs.selectors import GoldenQuestion
from evaluation.runs.slices import EVERY, Subset
from evaluation.runs.store import questions_in
from goldenset.models import Collection

MAX_UNANSWERABLE = 1000  # unanswerable questions a request may add (the API's and the dashboard's bound)


def answer_questions(
    collections: Sequence[Collection],
    unanswerable: Sequence[str],
    max_questions: int | None,
    *,
    subset: Subset = EVERY,
    golden: Sequence[GoldenQuestion] | None = None,
) -> tuple[list[GoldenQuestion], list[str]]:
    """The golden entries in the subset (in order, up to max_questions) and the request's unanswerable
    questions (always asked: the request names them); `golden` when the caller read the entries already."""
    questions = selectors.golden_questions(collections) if golden is None else list(golden)
    if questions:  # none at all is the caller's empty-golden-set, whatever the subset
        questions = questions_in(questions, subset, collections)
    warnings: list[str] = []
    if max_questions is not None and len(questions) > max_questions:
        warnings.append(
            f"max_questions: {max_questions} of the {len(questions)} golden entries were evaluated."
        )
        questions = questions[:max_questions]
    for text in unanswerable:
        questions.append(GoldenQuestion(None, "", collections[0].slug, text, {}, answerable=False))
    return questions, warnings


def answers_fingerprint(questions: Sequence[GoldenQuestion]) -> str:
    """The questions an answer run asked: two runs compare question by question only when theirs agree."""
    return hashlib.sha256(
        json.dumps(
            [[q.entry_id, q.question, q.reference, sorted(q.qrels), q.answerable] for q in questions]
        ).encode()
    ).hexdigest()


@dataclass
class AnswerPair:
    config_index: int
    question: GoldenQuestion
    keys: list[str]
    scores: list[float]
    passages: list[answer_writer.Passage]
    answer: answer_writer.Answer | None = None
    judged: dict[str, judge.Score] | None = None
    texts_missing: bool = False  # an answering target named passages without their texts: read, then judged


@dataclass
class AnswerBatch:
    """One answer evaluation, from its plan to its stored runs: what every configuration asks and with what
    (`models[i]` answers `configs[i]`; None: the extractive answer or a target), and one `AnswerPair` per
    configuration and question."""

    tenant: Tenant
    collections: Sequence[Collection]
    configs: list[AnswerConfig]
    models: list[str | None]
    judging: str | None  # the judge model; None: the heuristic judge
    sampling: judge_votes.JudgeSampling
    thresholds: dict[str, float]
    threshold_sources: dict[str, str]
    asked: dict[Subset, tuple[list[GoldenQuestion], list[str]]]  # per subset: its questions and warnings
    targets: dict[str, Target]
    pairs: list[AnswerPair] = field(default_factory=list)
    elapsed_ms: float = 0.0

    def pairs_of(self, index: int) -> list[AnswerPair]:
        return [p for p in self.pairs if p.config_index == index]
