"""The chat-model judge of the five answer metrics (evaluation.answers.judge has the metrics, their heuristic and the
honesty rules).

Fixed prompts, each with a short worked example (paraphrase supported; an added or changed fact not), asked at
temperature 0: the same question to the same model reads the same, and the call cache answers a re-run.

One judgement per metric by default; with `samples` k > 1 (evaluation.answers.judge_votes) the judge asks k times at a
sampling temperature with distinct seeds (concurrently; the client bounds the calls in flight) and takes per
item the majority verdict (for the 1-5 relevancy rating the median). The share of samples that agreed is the
judge's confidence: per item ("confidence" in the detail rows) and per Score (detail["confidence"], the mean
over its items), with detail["samples"] counting the samples asked, readable, unreadable and failed.

The honesty rules, per metric, over its k samples (k = 1 is the single judgement of before):
- more than half readable: judged on the readable ones (the others counted in detail["samples"]);
- else more than half failed (the endpoint unavailable after retries): the heuristic, labelled so (`fallback`);
- else: UNREADABLE, excluded from the metric, never a 0.
Usage (tokens, calls, cached calls, latency) sums over the samples, whatever became of them.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalsite.errors import EvalsiteError
from evalsite.llm.client import ChatClient, ChatResult, map_concurrent
from evalsite.llm.json_replies import extract_json, validate
from evaluation.answers.judge import (
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
from evaluation.answers.judge_votes import (
    DEFAULT_SAMPLING_TEMPERATURE,
    JudgeSampling,
    Verdicts,
    Vote,
    has_quorum,
    majority,
    mean_confidence,
    median_rating,
    tally,
)
from evaluation.answers.writer import Answer, Passage, format_passages, strip_markers
from goldenset import lexical

_JSON_ONLY = "Use no outside knowledge. Reply with JSON only, one verdict per item, in order: "
FAITHFULNESS_PROMPT = (
    "You check whether statements are supported by numbered passages. A statement is supported when the "
    "passages state it or it follows directly from what they state, in other words too; it is not supported "
    "when it adds, changes or contradicts facts. Judge each statement on its own. "
    + _JSON_ONLY
    + '{"verdicts": [{"statement": 1, "supported": true, "reason": "..."}]}\n\n'
    "Example.\nPassages:\n[1] Returns\nItems can be returned within 14 days of delivery. Refunds go to the "
    "original card.\n\nAnswer statements:\n1. Items can be returned within two weeks of delivery.\n"
    "2. Refunds are paid in cash.\n3. Returns are free of charge.\n\n"
    'Reply: {"verdicts": [{"statement": 1, "supported": true, "reason": "14 days is two weeks"}, '
    '{"statement": 2, "supported": false, "reason": "[1] says the original card, not cash"}, '
    '{"statement": 3, "supported": false, "reason": "no passage gives the cost of a return"}]}'
)
RECALL_PROMPT = (
    "You check whether the statements of a reference answer can be found in numbered passages: a statement "
    "is supported when the passages contain the information it gives, in any words. "
    + _JSON_ONLY
    + '{"verdicts": [{"statement": 1, "supported": true, "reason": "..."}]}\n\n'
    "Example.\nPassages:\n[1] Opening hours\nThe library opens at 9 am on weekdays.\n\n[2] Membership\n"
    "Membership is free for residents.\n\nReference statements:\n1. The library opens at 9 am on weekdays.\n"
    "2. Residents pay nothing to join.\n3. The library closes at 8 pm.\n\n"
    'Reply: {"verdicts": [{"statement": 1, "supported": true, "reason": "stated in [1]"}, '
    '{"statement": 2, "supported": true, "reason": "[2]: membership is free for residents"}, '
    '{"statement": 3, "supported": false, "reason": "no passage gives the closing time"}]}'
)
RELEVANCY_PROMPT = (
    "You rate how directly an answer addresses a question, from 1 to 5: 5 = answers exactly what was asked, "
    "directly; 4 = answers it with some unneeded material; 3 = answers it partly or indirectly; 2 = is on "
    "the topic but does not answer the question; 1 = unrelated or evasive. Rate only whether it addresses "
    "the question, not whether it is correct. Reply with JSON only: "
    '{"rating": 3, "reason": "..."}\n\n'
    "Examples, for the question: How long does shipping take?\n"
    'Answer to rate: Orders ship within two business days. Reply: {"rating": 5, "reason": "answers exactly '
    'what was asked"}\n'
    "Answer to rate: Orders ship within two business days; we also sell gift cards. Reply: "
    '{"rating": 4, "reason": "answers it, with an unneeded remark"}\n'
    'Answer to rate: Our store sells shoes and bags. Reply: {"rating": 1, "reason": "says nothing about '
    'shipping"}'
)
CITATION_PROMPT = (
    "You check citations: for each numbered citation, does the cited passage support the statement it is "
    "attached to (states it, or it follows directly)? Another passage's support does not count. "
    + _JSON_ONLY
    + '{"verdicts": [{"citation": 1, "supports": true, "reason": "..."}]}\n\n'
    "Example.\nPassages:\n[1] Warranty\nThe warranty covers manufacturing defects for two years.\n\n"
    "[2] Shipping\nOrders ship within two business days.\n\nCitations to check:\n"
    "1. [1] Defects are covered for two years.\n2. [2] Shipping is free.\n\n"
    'Reply: {"verdicts": [{"citation": 1, "supports": true, "reason": "[1] states it"}, '
    '{"citation": 2, "supports": false, "reason": "[2] gives the shipping time, not its price"}]}'
)
CONTEXT_PROMPT = (
    "You check which retrieved passages are relevant to a question: a passage is relevant when it holds "
    "information that helps answer the question; sharing its words is not enough. "
    + _JSON_ONLY
    + '{"verdicts": [{"passage": 1, "relevant": true, "reason": "..."}]}\n\n'
    "Example.\nQuestion: How long does shipping take?\n\nPassages to rate:\n[1] Shipping\nOrders ship within "
    "two business days.\n\n[2] Shipping partners\nWe are proud of our shipping partners.\n\n"
    'Reply: {"verdicts": [{"passage": 1, "relevant": true, "reason": "gives the shipping time"}, '
    '{"passage": 2, "relevant": false, "reason": "about shipping, but not how long it takes"}]}'
)

# The prompts' version, raised whenever a prompt's text changes so runs judged by different prompts are told apart;
# the sha256 of every prompt is recorded beside it (evaluation.answers.judge_identity) and catches a change nobody
# versioned.
PROMPT_VERSION = "evalsite-judge-1"
PROMPTS = {
    "faithfulness": FAITHFULNESS_PROMPT,
    "context_recall": RECALL_PROMPT,
    "answer_relevancy": RELEVANCY_PROMPT,
    "citation_precision": CITATION_PROMPT,
    "context_relevancy": CONTEXT_PROMPT,
}
PROMPT_SHA256 = {metric: hashlib.sha256(text.encode()).hexdigest() for metric, text in PROMPTS.items()}


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
RATING = 0  # the one item of a relevancy judgement


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


def _read_rating(data: Any) -> dict[int, tuple[int, str]]:
    validate(data, RATING_SCHEMA)
    rating = data["rating"]
    if rating not in (1, 2, 3, 4, 5):
        raise _unreadable(f"rating {rating!r} is not a whole number from 1 to 5")
    reason = data.get("reason")
    return {RATING: (int(rating), reason if isinstance(reason, str) else "")}


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))


def _reference_note(reference: str) -> str:
    reference = " ".join(reference.split())
    return f"Reference answer (context only; do not grade against it): {reference}\n\n" if reference else ""


@dataclass(frozen=True)
class _Sample:
    """One call of a judgement: its answer, or why the call failed."""

    result: ChatResult | None
    error: str = ""
    latency_ms: float = 0.0


def _usage(samples: Sequence[_Sample]) -> dict[str, Any]:
    answered = [s.result for s in samples if s.result is not None]
    return {
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in answered),
        "completion_tokens": sum(r.completion_tokens or 0 for r in answered),
        "latency_ms": sum(s.latency_ms for s in samples),
        "calls": len(samples),
        "cached_calls": sum(int(r.cached) for r in answered),
    }


class LLMJudge:
    """The chat-model judge: one call per metric, or `samples` calls voted (see the module doc)."""

    def __init__(
        self,
        client: ChatClient,
        model: str,
        *,
        seed: int | None = None,
        max_tokens: int | None = 1024,
        samples: int = 1,
        temperature: float = DEFAULT_SAMPLING_TEMPERATURE,
    ):
        self.client = client
        self.model = model
        self.seed = seed
        self.max_tokens = max_tokens
        self.sampling = JudgeSampling(samples, temperature)

    @property
    def sampled(self) -> bool:
        return self.sampling.samples > 1

    def _call(self, messages: list[dict[str, str]], seed: int | None) -> _Sample:
        started = time.perf_counter()
        try:
            result = self.client.complete(
                messages,
                model=self.model,
                temperature=self.sampling.call_temperature,
                max_tokens=self.max_tokens,
                seed=seed,
            )
        except EvalsiteError as exc:
            return _Sample(None, exc.message, (time.perf_counter() - started) * 1000.0)
        return _Sample(result, latency_ms=result.latency_ms)

    def _ask(self, messages: list[dict[str, str]]) -> list[_Sample]:
        """Every sample of one judgement, in seed order (k at once: the client bounds the calls in flight)."""
        seeds = self.sampling.seeds(self.seed)
        if len(seeds) == 1:
            return [self._call(messages, seeds[0])]
        return map_concurrent(lambda seed: self._call(messages, seed), seeds, concurrency=len(seeds))

    def _judge(
        self,
        system: str,
        user: str,
        read: Callable[[Any], Verdicts],
        pick: Callable[[Sequence[Any]], Any],
        build: Callable[[dict[int, Vote]], tuple[float, dict[str, Any]]],
        heuristic: Callable[[], Score],
    ) -> Score:
        """Ask, read every answer, vote: the rules of the module doc."""
        samples = self._ask([{"role": "system", "content": system}, {"role": "user", "content": user}])
        usage = _usage(samples)
        readable: list[Verdicts] = []
        problems: list[tuple[str, str]] = []  # (why unreadable, the answer's start)
        for sample in samples:
            if sample.result is None:
                continue
            try:
                readable.append(read(extract_json(sample.result.text, expect="object")))
            except EvalsiteError as exc:
                problems.append((exc.message, sample.result.text[:500]))
        failed = [s for s in samples if s.result is None]
        counts = {
            "asked": len(samples),
            "readable": len(readable),
            "unreadable": len(problems),
            "failed": len(failed),
        }
        if has_quorum(len(readable), len(samples)):
            votes = tally(readable, pick)
            value, detail = build(votes)
            if self.sampled:
                detail = {
                    **detail,
                    "confidence": round(mean_confidence(votes.values()), 4),
                    "samples": counts,
                }
            return Score(value, LLM_JUDGE, detail, **usage)
        if 2 * len(failed) > len(samples):
            why = failed[0].error
            if self.sampled:
                why = f"{len(failed)} of {len(samples)} samples failed: {why}"
            return replace(heuristic(), fallback=f"judge call failed: {why}", **usage)
        error, answer = problems[0] if problems else ("too few readable samples", "")
        detail = {"error": error, "answer": answer, **({"samples": counts} if self.sampled else {})}
        return Score(None, LLM_JUDGE, detail, excluded=UNREADABLE, **usage)

    def _confidence(self, vote: Vote) -> dict[str, float]:
        """An item's confidence, for its detail row: only when sampled (one answer agrees with itself)."""
        return {"confidence": round(vote.agreement, 4)} if self.sampled else {}

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

        def build(votes: dict[int, Vote]) -> tuple[float, dict[str, Any]]:
            rows = [
                {
                    "text": s,
                    "supported": votes[i].verdict,
                    "reason": votes[i].reason,
                    **self._confidence(votes[i]),
                }
                for i, s in enumerate(found, 1)
            ]
            return share_of(rows, "supported"), {"statements": rows}

        expected = range(1, len(found) + 1)
        return self._judge(
            prompt,
            user,
            lambda data: _read_verdicts(data, "statement", "supported", expected),
            majority,
            build,
            heuristic,
        )

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

        def build(votes: dict[int, Vote]) -> tuple[float, dict[str, Any]]:
            vote = votes[RATING]
            detail: dict[str, Any] = {"rating": vote.verdict, "reason": vote.reason}
            if self.sampled:
                detail["ratings"] = list(vote.values)
            return (vote.verdict - 1) / 4, detail

        return self._judge(
            RELEVANCY_PROMPT,
            user,
            _read_rating,
            median_rating,
            build,
            lambda: answer_relevancy(question, answer),
        )

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

        def build(votes: dict[int, Vote]) -> tuple[float, dict[str, Any]]:
            judged = iter(votes[i] for i in range(1, len(asked) + 1))
            out = [dict(row) for row in rows]
            for row, citation in zip(out, answer.citations, strict=True):
                if citation.number in by_number:  # asked, in this order; the others were decided unasked
                    vote = next(judged)
                    row.update(supports=vote.verdict, reason=vote.reason, **self._confidence(vote))
            return share_of(out, "supports"), {"citations": out}

        expected = range(1, len(asked) + 1)
        return self._judge(
            CITATION_PROMPT,
            user,
            lambda data: _read_verdicts(data, "citation", "supports", expected),
            majority,
            build,
            lambda: citation_precision(answer, passages),
        )

    def context_relevancy(self, question: str, passages: Sequence[Passage], reference: str = "") -> Score:
        if not passages:
            return Score(0.0, LLM_JUDGE, {"passages": [], "reason": "nothing was retrieved"})
        if not lexical.content_terms(question) and not lexical.content_terms(reference):
            return excluded_score(LLM_JUDGE, "the question has no content terms")
        numbers = [p.number for p in passages]
        user = f"Question: {question.strip()}\n\n{_reference_note(reference)}Passages to rate:\n{format_passages(passages)}"

        def build(votes: dict[int, Vote]) -> tuple[float, dict[str, Any]]:
            rows = [
                {
                    "number": p.number,
                    "document_id": p.document_id,
                    "relevant": votes[p.number].verdict,
                    "reason": votes[p.number].reason,
                    **self._confidence(votes[p.number]),
                }
                for p in passages
            ]
            return share_of(rows, "relevant"), {"passages": rows}

        return self._judge(
            CONTEXT_PROMPT,
            user,
            lambda data: _read_verdicts(data, "passage", "relevant", numbers),
            majority,
            build,
            lambda: context_relevancy(question, passages, reference),
        )
