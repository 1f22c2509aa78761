"""Answer evaluation, the pure part after the judge: pass or fail, diagnosis, and a run's summary.

Plain Python, no Django. Inputs are one `QuestionOutcome` per question (the judge's `Score`s, whether the
pipeline declined, what was retrieved); outputs are what a run stores.

Per question
- An answerable question passes when it was answered (not declined), every thresholded answer metric that has
  a value clears its threshold (defaults: faithfulness 0.6, answer relevancy 0.4), and retrieval did its part.
  Its diagnosis says what to fix, the seed's rule:
  `retrieval` when an expected (must-cite) document was not retrieved (`retrieval: expected document missed`,
  naming it) or nothing retrieved is relevant (context relevancy 0: `retrieval: nothing relevant retrieved`):
  this fails the question even when every score passes; `generation` when the right documents came back and
  the answer failed (`generation: unfaithful`, `generation: irrelevant answer`, `generation: false refusal`);
  `pass` otherwise. Context relevancy below its threshold (default 0.6) is said (`retrieval: mostly irrelevant
  context`, with the figure) but fails nothing on its own: it is the context's precision, and with one relevant
  page among top_k passages it cannot exceed 1/top_k however good the retrieval and the answer.
- An unanswerable question passes when the pipeline declined it; answering it is a `generation` failure (the
  passages on topic did not hold the answer, and the answer was written anyway).
- A question whose answer could not be produced (the model call failed) is `error`: it is left out of every
  mean and counted in a warning, never scored 0.
- Per-question mean: the mean of its metric values but context relevancy (reported as its own metric, kept out
  of the headline for the reason above); a false refusal counts 0 and an unanswerable question counts 1 when
  declined and 0 when answered, so the overall score (0-100, the mean of per-question means) sees refusal
  behaviour too.

Per run
- Each metric's mean is over the questions that have a value; the questions excluded from it are counted by
  reason ("not-applicable": nothing to judge, e.g. no reference answer or a declined answer; "unreadable": the
  judge's answer could not be read) and unreadable ones add a warning. A metric no question could be scored on
  is None, with a warning: never a 0 or a NaN.
- Refusal is measured both ways: refusal recall = declined unanswerable / unanswerable, false-refusal rate =
  declined answerable / answerable; both are always reported together (None when there is nothing to count).
- Mode: `heuristic` when no value was LLM-judged (a configured judge whose every call failed included),
  `llm-judge` when every value was, `mixed` otherwise. Each metric's method is labelled the same way.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evaluation.answers.judge import HEURISTIC, LLM_JUDGE, METRICS, Score
from goldenset import lexical

DEFAULT_THRESHOLDS: dict[str, float] = {
    "context_relevancy": 0.6,
    "faithfulness": 0.6,
    "answer_relevancy": 0.4,
}
# The diagnosis of an answer question, decided here (verdict) and nowhere else, in the order it is shown.
RETRIEVAL, GENERATION, PASS, ERROR = "retrieval", "generation", "pass", "error"
DIAGNOSES = (PASS, RETRIEVAL, GENERATION, ERROR)
DIAGNOSIS_MEANING = {
    PASS: "answered well from the right documents (or declined a question the collection cannot answer)",
    RETRIEVAL: "an expected document was not retrieved, or nothing retrieved was relevant",
    GENERATION: "the right documents came back and the answer fell short (or answered the unanswerable)",
    ERROR: "no answer could be written (the model call failed): left out of every mean",
}
SANITY_MIN_OVERLAP = 0.1  # reference-answer terms found in the retrieved context, below which we warn


@dataclass(frozen=True)
class QuestionOutcome:
    answerable: bool
    refused: bool
    scores: Mapping[str, Score]
    expected_ids: Sequence[str] = ()
    retrieved_ids: Sequence[str] = ()
    answer_error: str | None = None


@dataclass(frozen=True)
class Verdict:
    diagnosis: str  # RETRIEVAL | GENERATION | PASS | ERROR
    passed: bool | None  # None: could not be judged (ERROR)
    reasons: tuple[str, ...]
    mean: float | None  # the per-question mean that enters the overall score


# The answer metrics a question fails on; context relevancy is retrieval precision: a note, never a failure.
ANSWER_FAILURES = {
    "faithfulness": "unfaithful",
    "answer_relevancy": "irrelevant answer",
}


def judge_outcome(outcome: QuestionOutcome, thresholds: Mapping[str, float]) -> Verdict:
    """Pass or fail, the diagnosis and the reasons of one question (the rules are in the module docstring);
    each reason says which failure it is in the words of its evidence, e.g. `retrieval: expected document
    missed: refunds` or `generation: unfaithful (faithfulness 0.40 < 0.6)`."""
    if outcome.answer_error is not None:
        return Verdict(ERROR, None, (f"no answer: {outcome.answer_error}",), None)
    if not outcome.answerable:
        if outcome.refused:
            return Verdict(PASS, True, ("declined an unanswerable question",), 1.0)
        return Verdict(GENERATION, False, ("generation: answered an unanswerable question",), 0.0)
    reasons: list[str] = []
    retrieved = set(outcome.retrieved_ids)
    missing = [d for d in outcome.expected_ids if d not in retrieved]
    if missing:
        reasons.append("retrieval: expected document missed: " + ", ".join(missing[:5]))
    relevancy = outcome.scores.get("context_relevancy")
    if relevancy is not None and relevancy.value == 0.0:
        reasons.append("retrieval: nothing relevant retrieved")
    retrieval_failed = bool(reasons)
    if outcome.refused:
        reasons.append(
            "generation: false refusal" if not retrieval_failed else "declined an answerable question"
        )
        return Verdict(RETRIEVAL if retrieval_failed else GENERATION, False, tuple(reasons), 0.0)
    answer_below = []
    for name, score in outcome.scores.items():
        if name not in thresholds or score.value is None or score.value >= thresholds[name]:
            continue
        figure = f"{name.replace('_', ' ')} {score.value:.2f} < {thresholds[name]:g}"
        if name == "context_relevancy":  # precision of the context: said, but it fails nothing on its own
            reasons.append(f"retrieval: mostly irrelevant context (precision: {figure})")
        else:
            answer_below.append(f"generation: {ANSWER_FAILURES.get(name, 'below threshold')} ({figure})")
    reasons.extend(answer_below)
    # The per-question mean that enters the headline score leaves context relevancy out: with one relevant
    # page among top_k passages it cannot pass 1/top_k, whatever the answer (docs/evaluation.md, "Answer evaluation").
    values = [
        s.value for name, s in outcome.scores.items() if s.value is not None and name != "context_relevancy"
    ]
    mean = sum(values) / len(values) if values else None
    if retrieval_failed:
        return Verdict(RETRIEVAL, False, tuple(reasons), mean)
    if answer_below:
        return Verdict(GENERATION, False, tuple(reasons), mean)
    return Verdict(PASS, True, tuple(reasons), mean)


def sanity_warning(reference: str, context_texts: Sequence[str]) -> str | None:
    """The golden-set check: a reference answer sharing almost no vocabulary with the retrieved context is
    worth a human look (it never fails the question)."""
    terms = lexical.content_terms(reference)
    if not terms:
        return None
    overlap = lexical.coverage(terms, [t for text in context_texts for t in lexical.content_terms(text)])
    if overlap < SANITY_MIN_OVERLAP:
        return (
            f"golden-set check: the reference answer shares almost no vocabulary with the retrieved context "
            f"({overlap:.0%} of its terms); verify the golden record"
        )
    return None


@dataclass
class RunSummary:
    metrics: dict[str, float | None]
    methods: dict[str, str]
    mode: str
    score: float | None
    excluded: dict[str, dict[str, int]]
    fallbacks: dict[str, int]
    refusal: dict[str, float | int | None]
    diagnosis: dict[str, int]
    passed: int
    failed: int
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "metrics": self.metrics,
            "methods": self.methods,
            "mode": self.mode,
            "score": self.score,
            "excluded": self.excluded,
            "fallbacks": self.fallbacks,
            "refusal": self.refusal,
            "diagnosis": self.diagnosis,
            "passed": self.passed,
            "failed": self.failed,
            "warnings": self.warnings,
        }


def summarize(outcomes: Sequence[QuestionOutcome], verdicts: Sequence[Verdict]) -> RunSummary:
    warnings: list[str] = []
    means: dict[str, float | None] = {}
    methods: dict[str, str] = {}
    excluded: dict[str, dict[str, int]] = {}
    fallbacks: dict[str, int] = {}
    judged = plain = 0
    for name in METRICS:
        scores = [o.scores[name] for o in outcomes if name in o.scores]
        values = [s.value for s in scores if s.value is not None]
        if values and any(math.isnan(v) for v in values):  # the judge contract forbids it; never average one
            raise ValueError(f"{name}: a NaN score reached the summary")
        means[name] = sum(values) / len(values) if values else None
        kinds = {s.method for s in scores if s.value is not None}
        methods[name] = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "")
        judged += sum(1 for s in scores if s.value is not None and s.method == LLM_JUDGE)
        plain += sum(1 for s in scores if s.value is not None and s.method == HEURISTIC)
        reasons = Counter(s.excluded for s in scores if s.value is None and s.excluded)
        excluded[name] = dict(reasons)
        fallbacks[name] = sum(1 for s in scores if s.fallback)
        if reasons.get("unreadable"):
            warnings.append(
                f"{name}: {reasons['unreadable']} question(s) excluded: the judge's answer could not be read"
            )
        if fallbacks[name]:
            warnings.append(
                f"{name}: the judge call failed for {fallbacks[name]} question(s); those were scored by the "
                "heuristic (labelled so)"
            )
        if scores and not values:
            warnings.append(f"{name}: no question could be scored on this metric")
    mode = LLM_JUDGE if judged and not plain else (HEURISTIC if not judged else "mixed")

    answerable = [
        (o, v) for o, v in zip(outcomes, verdicts, strict=True) if o.answerable and v.passed is not None
    ]
    unanswerable = [
        (o, v) for o, v in zip(outcomes, verdicts, strict=True) if not o.answerable and v.passed is not None
    ]
    declined_unanswerable = sum(1 for o, _ in unanswerable if o.refused)
    false_refusals = sum(1 for o, _ in answerable if o.refused)
    refusal: dict[str, float | int | None] = {
        "unanswerable": len(unanswerable),
        "declined_unanswerable": declined_unanswerable,
        "refusal_recall": declined_unanswerable / len(unanswerable) if unanswerable else None,
        "answerable": len(answerable),
        "declined_answerable": false_refusals,
        "false_refusal_rate": false_refusals / len(answerable) if answerable else None,
    }
    errors = sum(1 for v in verdicts if v.diagnosis == ERROR)
    if errors:
        warnings.append(
            f"{errors} question(s) got no answer (the model call failed) and are left out of the means"
        )
    per_question = [v.mean for v in verdicts if v.mean is not None]
    score = 100.0 * sum(per_question) / len(per_question) if per_question else None
    return RunSummary(
        metrics=means,
        methods=methods,
        mode=mode,
        score=score,
        excluded=excluded,
        fallbacks=fallbacks,
        refusal=refusal,
        diagnosis=dict(Counter(v.diagnosis for v in verdicts)),
        passed=sum(1 for v in verdicts if v.passed),
        failed=sum(1 for v in verdicts if v.passed is False),
        warnings=warnings,
    )
