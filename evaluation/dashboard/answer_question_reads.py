"""The reads of one question of an answer run: the answer with its citation markers beside the numbered passages
it was written from, each metric's judgement (value, method, what was left out and why, per-statement, per-citation
and per-passage verdicts), the expected documents found or missed, and the warnings.

Read defensively, as the run page is (see answer_runs): a judgement's detail may carry keys this page does not know
(shown as a small key/value list) or lack keys it expects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.dashboard.answer_runs_reads import (
    EXCLUSION_TEXT,
    METHOD_TEXT,
    METRIC_HELP,
    METRIC_TEXT,
    stored_mapping,
    stored_number,
)
from evaluation.dashboard.common_reads import ordered_metrics
from evaluation.models import QuestionResult
from goldenset.vocabulary.metric_names import JUDGED_METRICS

_MARKERS = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
_NUMBER = re.compile(r"\d+")


def answer_segments(text: str, numbers: Iterable[int]) -> list[tuple[str, int | None]]:
    """The answer as (text, passage number or None) pieces: each citation marker's number that names one of
    the passages becomes a link to it (the template escapes every piece; nothing here is marked safe)."""
    known = set(numbers)
    out: list[tuple[str, int | None]] = []
    cursor = 0
    for match in _MARKERS.finditer(text):
        out.append((text[cursor : match.start()], None))
        inner_start = match.start(1)
        pos = match.start()
        for digits in _NUMBER.finditer(match.group(1)):
            start, end = inner_start + digits.start(), inner_start + digits.end()
            n = int(digits.group())
            out.append((text[pos:start], None))
            out.append((text[start:end], n if n in known else None))
            pos = end
        out.append((text[pos : match.end()], None))
        cursor = match.end()
    out.append((text[cursor:], None))
    merged: list[tuple[str, int | None]] = []
    for piece, number in out:
        if not piece:
            continue
        if merged and number is None and merged[-1][1] is None:
            merged[-1] = (merged[-1][0] + piece, None)
        else:
            merged.append((piece, number))
    return merged


def _text(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _extras(item: Mapping[str, Any], known: Sequence[str]) -> list[tuple[str, str]]:
    # Sorted: PostgreSQL's jsonb does not keep a document's key order, SQLite does; the page must not differ.
    return sorted((str(k), _text(v)) for k, v in item.items() if k not in known)


@dataclass
class Verdict:
    """One item of a judgement's detail: a statement, a citation or a passage, with its verdict."""

    text: str
    verdict: bool | None  # supported / supports / relevant; None when the detail does not say
    number: int | None = None
    score: float | None = None
    extra: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Judgement:
    name: str
    title: str
    value: float | None
    method: str
    method_text: str
    excluded: str  # reason text, "" when scored
    fallback: str  # why the judge fell back to the heuristic, "" when it did not
    statements: list[Verdict]
    citations: list[Verdict]
    passages: list[Verdict]
    other: list[tuple[str, str]]
    reason: str = ""  # the judge's reason for the whole metric (why it was excluded, or nothing retrieved)
    help: str = ""

    @property
    def supported(self) -> int:
        return sum(1 for s in self.statements if s.verdict)


CITATION_NUMBER = ("citation", "number", "passage", "marker")  # where a citation verdict names its passage


def _verdict(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _items(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def judgements(result: QuestionResult) -> list[Judgement]:
    """Each metric of the question, in the run's order: value, method, exclusion or fallback, and the details
    (statements, citations, passages) the judge gave; any other key of a detail as text."""
    stored = stored_mapping(result.judgements)
    names = [n for n in JUDGED_METRICS if n in stored or n in result.metrics]
    names += [n for n in ordered_metrics(stored) if n not in names]
    out = []
    for name in names:
        j = stored_mapping(stored.get(name))
        detail = stored_mapping(j.get("detail"))
        value = stored_number(j.get("value"))
        if value is None:
            value = stored_number(result.metrics.get(name))
        method = str(j.get("method") or "")
        excluded = j.get("excluded")
        statements = [
            Verdict(
                _text(s.get("text", s.get("statement", "")), 2000),
                _verdict(s.get("supported")),
                number=_int_or_none(s.get("passage")),  # the passage that supports it
                score=stored_number(s.get("support")),
                extra=_extras(s, ("text", "statement", "supported", "passage", "support")),
            )
            for s in _items(detail.get("statements"))
        ]
        citations = [
            Verdict(
                _text(c.get("statement", c.get("text", "")), 2000),
                _verdict(c.get("supports", c.get("supported"))),
                number=_int_or_none(next((c[k] for k in CITATION_NUMBER if k in c), None)),
                score=stored_number(c.get("support")),
                extra=_extras(c, ("statement", "text", "supports", "supported", "support", *CITATION_NUMBER)),
            )
            for c in _items(detail.get("citations"))
        ]
        passages = [
            Verdict(
                _text(p.get("document_id", ""), 300),
                _verdict(p.get("relevant")),
                number=_int_or_none(p.get("number")),
                score=stored_number(p.get("score")),
                extra=_extras(p, ("document_id", "relevant", "number", "score")),
            )
            for p in _items(detail.get("passages"))
        ]
        reason = detail.get("reason")
        other = _extras(detail, ("statements", "citations", "passages", "reason"))
        out.append(
            Judgement(
                name=name,
                title=METRIC_TEXT.get(name, name),
                value=value,
                method=method,
                method_text=METHOD_TEXT.get(method, method),
                excluded=(
                    EXCLUSION_TEXT.get(str(excluded), str(excluded)) if excluded and value is None else ""
                ),
                fallback=_text(j.get("fallback")) if j.get("fallback") else "",
                statements=statements,
                citations=citations,
                passages=passages,
                other=other,
                reason=_text(reason) if reason else "",
                help=METRIC_HELP.get(name, ""),
            )
        )
    return out


@dataclass
class ContextPassage:
    number: int | None
    anchor: str
    document_id: str
    collection_slug: str
    external_id: str
    page_number: Any
    title: str
    text: str
    cited: bool
    expected: bool
    relevant: bool | None  # the context-relevancy judge's verdict, when it gave one
    exists: bool = False


@dataclass
class CitationRow:
    number: int | None
    document_id: str
    statement: str
    supported: bool | None
    anchor: str


@dataclass
class AnswerView:
    segments: list[tuple[str, int | None]]
    passages: list[ContextPassage]
    citations: list[CitationRow]
    judgements: list[Judgement]
    reasons: list[str]
    warnings: list[str]


GOLDEN_CHECK = "golden-set check:"


def answer_view(
    result: QuestionResult, *, document_ids: Mapping[str, tuple[str, str, bool]] | None = None
) -> AnswerView:
    """What the question page shows of an answer: the answer's pieces, the numbered passages (cited, expected
    and relevant ones marked), the citations with the judge's verdict, every metric's judgement, and the
    question's failure reasons apart from its warnings. `document_ids` maps a passage's document id to
    (collection slug, external id, still exists) for links."""
    found = judgements(result)
    relevant: dict[int | None, bool | None] = {
        p.number: p.verdict for j in found for p in j.passages if p.number is not None
    }
    supports: dict[int | None, bool | None] = {
        c.number: c.verdict for j in found for c in j.citations if c.number is not None
    }
    cited_numbers = {n for c in _items(result.citations) if (n := _int_or_none(c.get("number"))) is not None}
    passages = []
    for i, p in enumerate(_items(result.context), start=1):
        number = _int_or_none(p.get("number"))
        document_id = str(p.get("document_id") or "")
        slug, external, exists = (document_ids or {}).get(
            document_id, (result.collection_id, document_id, False)
        )
        passages.append(
            ContextPassage(
                number=number,
                anchor=f"passage-{number if number is not None else f'x{i}'}",
                document_id=document_id,
                collection_slug=slug,
                external_id=external,
                page_number=p.get("page_number"),
                title=str(p.get("title") or ""),
                text=str(p.get("text") or ""),
                cited=number in cited_numbers,
                expected=document_id in result.expected and (result.expected.get(document_id) or 0) > 0,
                relevant=relevant.get(number),
                exists=exists,
            )
        )
    numbers = [p.number for p in passages if p.number is not None]
    citations = [
        CitationRow(
            number=(n := _int_or_none(c.get("number"))),
            document_id=str(c.get("document_id") or ""),
            statement=str(c.get("statement") or ""),
            supported=supports.get(n),
            anchor=f"passage-{n}" if n in numbers else "",
        )
        for c in _items(result.citations)
    ]
    warnings = [str(w) for w in result.warnings or []]
    reasons = [str(r) for r in result.reasons or []]
    if (
        not reasons
    ):  # a run stored before QuestionResult.reasons: its reasons follow the golden checks in warnings
        reasons = [w for w in warnings if not w.startswith(GOLDEN_CHECK)]
        warnings = [w for w in warnings if w.startswith(GOLDEN_CHECK)]
    return AnswerView(
        segments=answer_segments(result.answer or "", numbers),
        passages=passages,
        citations=citations,
        judgements=found,
        reasons=reasons,
        warnings=warnings,
    )
