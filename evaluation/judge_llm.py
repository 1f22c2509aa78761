"""The chat-model judge of the five answer metrics (evaluation.judge has the metrics, their heuristic and the
honesty rules): one call per metric; a failed call falls back to the heuristic and says so, an unreadable
judgement is excluded (never a 0)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from evaluation.answer_writer import Answer, Passage, format_passages, strip_markers
from evaluation.judge import (
    LLM_JUDGE,
    UNREADABLE,
    Score,
    answer_relevancy,
    citation_precision,
    context_recall,
    context_relevancy,
    excluded_score,
    faithfulness,
    judgeable,
    share_of,
    statements,
)
from goldenset import lexical
from goldenset.errors import EvalsiteError
from goldenset.llm import ChatClient
from goldenset.llm_json import extract_json, validate

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
            return share_of(rows, "supported"), {"statements": rows}

        return self._judge(prompt, user, read, heuristic)

    def faithfulness(self, answer: Answer, passages: Sequence[Passage]) -> Score:
        found, problem = judgeable(answer)
        if problem:
            return excluded_score(LLM_JUDGE, problem)
        return self._statement_verdicts(
            FAITHFULNESS_PROMPT, "Answer statements", found, passages, lambda: faithfulness(answer, passages)
        )

    def context_recall(self, reference: str, passages: Sequence[Passage]) -> Score:
        found = statements(reference)
        if not found:
            return excluded_score(LLM_JUDGE, "no reference answer")
        return self._statement_verdicts(
            RECALL_PROMPT,
            "Reference statements",
            found,
            passages,
            lambda: context_recall(reference, passages),
        )

    def answer_relevancy(self, question: str, answer: Answer, reference: str = "") -> Score:
        problem = judgeable(answer)[1]
        if problem:
            return excluded_score(LLM_JUDGE, problem)
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
        problem = judgeable(answer)[1]
        if problem or not answer.citations:
            return excluded_score(LLM_JUDGE, problem or "the answer cited nothing", citations=[])
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
            return share_of(rows, "supports"), {"citations": rows}

        return self._judge(CITATION_PROMPT, user, read, lambda: citation_precision(answer, passages))

    def context_relevancy(self, question: str, passages: Sequence[Passage], reference: str = "") -> Score:
        if not passages:
            return Score(0.0, LLM_JUDGE, {"passages": [], "reason": "nothing was retrieved"})
        if not lexical.content_terms(question) and not lexical.content_terms(reference):
            return excluded_score(LLM_JUDGE, "the question has no content terms")
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
            return share_of(rows, "relevant"), {"passages": rows}

        return self._judge(
            CONTEXT_PROMPT, user, read, lambda: context_relevancy(question, passages, reference)
        )
