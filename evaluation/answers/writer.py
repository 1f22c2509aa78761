"""Grounded answers, the pure part: from a question and its retrieved passages to an answer with citations.

Plain Python, no Django: the caller retrieves, numbers the pages it got as `Passage`s (1 = the best) and calls
`extractive_answer` (offline) or `llm_answer` (a chat model). Both return an `Answer`: its text with citation
markers "[n]", the `Citation`s read back from those markers, whether the pipeline declined, and how the answer
was made (`method`, `model`, token counts). Neither raises for a model failure: `Answer.error` says what went
wrong, and the text is then empty (it is not a refusal).

Groundedness (`GROUNDEDNESS`) is how readily the pipeline declines: "Off" always answers (only when nothing
was retrieved is there nothing to answer from); "Low", "Medium" and "High" decline, ever more readily, when the
passages do not support an answer. A declined answer is the text REFUSAL with `refused=True`.

- Extractive: every sentence of every passage is scored by the share of the question's content terms
  (goldenset.lexical) found in the sentence and its passage's title, minus RANK_WEIGHT per rank below the first
  passage (a tie-break, not a re-ranking). The best sentence answers; up to `max_sentences - 1` more join it
  when they add a question term not yet covered. They are given in reading order (passage rank, then position),
  each with its marker. `support` is the share of the question's terms those sentences (and their titles)
  cover, and a level declines when it is below GROUNDEDNESS_MIN_SUPPORT[level]. Deterministic.
- LLM: one chat call (temperature 0, the seed sent along) with the rules, the level's groundedness rule
  (GROUNDEDNESS_RULES) and the numbered passages, each cut to PROMPT_PASSAGE_CHARS; the model replies
  {"answer": str, "refused": bool}. Local models often ignore the JSON instruction, so a plain-text reply is
  accepted as the answer and `looks_like_refusal` decides whether it declines (a JSON answer declines when
  "refused" is true or its text reads as a refusal); a reply that starts as JSON but does not fit is
  unreadable (an error). Markers naming no passage are left out of the citations and listed in
  `Answer.unknown_citations`. `support` is -1.0 (there is no lexical evidence score).

Honest limits: the extractive answer copies sentences, so it is faithful by construction but never combines,
rephrases or resolves pronouns ("It opened in 1889." is cited as written), and its support is lexical (no
synonyms; a title naming the question's subject lends that share of support to every sentence of its page).
`looks_like_refusal` is phrase matching on English phrasings. Sentence splitting is by punctuation and a
capital letter after it, with a few abbreviations known ("Dr.", "e.g."): "U.S. Army" is split.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalsite.errors import EvalsiteError
from evalsite.llm.client import ChatClient
from evalsite.llm.json_replies import extract_json, validate
from goldenset import lexical
from goldenset.vocabulary.chunks import cut_at_word
from goldenset.vocabulary.groundedness import GROUNDEDNESS_LEVELS
from goldenset.vocabulary.sentences import split_sentences

__all__ = [
    "GROUNDEDNESS",
    "GROUNDEDNESS_MIN_SUPPORT",
    "GROUNDEDNESS_RULES",
    "REFUSAL",
    "Answer",
    "Citation",
    "Passage",
    "answer_messages",
    "extractive_answer",
    "format_passages",
    "llm_answer",
    "looks_like_refusal",
    "parse_citations",
    "split_sentences",
    "strip_markers",
    "unknown_citations",
]

GROUNDEDNESS = GROUNDEDNESS_LEVELS  # PascalCase enum values as in the API
REFUSAL = "I cannot answer this from the available documents."
EXTRACTIVE, LLM = "extractive", "llm"

# The extractive answer declines when the share of the question's content terms its sentences cover is below
# this. Off never declines (0.0). Calibrated on ClapNQ (300 answerable, 300 unanswerable with an on-topic
# passage): each level declines more unanswerable than answerable questions; see
# `benchmarks/clapnq_answers.py --sweep` for the whole curve. Keep every threshold here.
GROUNDEDNESS_MIN_SUPPORT: dict[str, float] = {"Off": 0.0, "Low": 0.35, "Medium": 0.5, "High": 0.6}
ADD_MIN_RELATIVE = 0.6  # a second sentence must cover at least this share of what the best one covers
RANK_WEIGHT = 0.01  # subtracted from a sentence's score per rank below the first passage
MIN_SENTENCE_WORDS = 3  # shorter pieces (headings, "See also.") answer only when nothing else can
PROMPT_PASSAGE_CHARS = 2000  # a passage longer than this is cut for a prompt (at a word)


@dataclass(frozen=True)
class Passage:
    """One retrieved page, numbered for citation in rank order."""

    number: int  # 1-based citation number [n]
    document_id: str
    page_number: int
    title: str
    text: str


@dataclass(frozen=True)
class Citation:
    number: int  # [n]
    document_id: str
    statement: str  # the answer sentence the marker is attached to, markers removed


@dataclass(frozen=True)
class Answer:
    text: str
    refused: bool  # structured: the pipeline declined
    citations: tuple[Citation, ...]
    method: str  # "extractive" | "llm"
    model: str  # "" for extractive
    support: float  # extractive: the groundedness evidence score in 0..1; llm: -1.0 (none)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cached: bool = False
    error: str | None = None  # "<code>: <message>" when the call failed or was unreadable; text "" then
    unknown_citations: tuple[int, ...] = ()  # markers naming no passage (left out of `citations`)


# --- sentences and citation markers ---------------------------------------------------------------------------

# "[1]", "[1, 3]", "[2-4]", and the "[Passage 1]" / "[Source 2]" some models write.
_NUMBERS = r"\d{1,4}(?:\s*(?:[,;]|[-–])\s*\d{1,4})*"
_MARKER_TEXT = r"\[\s*(?:(?:passages?|sources?|documents?|docs?)\s*)?{}\s*\]"
_MARKER = re.compile(_MARKER_TEXT.format(f"({_NUMBERS})"), re.IGNORECASE)
# Markers written after the sentence's full stop ("... 30 days. [1]") belong to that sentence.
_MARKERS_AFTER_END = re.compile(rf"([.!?。！？])((?:\s*{_MARKER_TEXT.format(_NUMBERS)})+)", re.IGNORECASE)
_SPACES = re.compile(r"[^\S\n]+")
_SPACE_BEFORE_PUNCT = re.compile(r"[^\S\n]+([.,;:!?。！？])")
_END_PUNCT = re.compile(r"^(.*?)\s*([.!?。！？]+)$", re.DOTALL)


def _attach_markers(text: str) -> str:
    return _MARKERS_AFTER_END.sub(lambda m: " " + "".join(m[2].split()) + m[1], text)


def strip_markers(text: str) -> str:
    """text without citation markers ("30 days [1]." -> "30 days."); spaces collapsed, line breaks kept."""
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", _SPACES.sub(" ", _MARKER.sub(" ", text)))
    return "\n".join(line.strip() for line in text.split("\n")).strip()


def _marker_numbers(sentence: str) -> list[int]:
    """The numbers of the markers in sentence, in order, each once: "[1, 3]" -> 1, 3; "[2-4]" -> 2, 3, 4."""
    numbers: list[int] = []
    for match in _MARKER.finditer(sentence):
        for item in re.split(r"\s*[,;]\s*", match[1]):
            bounds = [int(b) for b in re.split(r"\s*[-–]\s*", item)]
            start, end = bounds[0], bounds[-1]
            span = range(start, end + 1) if start <= end <= start + 50 else range(start, start + 1)
            numbers.extend(n for n in span if n not in numbers)
    return numbers


def _cited_sentences(text: str) -> list[tuple[str, list[int]]]:
    """(statement without markers, its marker numbers) per sentence; a sentence that is only markers lends
    them to the sentence before it."""
    out: list[tuple[str, list[int]]] = []
    for sentence in split_sentences(_attach_markers(text)):
        statement, numbers = strip_markers(sentence), _marker_numbers(sentence)
        if not statement.strip(" .!?。！？") and out:
            previous, earlier = out[-1]
            out[-1] = (previous, earlier + [n for n in numbers if n not in earlier])
        else:
            out.append((statement, numbers))
    return out


def parse_citations(text: str, passages: Sequence[Passage]) -> tuple[Citation, ...]:
    """The citations of an answer: one per marker number per sentence ("[1, 3]" and "[1][3]" give two), in
    order. A number naming no passage is left out (see `unknown_citations`)."""
    by_number = {p.number: p for p in passages}
    return tuple(
        Citation(number=n, document_id=by_number[n].document_id, statement=statement)
        for statement, numbers in _cited_sentences(text)
        for n in numbers
        if n in by_number
    )


def unknown_citations(text: str, passages: Sequence[Passage]) -> tuple[int, ...]:
    """Marker numbers in text that name no passage, each once, in order of first appearance."""
    known = {p.number for p in passages}
    out: list[int] = []
    for _, numbers in _cited_sentences(text):
        out.extend(n for n in numbers if n not in known and n not in out)
    return tuple(out)


# --- refusals ---------------------------------------------------------------------------------------------------

_DOCS = r"(?:provided |given |available |retrieved |above |these |the )*(?:documents?|passages?|context|sources?|texts?|excerpts?|information)"
_REFUSAL_PHRASES = re.compile(
    "|".join(
        [
            r"\b(?:i|we)(?: am| are|'m|'re)? (?:cannot|can't|can ?not|could not|couldn't|am unable to|are unable to"
            r"|unable to|not able to|am not able to) (?:answer|find|determine|tell|say|provide|confirm|locate)",
            r"\b(?:i|we) (?:do not|don't) (?:know|have (?:enough|sufficient|the|any) (?:information|context|details))",
            r"\b(?:not enough|insufficient|no relevant|no sufficient) (?:information|context|evidence|details?|data)\b",
            rf"\b{_DOCS} (?:do|does|did) ?(?:not|n't) (?:say|mention|contain|provide|include|specify|state|cover"
            r"|address|discuss|give|answer|offer|describe)",
            rf"\b(?:not|isn't|is not|aren't|are not) (?:mentioned|stated|specified|covered|addressed|found|provided"
            rf"|available|given|described|discussed) in {_DOCS}",
            r"\b(?:cannot|can't|can not|could not) be (?:answered|determined)\b",
            r"\bthere (?:is|was) no (?:relevant )?(?:information|mention|data|answer)\b",
            r"\bno (?:information|answer) (?:is |was )?(?:available|provided|given)\b",
        ]
    )
)


def looks_like_refusal(text: str) -> bool:
    """Whether a free-text answer declines: a refusal phrasing ("I cannot answer", "not enough information",
    "the documents do not say", "is not mentioned in the passages", "there is no information", ...) in a
    sentence that no cited sentence precedes. "X [1]. The documents do not say when." is a partial answer,
    not a refusal. English phrasings only; an empty text is not a refusal (it is no answer)."""
    for sentence in split_sentences(_attach_markers(text.replace("’", "'"))):
        if _MARKER.search(sentence):  # cited: an answer, whatever it says
            return False
        if _REFUSAL_PHRASES.search(sentence.casefold()):
            return True
    return False


# --- the extractive answer ----------------------------------------------------------------------------------------


def _level(groundedness: str) -> str:
    for level in GROUNDEDNESS:
        if groundedness.casefold() == level.casefold():
            return level
    raise ValueError(f"unknown groundedness {groundedness!r}; one of {', '.join(GROUNDEDNESS)}")


@dataclass(frozen=True)
class _Candidate:
    rank: int  # 0-based position of the passage in the sequence
    position: int  # of the sentence in its passage
    passage: Passage
    sentence: str
    own: frozenset[str]  # the sentence's content terms
    evidence: frozenset[str]  # own plus the passage title's


def _refusal(method: str, model: str, support: float, **extra: Any) -> Answer:
    return Answer(REFUSAL, True, (), method, model, support, **extra)


def _with_marker(sentence: str, number: int) -> str:
    match = _END_PUNCT.match(sentence)
    if match:
        return f"{match[1]} [{number}]{match[2]}"
    return f"{sentence} [{number}]"  # no final stop, or a closing quote or bracket: the marker goes last


def extractive_answer(
    question: str, passages: Sequence[Passage], groundedness: str, *, max_sentences: int = 2
) -> Answer:
    """The offline answer: the passages' best sentences for the question, each cited (see the module doc)."""
    level = _level(groundedness)
    if max_sentences < 1:
        raise ValueError("max_sentences must be at least 1")
    asked = frozenset(lexical.content_terms(question))
    candidates: list[_Candidate] = []
    short: list[_Candidate] = []
    for rank, passage in enumerate(passages):
        title = frozenset(lexical.content_terms(passage.title))
        for position, sentence in enumerate(split_sentences(strip_markers(passage.text))):
            own = frozenset(lexical.content_terms(sentence))
            candidate = _Candidate(rank, position, passage, sentence, own, own | title)
            long_enough = lexical.word_count(sentence) >= MIN_SENTENCE_WORDS and own
            (candidates if long_enough else short).append(candidate)
    candidates = candidates or short
    if not candidates:
        return _refusal(EXTRACTIVE, "", 0.0)

    def key(c: _Candidate) -> tuple[float, int, int]:
        return (-(lexical.coverage(asked, c.evidence) - RANK_WEIGHT * c.rank), c.rank, c.position)

    ranked = sorted(candidates, key=key)
    chosen = [ranked[0]]
    covered = asked & ranked[0].evidence
    best = lexical.coverage(asked, ranked[0].evidence)
    for candidate in ranked[1:]:
        if len(chosen) >= max_sentences:
            break
        # Another sentence joins when it answers more of the question and is itself on topic: one shared word
        # ("sang") must not bring a sentence about something else.
        on_topic = lexical.coverage(asked, candidate.evidence) >= ADD_MIN_RELATIVE * best
        if on_topic and (asked & candidate.own) - covered:
            chosen.append(candidate)
            covered |= asked & candidate.evidence
    support = len(covered) / len(asked) if asked else 0.0
    if support < GROUNDEDNESS_MIN_SUPPORT[level]:
        return _refusal(EXTRACTIVE, "", support)
    chosen.sort(key=lambda c: (c.rank, c.position))
    text = " ".join(_with_marker(c.sentence, c.passage.number) for c in chosen)
    citations = tuple(Citation(c.passage.number, c.passage.document_id, c.sentence) for c in chosen)
    return Answer(text, False, citations, EXTRACTIVE, "", support)


# --- the LLM answer -------------------------------------------------------------------------------------------------

GROUNDEDNESS_RULES: dict[str, str] = {
    "Off": "Always answer. When the passages fall short, give the best answer they allow; do not decline.",
    "Low": "Decline only when the passages hold nothing relevant to the question; otherwise answer with what "
    "they say.",
    "Medium": "Decline when the passages do not contain the information the question asks for; do not guess "
    "or fill gaps.",
    "High": "Decline unless the passages state the answer explicitly. Every statement must be directly "
    "supported by a passage; if any part of the answer would need information the passages lack, decline.",
}

SYSTEM_PROMPT = (
    "You answer questions using only the numbered passages the user gives you.\n"
    "Rules:\n"
    "- Use only facts stated in the passages; add no outside knowledge.\n"
    "- Cite every statement with the number of the passage that supports it, in square brackets at the end "
    'of the sentence: "Refunds take 30 days [2]." Cite several passages as [1, 3].\n'
    "- {rule}\n"
    "{decline}"
    'Reply with JSON only: {{"answer": "...", "refused": false}}'
)
DECLINE_INSTRUCTION = f'- To decline, answer "{REFUSAL}" and set "refused" to true.\n'

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"type": "string"}, "refused": {"type": "boolean"}},
}

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_WHOLE_FENCE = re.compile(r"^```[^\n]*\n(.*?)\n?```$", re.DOTALL)
_TRIED_JSON = re.compile(r"^(?:```[ \t]*(?:json)?[^\n]*\n\s*)?[{\[]", re.IGNORECASE)


def format_passages(passages: Sequence[Passage], max_chars: int = PROMPT_PASSAGE_CHARS) -> str:
    """The passages as a prompt shows them: "[n] title" then the text (cut at a word past max_chars)."""
    blocks = []
    for passage in passages:
        text = cut_at_word(passage.text.strip(), max_chars, " ...")
        head = f"[{passage.number}] {passage.title}".rstrip()
        blocks.append(f"{head}\n{text}")
    return "\n\n".join(blocks)


def answer_messages(question: str, passages: Sequence[Passage], groundedness: str) -> list[dict[str, str]]:
    level = _level(groundedness)
    system = SYSTEM_PROMPT.format(
        rule=GROUNDEDNESS_RULES[level], decline="" if level == "Off" else DECLINE_INSTRUCTION
    )
    user = f"Question: {question.strip()}\n\nPassages:\n{format_passages(passages)}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _read_answer(raw: str) -> tuple[str, bool]:
    """(answer text, refused) from a model's reply: the JSON asked for, or plain text (lenient)."""
    cleaned = _THINK.sub("", raw or "").strip()
    if not cleaned:
        raise EvalsiteError("llm-unreadable", "The model's answer is empty.", status=502)
    try:
        data = extract_json(cleaned, expect="object")
        validate(data, ANSWER_SCHEMA)
    except EvalsiteError:
        if _TRIED_JSON.match(cleaned):  # it tried JSON and got it wrong
            raise
        fenced = _WHOLE_FENCE.match(cleaned)
        cleaned = fenced[1].strip() if fenced else cleaned
        if not cleaned:
            raise EvalsiteError("llm-unreadable", "The model's answer is empty.", status=502) from None
        return cleaned, looks_like_refusal(cleaned)
    text = data["answer"].strip()
    refused = data.get("refused") is True or looks_like_refusal(text)
    if not text and not refused:
        raise EvalsiteError("llm-unreadable", "The model's answer is empty.", status=502)
    return text or REFUSAL, refused


def llm_answer(
    client: ChatClient,
    model: str,
    question: str,
    passages: Sequence[Passage],
    groundedness: str,
    *,
    seed: int | None = None,
    max_tokens: int = 400,
) -> Answer:
    """A chat model's grounded answer (see the module doc). With no passages it declines without a call;
    a failed or unreadable call gives an Answer with `error` set (never raised)."""
    level = _level(groundedness)
    if not passages:
        return _refusal(LLM, model, -1.0)
    try:
        result = client.complete(
            answer_messages(question, passages, level), model=model, max_tokens=max_tokens, seed=seed
        )
    except EvalsiteError as exc:
        return Answer("", False, (), LLM, model, -1.0, error=f"{exc.code}: {exc.message}")
    usage: dict[str, Any] = {
        "prompt_tokens": result.prompt_tokens or 0,
        "completion_tokens": result.completion_tokens or 0,
        "latency_ms": result.latency_ms,
        "cached": result.cached,
    }
    used = result.model or model
    try:
        text, refused = _read_answer(result.text)
    except EvalsiteError as exc:
        return Answer("", False, (), LLM, used, -1.0, error=f"{exc.code}: {exc.message}", **usage)
    if refused:
        return Answer(text, True, (), LLM, used, -1.0, **usage)
    return Answer(
        text,
        False,
        parse_citations(text, passages),
        LLM,
        used,
        -1.0,
        unknown_citations=unknown_citations(text, passages),
        **usage,
    )
