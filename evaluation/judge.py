"""Per-question answer metrics, judged by a heuristic or by a chat model. Plain Python: no Django import.

Five metrics (METRICS), each a `Score` in 0..1 or None (excluded, with the reason; never a 0 in disguise):

faithfulness
    the share of the answer's atomic statements (`statements`) the retrieved passages support: the
    hallucination measure.
context_recall
    the share of the reference answer's statements found in the passages: low recall with high
    faithfulness points at retrieval, not at the answer.
answer_relevancy
    how directly the answer addresses the question (not whether it is correct).
citation_precision
    the share of the answer's citations whose cited passage supports the sentence they are attached to.
context_relevancy
    the share of retrieved passages relevant to the question.

Every Score says how it was made (`method`): HEURISTIC or LLM_JUDGE.

Heuristic (deterministic token overlap on goldenset.lexical content terms; the title of a passage counts as
part of it):

- A statement is supported by a passage when the passage holds at least SUPPORT_MIN of the statement's distinct
  content terms and every number in the statement ("30", "2024"). Faithfulness and context recall take the
  best passage; citation precision only the cited one.
- answer_relevancy = coverage of the question's content terms by the answer, times a focus factor
  RELEVANCY_FOCUS_FLOOR + (1 - RELEVANCY_FOCUS_FLOOR) * (share of the answer's statements sharing a term with
  the question): padding with off-topic statements costs up to half. Its natural scale is lower than the
  others' (answers rarely repeat "how long" or "request"), hence the lower default pass threshold (0.4).
- A passage is relevant when it holds at least RELEVANT_MIN of the question's content terms, or of the
  reference answer's (the reference's vocabulary recognizes a passage that answers without echoing the
  question); its score is the larger of the two shares.

Honest limits of the heuristic: no synonyms or paraphrase ("two weeks" does not support "14 days"), no
negation or word order ("refunds are not available" supports "refunds are available"), no reasoning across
passages. A terse correct answer ("30 days") can score 0 on answer relevancy.

LLM judge (`LLMJudge`): one call per metric, temperature 0, asking for JSON (per-statement, per-citation or
per-passage verdicts, or a 1-5 rating for relevancy, mapped to 0, .25, .5, .75, 1), validated strictly: a
verdict list of the wrong length, a missing or repeated index, a non-boolean verdict or a rating outside 1-5
makes the judgement unreadable. The reference answer is shown as context for recall and relevancy; no metric
scores correctness against it.

The honesty rules:

- a judge CALL that fails (the endpoint unavailable after retries) degrades that metric to the heuristic: the
  Score says method HEURISTIC and `fallback` gives the reason. The label never claims a judgement not made;
- a judgement that cannot be READ gives value None, excluded UNREADABLE, method LLM_JUDGE: the caller leaves
  the question out of that metric and warns. Never a 0, never a NaN;
- what is decided by definition is decided before any call, with the method of the judge that would have been
  used: NOT_APPLICABLE (a declined or failed answer, one without statements, no reference answer, no citations,
  a question without content terms) and the real zeros of an empty retrieval (nothing retrieved can support a
  statement or be relevant: faithfulness, context recall and context relevancy are 0.0 there, not excluded).

`Score` enforces: value is None exactly when `excluded` is set, and a value is a finite number in 0..1.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evaluation.answering import Answer, Passage, format_passages, split_sentences, strip_markers
from goldenset import lexical
from goldenset.errors import EvalsiteError
from goldenset.llm import ChatClient, map_concurrent
from goldenset.llm_json import extract_json, validate
from goldenset.vocabulary.metric_names import JUDGED_METRICS

METRICS = JUDGED_METRICS
HEURISTIC, LLM_JUDGE = "heuristic", "llm-judge"
NOT_APPLICABLE, UNREADABLE = "not-applicable", "unreadable"

SUPPORT_MIN = 0.6  # share of a statement's content terms a passage must hold to support it
RELEVANT_MIN = 0.5  # share of the question's (or the reference's) terms a relevant passage holds
RELEVANCY_FOCUS_FLOOR = 0.5  # answer relevancy keeps at least this share when no statement is on topic


@dataclass(frozen=True)
class Score:
    value: float | None  # None = excluded from this metric (never 0 in disguise)
    method: str  # HEURISTIC | LLM_JUDGE
    detail: dict[str, Any] = field(default_factory=dict)  # JSON-serializable
    excluded: str | None = None  # why value is None: NOT_APPLICABLE | UNREADABLE
    fallback: str | None = None  # the judge call failed and this is the heuristic: why (method HEURISTIC)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    calls: int = 0
    cached_calls: int = 0

    def __post_init__(self) -> None:
        if (self.value is None) != (self.excluded is not None):
            raise ValueError("a Score's value is None exactly when it is excluded")
        if self.value is not None and not (math.isfinite(self.value) and 0.0 <= self.value <= 1.0):
            raise ValueError(f"a Score's value must be a number in 0..1, got {self.value!r}")
        if self.method not in (HEURISTIC, LLM_JUDGE):
            raise ValueError(f"unknown method {self.method!r}")
        if self.fallback is not None and self.method != HEURISTIC:
            raise ValueError("a fallback is the heuristic's score")

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "method": self.method,
            "detail": self.detail,
            "excluded": self.excluded,
            "fallback": self.fallback,
        }


def _excluded(method: str, reason: str, excluded: str = NOT_APPLICABLE, **detail: Any) -> Score:
    return Score(None, method, {"reason": reason, **detail}, excluded=excluded)


# --- statements -----------------------------------------------------------------------------------------------

_CLAUSE_JOIN = re.compile(r",\s+(?=(?:and|but)\s)", re.IGNORECASE)


def _is_clause(text: str) -> bool:
    return len(text.split()) >= 3 and len(lexical.content_terms(text)) >= 2


def _clauses(piece: str) -> list[str]:
    """piece split at ", and" / ", but" where both halves are clauses of their own (three words and two
    content terms each) and no comma precedes in the left half ("A, B, and C" is a list, not two clauses)."""
    for match in _CLAUSE_JOIN.finditer(piece):
        left, right = piece[: match.start()], " ".join(piece[match.end() :].split()[1:])
        if "," in left:
            break
        if _is_clause(left) and _is_clause(right):
            return [left, *_clauses(right)]
    return [piece]


def statements(text: str) -> list[str]:
    """The atomic statements of text: its sentences, split further at ";" and at ", and" / ", but" joining two
    independent clauses (see `_clauses`); citation markers removed; pieces without a content term dropped."""
    out: list[str] = []
    for sentence in split_sentences(strip_markers(text)):
        for part in sentence.split(";"):
            for clause in _clauses(part.strip()):
                clause = clause.strip(" ,")
                if lexical.content_terms(clause):
                    out.append(clause)
    return out


# --- heuristic support ------------------------------------------------------------------------------------------


def _terms_of(passage: Passage) -> frozenset[str]:
    return frozenset(lexical.content_terms(f"{passage.title}\n{passage.text}"))


def _support(statement: str, terms: frozenset[str]) -> tuple[bool, float]:
    """(supported, coverage) of statement by a passage's terms: coverage >= SUPPORT_MIN and every number."""
    own = lexical.content_terms(statement)
    share = lexical.coverage(own, terms)
    numbers_found = all(t in terms for t in own if any(c.isdigit() for c in t))
    return bool(own) and share >= SUPPORT_MIN and numbers_found, share


def _best_support(statement: str, passages: Sequence[tuple[Passage, frozenset[str]]]) -> dict[str, Any]:
    best: tuple[bool, float, int | None] = (False, 0.0, None)
    for passage, terms in passages:
        supported, share = _support(statement, terms)
        if (supported, share) > best[:2]:
            best = (supported, share, passage.number)
    supported, share, number = best
    return {
        "text": statement,
        "supported": supported,
        "support": round(share, 4),
        "passage": number if supported else None,
    }


def _share(verdicts: Sequence[dict[str, Any]], key: str) -> float:
    return sum(1 for v in verdicts if v[key]) / len(verdicts)


def _judgeable(answer: Answer) -> tuple[list[str], str | None]:
    """The answer's statements, or why there is nothing to judge (then no call is made)."""
    if answer.error is not None:
        return [], f"the answer failed: {answer.error}"
    if answer.refused:
        return [], "the answer declined"
    found = statements(answer.text)
    return found, None if found else "the answer has no statements"


# --- heuristic metrics ------------------------------------------------------------------------------------------


def faithfulness(answer: Answer, passages: Sequence[Passage]) -> Score:
    found, problem = _judgeable(answer)
    if problem:
        return _excluded(HEURISTIC, problem)
    indexed = [(p, _terms_of(p)) for p in passages]
    verdicts = [_best_support(s, indexed) for s in found]
    return Score(_share(verdicts, "supported"), HEURISTIC, {"statements": verdicts})


def context_recall(reference: str, passages: Sequence[Passage]) -> Score:
    found = statements(reference)
    if not found:
        return _excluded(HEURISTIC, "no reference answer")
    indexed = [(p, _terms_of(p)) for p in passages]
    verdicts = [_best_support(s, indexed) for s in found]
    return Score(_share(verdicts, "supported"), HEURISTIC, {"statements": verdicts})


def answer_relevancy(question: str, answer: Answer) -> Score:
    found, problem = _judgeable(answer)
    asked = frozenset(lexical.content_terms(question))
    if problem or not asked:
        return _excluded(HEURISTIC, problem or "the question has no content terms")
    coverage = lexical.coverage(asked, lexical.content_terms(strip_markers(answer.text)))
    on_topic = [bool(asked & set(lexical.content_terms(s))) for s in found]
    focus = sum(on_topic) / len(on_topic)
    value = coverage * (RELEVANCY_FOCUS_FLOOR + (1 - RELEVANCY_FOCUS_FLOOR) * focus)
    return Score(value, HEURISTIC, {"question_coverage": round(coverage, 4), "focus": round(focus, 4)})


def citation_precision(answer: Answer, passages: Sequence[Passage]) -> Score:
    problem = _judgeable(answer)[1]
    if problem or not answer.citations:
        return _excluded(HEURISTIC, problem or "the answer cited nothing", citations=[])
    by_number = {p.number: p for p in passages}
    verdicts = []
    for citation in answer.citations:
        passage = by_number.get(citation.number)
        supported, share = _support(citation.statement, _terms_of(passage)) if passage else (False, 0.0)
        verdicts.append(
            {
                "citation": citation.number,
                "document_id": citation.document_id,
                "statement": citation.statement,
                "supports": supported,
                "support": round(share, 4),
            }
        )
    return Score(_share(verdicts, "supports"), HEURISTIC, {"citations": verdicts})


def context_relevancy(question: str, passages: Sequence[Passage], reference: str = "") -> Score:
    if not passages:  # nothing retrieved is relevant: a real 0, not an exclusion
        return Score(0.0, HEURISTIC, {"passages": [], "reason": "nothing was retrieved"})
    asked = frozenset(lexical.content_terms(question))
    expected = frozenset(lexical.content_terms(reference))
    if not asked and not expected:
        return _excluded(HEURISTIC, "the question has no content terms")
    rows = []
    for passage in passages:
        terms = _terms_of(passage)
        by_question = lexical.coverage(asked, terms)
        by_reference = lexical.coverage(expected, terms)
        score = max(by_question, by_reference)
        rows.append(
            {
                "number": passage.number,
                "document_id": passage.document_id,
                "relevant": score >= RELEVANT_MIN,
                "score": round(score, 4),
                "question_coverage": round(by_question, 4),
                "reference_coverage": round(by_reference, 4),
            }
        )
    return Score(_share(rows, "relevant"), HEURISTIC, {"passages": rows})


# --- the LLM judge ----------------------------------------------------------------------------------------------

_JSON_ONLY = "Use no outside knowledge. Reply with JSON only, one verdict per item, in order: "
FAITHFULNESS_PROMPT = (
    "You check whether statements are supported by numbered passages. A statement is supported when the "
    "passages state it or it follows directly from what they state; it is not supported when it adds, "
    "changes or contradicts facts. " + _JSON_ONLY + '{"verdicts": [{"statement": 1, "supported": true, '
    '"reason": "..."}]}'
)
RECALL_PROMPT = (
    "You check whether the statements of a reference answer can be found in numbered passages: a statement "
    "is supported when the passages contain the information it gives. " + _JSON_ONLY + '{"verdicts": '
    '[{"statement": 1, "supported": true, "reason": "..."}]}'
)
RELEVANCY_PROMPT = (
    "You rate how directly an answer addresses a question, from 1 to 5: 5 = answers exactly what was asked, "
    "directly; 4 = answers it with some unneeded material; 3 = answers it partly or indirectly; 2 = is on "
    "the topic but does not answer the question; 1 = unrelated or evasive. Rate only whether it addresses "
    "the question, not whether it is correct. Reply with JSON only: "
    '{"rating": 3, "reason": "..."}'
)
CITATION_PROMPT = (
    "You check citations: for each numbered citation, does the cited passage support the statement it is "
    "attached to (states it, or it follows directly)? " + _JSON_ONLY + '{"verdicts": [{"citation": 1, '
    '"supports": true, "reason": "..."}]}'
)
CONTEXT_PROMPT = (
    "You check which retrieved passages are relevant to a question: a passage is relevant when it holds "
    "information that helps answer the question. " + _JSON_ONLY + '{"verdicts": [{"passage": 1, '
    '"relevant": true, "reason": "..."}]}'
)


def _verdict_schema(index: str, flag: str) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "object", "required": [index, flag]}
    item["properties"] = {index: {"type": "integer"}, flag: {"type": "boolean"}}
    verdicts = {"type": "array", "items": item}
    return {"type": "object", "required": ["verdicts"], "properties": {"verdicts": verdicts}}


RATING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["rating"],
    "properties": {"rating": {"type": "number"}},
}


def _unreadable(message: str) -> EvalsiteError:
    return EvalsiteError("llm-unreadable", f"The judgement does not fit: {message}.", status=502)


def _read_verdicts(data: Any, index: str, flag: str, expected: Sequence[int]) -> dict[int, tuple[bool, str]]:
    """{index: (verdict, reason)}, exactly one verdict per expected index, or EvalsiteError (unreadable)."""
    validate(data, _verdict_schema(index, flag))
    verdicts = data["verdicts"]
    if len(verdicts) != len(expected):
        raise _unreadable(f"{len(verdicts)} verdicts for {len(expected)} items")
    out: dict[int, tuple[bool, str]] = {}
    for verdict in verdicts:
        number = verdict[index]
        if number not in expected or number in out:
            raise _unreadable(f"{index} {number} is unknown or repeated")
        reason = verdict.get("reason")
        out[number] = (verdict[flag], reason if isinstance(reason, str) else "")
    return out


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))


def _reference_note(reference: str) -> str:
    reference = " ".join(reference.split())
    return f"Reference answer (context only; do not grade against it): {reference}\n\n" if reference else ""


class LLMJudge:
    """The chat-model judge: one call per metric (see the module doc for the honesty rules)."""

    def __init__(
        self, client: ChatClient, model: str, *, seed: int | None = None, max_tokens: int | None = 1024
    ):
        self.client = client
        self.model = model
        self.seed = seed
        self.max_tokens = max_tokens

    def _judge(
        self,
        system: str,
        user: str,
        read: Callable[[Any], tuple[float, dict[str, Any]]],
        heuristic: Callable[[], Score],
    ) -> Score:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        started = time.perf_counter()
        try:
            result = self.client.complete(
                messages, model=self.model, max_tokens=self.max_tokens, seed=self.seed
            )
        except EvalsiteError as exc:
            return replace(
                heuristic(),
                fallback=f"judge call failed: {exc.message}",
                calls=1,
                latency_ms=(time.perf_counter() - started) * 1000.0,
            )
        usage: dict[str, Any] = {
            "prompt_tokens": result.prompt_tokens or 0,
            "completion_tokens": result.completion_tokens or 0,
            "latency_ms": result.latency_ms,
            "calls": 1,
            "cached_calls": int(result.cached),
        }
        try:
            value, detail = read(extract_json(result.text, expect="object"))
        except EvalsiteError as exc:
            detail = {"error": exc.message, "answer": result.text[:500]}
            return Score(None, LLM_JUDGE, detail, excluded=UNREADABLE, **usage)
        return Score(value, LLM_JUDGE, detail, **usage)

    def _statement_verdicts(
        self,
        prompt: str,
        heading: str,
        found: list[str],
        passages: Sequence[Passage],
        heuristic: Callable[[], Score],
    ) -> Score:
        if not passages:  # nothing retrieved supports anything
            rows = [{"text": s, "supported": False, "reason": "nothing was retrieved"} for s in found]
            return Score(0.0, LLM_JUDGE, {"statements": rows, "reason": "nothing was retrieved"})
        user = f"Passages:\n{format_passages(passages)}\n\n{heading}:\n{_numbered(found)}"

        def read(data: Any) -> tuple[float, dict[str, Any]]:
            verdicts = _read_verdicts(data, "statement", "supported", range(1, len(found) + 1))
            rows = [
                {"text": s, "supported": verdicts[i][0], "reason": verdicts[i][1]}
                for i, s in enumerate(found, 1)
            ]
            return _share(rows, "supported"), {"statements": rows}

        return self._judge(prompt, user, read, heuristic)

    def faithfulness(self, answer: Answer, passages: Sequence[Passage]) -> Score:
        found, problem = _judgeable(answer)
        if problem:
            return _excluded(LLM_JUDGE, problem)
        return self._statement_verdicts(
            FAITHFULNESS_PROMPT, "Answer statements", found, passages, lambda: faithfulness(answer, passages)
        )

    def context_recall(self, reference: str, passages: Sequence[Passage]) -> Score:
        found = statements(reference)
        if not found:
            return _excluded(LLM_JUDGE, "no reference answer")
        return self._statement_verdicts(
            RECALL_PROMPT,
            "Reference statements",
            found,
            passages,
            lambda: context_recall(reference, passages),
        )

    def answer_relevancy(self, question: str, answer: Answer, reference: str = "") -> Score:
        problem = _judgeable(answer)[1]
        if problem:
            return _excluded(LLM_JUDGE, problem)
        user = f"Question: {question.strip()}\n\n{_reference_note(reference)}Answer to rate:\n{strip_markers(answer.text)}"

        def read(data: Any) -> tuple[float, dict[str, Any]]:
            validate(data, RATING_SCHEMA)
            rating = data["rating"]
            if rating not in (1, 2, 3, 4, 5):
                raise _unreadable(f"rating {rating!r} is not a whole number from 1 to 5")
            reason = data.get("reason")
            return (rating - 1) / 4, {
                "rating": int(rating),
                "reason": reason if isinstance(reason, str) else "",
            }

        return self._judge(RELEVANCY_PROMPT, user, read, lambda: answer_relevancy(question, answer))

    def citation_precision(self, answer: Answer, passages: Sequence[Passage]) -> Score:
        problem = _judgeable(answer)[1]
        if problem or not answer.citations:
            return _excluded(LLM_JUDGE, problem or "the answer cited nothing", citations=[])
        by_number = {p.number: p for p in passages}
        asked = [c for c in answer.citations if c.number in by_number]
        rows = [
            {
                "citation": c.number,
                "document_id": c.document_id,
                "statement": c.statement,
                "supports": False,
                "reason": "the cited passage was not retrieved",
            }
            for c in answer.citations
        ]
        if not asked:
            return Score(0.0, LLM_JUDGE, {"citations": rows})
        cited = sorted({c.number for c in asked})
        listing = "\n".join(f"{i}. [{c.number}] {c.statement}" for i, c in enumerate(asked, 1))
        user = (
            f"Passages:\n{format_passages([by_number[n] for n in cited])}\n\nCitations to check:\n{listing}"
        )

        def read(data: Any) -> tuple[float, dict[str, Any]]:
            verdicts = _read_verdicts(data, "citation", "supports", range(1, len(asked) + 1))
            judged = iter(verdicts[i] for i in range(1, len(asked) + 1))
            for row, citation in zip(rows, answer.citations, strict=True):
                if citation.number in by_number:
                    row["supports"], row["reason"] = next(judged)
            return _share(rows, "supports"), {"citations": rows}

        return self._judge(CITATION_PROMPT, user, read, lambda: citation_precision(answer, passages))

    def context_relevancy(self, question: str, passages: Sequence[Passage], reference: str = "") -> Score:
        if not passages:
            return Score(0.0, LLM_JUDGE, {"passages": [], "reason": "nothing was retrieved"})
        if not lexical.content_terms(question) and not lexical.content_terms(reference):
            return _excluded(LLM_JUDGE, "the question has no content terms")
        numbers = [p.number for p in passages]
        user = f"Question: {question.strip()}\n\n{_reference_note(reference)}Passages to rate:\n{format_passages(passages)}"

        def read(data: Any) -> tuple[float, dict[str, Any]]:
            verdicts = _read_verdicts(data, "passage", "relevant", numbers)
            rows = [
                {
                    "number": p.number,
                    "document_id": p.document_id,
                    "relevant": verdicts[p.number][0],
                    "reason": verdicts[p.number][1],
                }
                for p in passages
            ]
            return _share(rows, "relevant"), {"passages": rows}

        return self._judge(
            CONTEXT_PROMPT, user, read, lambda: context_relevancy(question, passages, reference)
        )


def judge_question(
    question: str, reference: str, answer: Answer, passages: Sequence[Passage], judge: LLMJudge | None
) -> dict[str, Score]:
    """The five metrics of one answered question, in METRICS order: by the heuristic when judge is None, else
    by the judge (one call each, concurrently; a failed call falls back per metric)."""
    if judge is None:
        return {
            "faithfulness": faithfulness(answer, passages),
            "context_recall": context_recall(reference, passages),
            "answer_relevancy": answer_relevancy(question, answer),
            "citation_precision": citation_precision(answer, passages),
            "context_relevancy": context_relevancy(question, passages, reference),
        }
    calls: dict[str, Callable[[], Score]] = {
        "faithfulness": lambda: judge.faithfulness(answer, passages),
        "context_recall": lambda: judge.context_recall(reference, passages),
        "answer_relevancy": lambda: judge.answer_relevancy(question, answer, reference),
        "citation_precision": lambda: judge.citation_precision(answer, passages),
        "context_relevancy": lambda: judge.context_relevancy(question, passages, reference),
    }
    # The five judgements at once (the client still bounds the calls in flight): a small golden set is not
    # left waiting on one question's five calls in a row.
    scores = map_concurrent(lambda name: calls[name](), METRICS, concurrency=len(METRICS))
    return dict(zip(METRICS, scores, strict=True))
