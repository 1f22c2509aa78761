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

Heuristic (deterministic, keyless: lexical overlap; the title of a passage counts as part of it):

- Support (`statement_support`, built in evaluation.answers.judge_support): a statement's support by a passage is the
  share of its content terms the passage holds, each weighed by its rarity (idf; in the collection when the
  caller gives `TermWeights`, as answer evaluations do, else over the passages at hand), blended with the share
  of its word pairs (adjacent content terms) found in order, then cut for a number or a name the passage lacks,
  for a short statement (SHORT_TERMS terms or fewer) missing any term, and for a negation word the passage's closest
  sentence does not share. Numbers stay whole ("$1,000", "3.5%", "1,200 km", "March 3, 1998"); statements are
  not cut at initials and abbreviations ("Robert E. Lee", "U.S. Army"). When no single passage reaches
  SUPPORT_MIN, the best passage and one of the next two may support it together, at PAIR_DISCOUNT of their joint
  score. Supported = support >= SUPPORT_MIN. Faithfulness and context recall take the best evidence (each
  statement's detail keeps "text", "supported", "support", "passage", and adds "coverage", the plain share of
  terms, and "passages"); citation precision only the cited passage. Its constants and SUPPORT_MIN are chosen
  on public labels (benchmarks/judge_agreement.py: abstractive answers, summaries, and the repo's extractive
  regression cases; docs/evaluation.md gives the figures and the command).
- answer_relevancy = coverage of the question's content terms by the answer, times a focus factor
  RELEVANCY_FOCUS_FLOOR + (1 - RELEVANCY_FOCUS_FLOOR) * (share of the answer's statements sharing a term with
  the question): padding with off-topic statements costs up to half. Its natural scale is lower than the
  others' (answers rarely repeat "how long" or "request"), hence the lower default pass threshold (0.4).
- A passage is relevant when it holds at least RELEVANT_MIN of the question's content terms, or of the
  reference answer's (the reference's vocabulary recognizes a passage that answers without echoing the
  question); its score is the larger of the two shares.

Honest limits of the heuristic: no synonyms or paraphrase without shared words ("two weeks" does not support
"14 days"); negation only as a word (not, no, never, without, n't) in the statement or the passage's closest
sentence, so an antonym ("refunds are refused" for "refunds are given") or swapped roles ("Grant surrendered to
Lee") pass when the words are there; no reasoning beyond two passages side by side. A terse correct answer
("30 days") can score 0 on answer relevancy.

LLM judge (`evaluation.answers.judge_llm.LLMJudge`): one call per metric, temperature 0, asking for JSON (per-statement, per-citation or
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

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalsite.llm.client import map_concurrent
from evaluation.answers.judge_support import Evidence, TermWeights, evidence_of, support_of
from evaluation.answers.writer import Answer, Passage, split_sentences, strip_markers
from goldenset import lexical
from goldenset.vocabulary.metric_names import JUDGED_METRICS

METRICS = JUDGED_METRICS
HEURISTIC, LLM_JUDGE = "heuristic", "llm-judge"
# The heuristic's version, raised whenever a change moves its scores, recorded with every run it judges
# (evaluation.answers.judge_identity) so Compare can tell runs judged by different heuristics apart.
HEURISTIC_VERSION = "evalsite-heuristic-2"
NOT_APPLICABLE, UNREADABLE = "not-applicable", "unreadable"

# The support score (judge_support.support_of) from which a statement is supported: chosen, with the constants of
# judge_support and PAIR_DISCOUNT, on the dev parts of public sets labelled by people who did not build the judge
# (benchmarks/judge_agreement.py --sweep; its rule in choose_threshold), on the kind of answer named here.
SUPPORT_MIN = 0.51
SUPPORT_MIN_CHOSEN_ON = (
    "abstractive answers: long-form answers by GPT-3, Alpaca and WebGPT, three raters per sentence (the dev part of "
    "LFQA-Verification)"
)
PAIR_DISCOUNT = 1.0  # two passages together support a statement at this share of their joint score (0: never)
PAIR_CANDIDATES = 3  # the best passage is paired with the next best up to this rank
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


def excluded_score(method: str, reason: str, excluded: str = NOT_APPLICABLE, **detail: Any) -> Score:
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


# A piece ending in an initial ("Robert E.", "Washington D.C.", "the U.S.") or a common abbreviation, before a
# word that does not usually start a sentence: split_sentences cut there, the statement goes on.
_ENDS_IN_ABBREVIATION = re.compile(
    r"(?:\b[A-Z]\.(?:[A-Z]\.)*|\b(?:Jr|Sr|Inc|Ltd|Co|Corp|Gen|Gov|Sen|Rep|Lt|Col|Capt|Mt|Ft|Jan|Feb|Mar|Apr"
    r"|Aug|Sept?|Oct|Nov|Dec|U\.S|U\.K)\.)$"
)
_STARTER_WORDS = (
    "a an the he she it its they we i you this that these those there in on at after before when while but and "
    "however his her their our as by for from if since so then thus"
)
_SENTENCE_STARTERS = frozenset(_STARTER_WORDS.split())


def _continues(previous: str, following: str) -> bool:
    if not _ENDS_IN_ABBREVIATION.search(previous):
        return False
    words = following.split(maxsplit=1)
    return bool(words) and words[0].strip("\"'“(").casefold() not in _SENTENCE_STARTERS


def statement_sentences(text: str) -> list[str]:
    """split_sentences, with the cuts after an initial or abbreviation mended: "General Robert E. Lee
    surrendered." and "It moved to the U.S. Army base." stay one sentence; "He lived in the U.S. He left." is
    two (a pronoun, an article or a preposition after the stop starts a sentence)."""
    out: list[str] = []
    for sentence in split_sentences(text):
        if out and _continues(out[-1], sentence):
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    return out


# An inline list's markers ("... router: 1. Unplug it. 2. Wait."): a number and a stop or parenthesis, standing
# alone, before a word; counted as a list only when they run 1, 2, ... in order.
_INLINE_MARKER = re.compile(r"(?<!\S)(\d{1,2})[.)]\s+(?=\S)")
# A heading line: a Markdown heading, or a line that is all bold; a lead-in: a sentence ending in a colon.
_HEADING_LINE = re.compile(r"^[ \t]*(?:#{1,6}[ \t][^\n]*|\*\*[^*\n]+\*\*:?)[ \t]*$", re.MULTILINE)
_LEAD_IN = re.compile(r"^[^.!?]*:$")


def _inline_lists_broken(text: str) -> str:
    """text with an inline numbered list's markers made line breaks, as a list written one item a line is
    read: "1." is a marker, never a statement, and its item is a sentence of its own."""
    markers = list(_INLINE_MARKER.finditer(text))
    numbers = [int(m.group(1)) for m in markers]
    if len(numbers) < 2 or numbers[:2] != [1, 2] or any(b != a + 1 for a, b in itertools.pairwise(numbers)):
        return text
    out: list[str] = []
    position = 0
    for match in markers:
        out.extend((text[position : match.start()], "\n\n"))
        position = match.end()
    return "".join([*out, text[position:]])


def statements(text: str) -> list[str]:
    """The atomic statements of text: its sentences (`statement_sentences`, an inline numbered list read as one
    item a line), split further at ";" and at ", and" / ", but" joining two independent clauses (see
    `_clauses`); citation markers removed; list markers, headings (a Markdown heading, a bold line, a lead-in
    ending in a colon) and pieces without a content term dropped."""
    out: list[str] = []
    text = _HEADING_LINE.sub("\n\n", strip_markers(text))
    for sentence in statement_sentences(_inline_lists_broken(text)):
        for part in sentence.split(";"):
            for clause in _clauses(part.strip()):
                clause = clause.strip(" ,")
                if lexical.content_terms(clause) and not _LEAD_IN.match(clause):
                    out.append(clause)
    return out


# --- heuristic support ------------------------------------------------------------------------------------------


def _terms_of(passage: Passage) -> frozenset[str]:
    return frozenset(lexical.content_terms(f"{passage.title}\n{passage.text}"))


def _evidence(passages: Sequence[Passage]) -> list[Evidence]:
    return [evidence_of(p.number, p.title, p.text) for p in passages]


def passage_weights(passages: Sequence[Passage]) -> TermWeights:
    """Term rarity over the passages at hand, for a caller without collection statistics."""
    return TermWeights.from_texts(f"{p.title}\n{p.text}" for p in passages)


def _verdict(statement: str, evidence: Sequence[Evidence], weights: TermWeights) -> dict[str, Any]:
    """The best support of statement by one piece of evidence, or by two together (see statement_support)."""
    scored = sorted(
        ((*support_of(statement, e, weights), e) for e in evidence), key=lambda row: (-row[0], row[2].numbers)
    )
    if not scored:
        return {
            "text": statement,
            "supported": False,
            "support": 0.0,
            "coverage": 0.0,
            "passage": None,
            "passages": [],
        }
    score, coverage, best = scored[0]
    if PAIR_DISCOUNT > 0 and score < SUPPORT_MIN:
        for _, _, other in scored[1:PAIR_CANDIDATES]:
            together, together_coverage = support_of(statement, best + other, weights)
            if together * PAIR_DISCOUNT > score:
                score, coverage, best = together * PAIR_DISCOUNT, together_coverage, best + other
    supported = score >= SUPPORT_MIN
    numbers = list(best.numbers) if supported else []
    return {
        "text": statement,
        "supported": supported,
        "support": round(score, 4),
        "coverage": round(coverage, 4),
        "passage": numbers[0] if numbers else None,
        "passages": numbers,
    }


def statement_support(
    statement: str, passages: Sequence[Passage], weights: TermWeights | None = None
) -> dict[str, Any]:
    """How well passages support one statement, the heuristic's verdict: {"text", "supported", "support" (the
    continuous score in 0..1; supported when >= SUPPORT_MIN), "coverage" (the plain share of the statement's
    distinct terms found in the chosen evidence), "passage" (the supporting passage's number, or None),
    "passages" (every supporting passage's number: two when two passages support it together)}.

    weights: term rarity in the collection (`TermWeights`), or None for rarity over these passages."""
    return _verdict(statement, _evidence(passages), weights or passage_weights(passages))


def share_of(verdicts: Sequence[dict[str, Any]], key: str) -> float:
    return sum(1 for v in verdicts if v[key]) / len(verdicts)


def judgeable(answer: Answer) -> tuple[list[str], str | None]:
    """The answer's statements, or why there is nothing to judge (then no call is made)."""
    if answer.error is not None:
        return [], f"the answer failed: {answer.error}"
    if answer.refused:
        return [], "the answer declined"
    found = statements(answer.text)
    return found, None if found else "the answer has no statements"


# --- heuristic metrics ------------------------------------------------------------------------------------------


def _verdicts(
    found: Sequence[str], passages: Sequence[Passage], weights: TermWeights | None
) -> list[dict[str, Any]]:
    evidence = _evidence(passages)
    weights = weights or passage_weights(passages)
    return [_verdict(s, evidence, weights) for s in found]


def faithfulness(answer: Answer, passages: Sequence[Passage], weights: TermWeights | None = None) -> Score:
    found, problem = judgeable(answer)
    if problem:
        return excluded_score(HEURISTIC, problem)
    verdicts = _verdicts(found, passages, weights)
    return Score(share_of(verdicts, "supported"), HEURISTIC, {"statements": verdicts})


def context_recall(reference: str, passages: Sequence[Passage], weights: TermWeights | None = None) -> Score:
    found = statements(reference)
    if not found:
        return excluded_score(HEURISTIC, "no reference answer")
    verdicts = _verdicts(found, passages, weights)
    return Score(share_of(verdicts, "supported"), HEURISTIC, {"statements": verdicts})


def answer_relevancy(question: str, answer: Answer) -> Score:
    found, problem = judgeable(answer)
    asked = frozenset(lexical.content_terms(question))
    if problem or not asked:
        return excluded_score(HEURISTIC, problem or "the question has no content terms")
    coverage = lexical.coverage(asked, lexical.content_terms(strip_markers(answer.text)))
    on_topic = [bool(asked & set(lexical.content_terms(s))) for s in found]
    focus = sum(on_topic) / len(on_topic)
    value = coverage * (RELEVANCY_FOCUS_FLOOR + (1 - RELEVANCY_FOCUS_FLOOR) * focus)
    return Score(value, HEURISTIC, {"question_coverage": round(coverage, 4), "focus": round(focus, 4)})


def citation_precision(
    answer: Answer, passages: Sequence[Passage], weights: TermWeights | None = None
) -> Score:
    problem = judgeable(answer)[1]
    if problem or not answer.citations:
        return excluded_score(HEURISTIC, problem or "the answer cited nothing", citations=[])
    by_number = {p.number: p for p in passages}
    weights = weights or passage_weights(passages)
    verdicts = []
    for citation in answer.citations:
        passage = by_number.get(citation.number)
        supported, share = False, 0.0
        if passage is not None:  # support by the cited passage alone: another passage cannot lend it
            row = _verdict(citation.statement, _evidence([passage]), weights)
            supported, share = row["supported"], row["support"]
        verdicts.append(
            {
                "citation": citation.number,
                "document_id": citation.document_id,
                "statement": citation.statement,
                "supports": supported,
                "support": round(share, 4),
            }
        )
    return Score(share_of(verdicts, "supports"), HEURISTIC, {"citations": verdicts})


def context_relevancy(question: str, passages: Sequence[Passage], reference: str = "") -> Score:
    if not passages:  # nothing retrieved is relevant: a real 0, not an exclusion
        return Score(0.0, HEURISTIC, {"passages": [], "reason": "nothing was retrieved"})
    asked = frozenset(lexical.content_terms(question))
    expected = frozenset(lexical.content_terms(reference))
    if not asked and not expected:
        return excluded_score(HEURISTIC, "the question has no content terms")
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
    return Score(share_of(rows, "relevant"), HEURISTIC, {"passages": rows})


class MetricJudge(Protocol):
    """What judges the five metrics in place of the heuristic (evaluation.answers.judge_llm.LLMJudge): named here, so
    that this module does not import the judge that imports it."""

    def faithfulness(self, answer: Answer, passages: Sequence[Passage]) -> Score: ...
    def context_recall(self, reference: str, passages: Sequence[Passage]) -> Score: ...
    def answer_relevancy(self, question: str, answer: Answer, reference: str = "") -> Score: ...
    def citation_precision(self, answer: Answer, passages: Sequence[Passage]) -> Score: ...
    def context_relevancy(self, question: str, passages: Sequence[Passage], reference: str = "") -> Score: ...


def judge_question(
    question: str,
    reference: str,
    answer: Answer,
    passages: Sequence[Passage],
    judge: MetricJudge | None,
    weights: TermWeights | None = None,
) -> dict[str, Score]:
    """The five metrics of one answered question, in METRICS order: by the heuristic when judge is None, else
    by the judge (one call each, concurrently; a failed call falls back per metric). weights: term rarity in
    the collection for the heuristic's support (None: over these passages)."""
    if judge is None:
        return {
            "faithfulness": faithfulness(answer, passages, weights),
            "context_recall": context_recall(reference, passages, weights),
            "answer_relevancy": answer_relevancy(question, answer),
            "citation_precision": citation_precision(answer, passages, weights),
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
