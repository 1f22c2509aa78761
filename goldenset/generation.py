"""Golden-set generation, the pure part: page sampling, question writers, and the loop that gates their drafts.

Plain Python, no Django: the job in goldenset.services.generate loads pages, calls `generate`, and stores what
it accepts through its `on_page` callback.

- Sampling (`sample_pages`): every candidate page gets the rank sha256(seed, document id, page number); a
  document contributes its lowest-ranked page, and documents are taken in the order of that rank. The order
  depends on the seed and the ids only (not on database order), so a seed reproduces a sample exactly, and a
  different seed gives a different one.
- Writers turn one page into a `Draft` (question, reference answer, or why there is none):
  `ChatQuestionWriter` asks a chat model through evalsite.llm.client.ChatClient (temperature 0, the seed sent along,
  the call cache making a re-run free and identical); `TemplateQuestionWriter` is the offline fallback: a
  simple factual question from one of the page's clear sentences (goldenset.clear_sentences),
  deterministically, or "no_clear_sentence" when the page has none. A writer never raises for a model
  failure: it returns a draft whose `failure` says "model_error" or "unreadable".
- `generate` runs a writer over the sampled pages with `writer.concurrency` calls in flight, but gates the
  drafts strictly in sample order, so the outcome (which pages, which questions, which discards) is the one a
  sequential run gives. It never sends more calls than questions still needed, so none is wasted when every
  draft passes; it stops at `count` accepted, when the pages run out, when `should_stop()` says so (a cancel),
  or after `max_consecutive_failures` model errors in a row (a dead endpoint), with a warning. A draft whose
  normalised question (goldenset.text.question_hash) is among `rejected` is discarded as "rejected_before"
  before the gate sees it, and the loop tries the next page, as for any other discard.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections import deque
from collections.abc import Callable, Container, Hashable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, TypeVar

from evalsite.errors import EvalsiteError
from evalsite.llm.client import ChatClient
from evalsite.llm.json_replies import extract_json, validate
from goldenset.clear_sentences import clear_question
from goldenset.duplicates import DuplicateIndex
from goldenset.quality import REASONS, GateLimits, Verdict, check
from goldenset.text import question_hash
from goldenset.vocabulary.chunks import cut_at_word

K = TypeVar("K", bound=Hashable)

MODEL_ERROR = "model_error"
UNREADABLE = "unreadable"
# The offline writer found no sentence to ask about: counted as Outcome.no_clear_sentence, not a discard.
NO_CLEAR_SENTENCE = "no_clear_sentence"
# The draft is a question a curator rejected in this collection before (goldenset.services.rejections).
REJECTED_BEFORE = "rejected_before"
DISCARD_REASONS: tuple[str, ...] = (*REASONS, REJECTED_BEFORE, UNREADABLE, MODEL_ERROR)
TEMPLATE_MODEL = "template"
SEED_MAX = 2**63 - 1
PROMPT_PAGE_CHARS = 6000  # a page longer than this is cut for the prompt (at a word)


def new_seed() -> int:
    return secrets.randbelow(2**31)


# --- sampling ------------------------------------------------------------------------------------------------


def page_rank(seed: int, document_id: str, page_number: int) -> bytes:
    return hashlib.sha256(f"{seed}\x1f{document_id}\x1f{page_number}".encode()).digest()


def sample_pages(candidates: Iterable[tuple[K, str, int]], seed: int) -> list[K]:
    """(key, document id, page number) candidates -> keys of at most one page per document, in seeded order."""
    best: dict[str, tuple[bytes, K]] = {}
    for key, document_id, number in candidates:
        rank = page_rank(seed, document_id, number)
        if document_id not in best or rank < best[document_id][0]:
            best[document_id] = (rank, key)
    return [key for _, key in sorted(best.values(), key=lambda pair: pair[0])]


# --- writers -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageText:
    key: int  # the page's primary key (the caller's handle)
    document_id: str
    number: int
    title: str
    text: str


@dataclass(frozen=True)
class Draft:
    question: str = ""
    answer: str = ""
    failure: str | None = None  # MODEL_ERROR, UNREADABLE or NO_CLEAR_SENTENCE: no usable draft
    detail: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cached: bool = False
    called: bool = False  # a model was asked (the template writer asks none)


class QuestionWriter(Protocol):
    model: str
    concurrency: int

    def write(self, page: PageText, seed: int) -> Draft: ...


DRAFT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["question", "answer"],
    "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
}

SYSTEM_PROMPT = (
    "You write evaluation questions for a search engine. Given one passage of a collection, write one "
    "question a user could type into the search box without having seen the passage, and its answer.\n"
    "Rules:\n"
    "- The question is self-contained: it names its subject explicitly and never refers to the passage, "
    "the text, the document, this section or the author.\n"
    "- The passage alone answers it, and the answer is not already in the question.\n"
    "- The answer is one or two sentences using only facts stated in the passage.\n"
    'Reply with JSON only: {"question": "...", "answer": "..."}'
)


def prompt_messages(page: PageText) -> list[dict[str, str]]:
    text = cut_at_word(page.text, PROMPT_PAGE_CHARS, " ...")
    title = f"Title: {page.title}\n" if page.title else ""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"{title}Passage:\n<<<\n{text}\n>>>"},
    ]


class ChatQuestionWriter:
    """A chat model writes the question and answer (LLM mode)."""

    def __init__(self, client: ChatClient, model: str, max_tokens: int = 400):
        self.client = client
        self.model = model
        self.concurrency = client.concurrency
        self.max_tokens = max_tokens

    def write(self, page: PageText, seed: int) -> Draft:
        try:
            result = self.client.complete(
                prompt_messages(page), model=self.model, max_tokens=self.max_tokens, seed=seed
            )
        except EvalsiteError as exc:
            return Draft(failure=MODEL_ERROR, detail=exc.message, called=True)
        made = partial(
            Draft,
            prompt_tokens=result.prompt_tokens or 0,
            completion_tokens=result.completion_tokens or 0,
            latency_ms=result.latency_ms,
            cached=result.cached,
            called=True,
        )
        try:
            data = extract_json(result.text, expect="object")
            validate(data, DRAFT_SCHEMA)
        except EvalsiteError as exc:
            return made(failure=UNREADABLE, detail=exc.message)
        return made(question=_one_line(data["question"]), answer=_one_line(data["answer"]))


class TemplateQuestionWriter:
    """The offline fallback: a simple factual question from one of the page's clear sentences, no model.

    goldenset.clear_sentences finds the page's most informative sentence whose subject and verb say what to ask
    ("X is a Y ..." -> "What is X?", "X was founded in 1998 ..." -> "When was X founded?", "X consists of Y"
    -> "What does X consist of?") and the sentence is the reference answer, so every answer is on its page by
    construction; the quality gate still judges each draft like a model's. A page with no such sentence gives
    a NO_CLEAR_SENTENCE draft, counted apart from the gate's discards: it says the page had nothing this writer
    can ask about, not that a question was bad. Deterministic: the seed plays no part."""

    model = TEMPLATE_MODEL
    concurrency = 1

    def write(self, page: PageText, seed: int) -> Draft:
        found = clear_question(page.text)
        if found is None:
            return Draft(
                failure=NO_CLEAR_SENTENCE,
                detail="no clear sentence on the page (a plain subject with a verb the offline writer can "
                "ask about: X is a Y, X was founded in 1998, X consists of Y, ...)",
            )
        return Draft(question=found.question, answer=found.sentence)


# (NUL and lone surrogates are gone already: evalsite.llm.json_replies.storable)
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _one_line(value: str) -> str:
    return " ".join(_CONTROL.sub(" ", value).split())


# --- the loop ------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    pages_sampled: int = 0  # pages tried: accepted + sum(discards) + no_clear_sentence
    accepted: int = 0
    discards: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DISCARD_REASONS, 0))
    # Pages the offline writer found no clear sentence on: no draft was written, so none was discarded.
    no_clear_sentence: int = 0
    warnings: list[str] = field(default_factory=list)
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    call_latency_ms: float = 0.0
    elapsed_s: float = 0.0
    stopped: str | None = None  # "cancelled" | "model_errors" | None


# on_page(page, draft, verdict) is called for every page gated, in sample order, on the caller's thread. It
# stores an accepted draft and returns the final reason: None (stored) or a discard reason (the verdict's for a
# discarded draft; for an accepted one e.g. "near_duplicate" when that question was added meanwhile).
OnPage = Callable[[PageText, Draft, Verdict], str | None]


def generate(
    pages: Sequence[PageText],
    writer: QuestionWriter,
    *,
    count: int,
    seed: int,
    duplicates: DuplicateIndex,
    on_page: OnPage,
    limits: GateLimits | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    max_consecutive_failures: int = 10,
    rejected: Container[str] = frozenset(),
) -> Outcome:
    limits = limits or GateLimits()
    outcome = Outcome()
    started = time.perf_counter()
    queue: deque[tuple[PageText, Future[Draft]]] = deque()
    next_page = 0
    failures_in_a_row = 0
    with ThreadPoolExecutor(max_workers=max(1, writer.concurrency), thread_name_prefix="generate") as pool:
        while True:
            needed = count - outcome.accepted
            # Never more calls in flight than questions still needed: no call is wasted when all pass.
            while next_page < len(pages) and len(queue) < min(writer.concurrency, needed):
                page = pages[next_page]
                queue.append((page, pool.submit(writer.write, page, seed)))
                next_page += 1
            if not queue or needed <= 0:
                break
            page, future = queue.popleft()
            draft = future.result()
            _account(outcome, draft)
            verdict = _verdict(draft, page, duplicates, limits, rejected)
            reason = on_page(page, draft, verdict)
            outcome.pages_sampled += 1
            if reason is None:
                outcome.accepted += 1
                duplicates.add(draft.question)
            elif reason == NO_CLEAR_SENTENCE:
                outcome.no_clear_sentence += 1
            else:
                outcome.discards[reason] = outcome.discards.get(reason, 0) + 1
            failures_in_a_row = failures_in_a_row + 1 if reason == MODEL_ERROR else 0
            if failures_in_a_row >= max_consecutive_failures:
                outcome.stopped = "model_errors"
                outcome.warnings.append(
                    f"Stopped after {failures_in_a_row} model errors in a row (last: {draft.detail}); "
                    "check the endpoint and run again with the same seed to continue."
                )
                break
            if should_stop():
                outcome.stopped = "cancelled"
                break
        for _, pending in queue:
            pending.cancel()
    outcome.elapsed_s = time.perf_counter() - started
    if outcome.stopped is None and outcome.accepted < count:
        unasked = (
            f"; {outcome.no_clear_sentence} of them offered no clear sentence to the offline writer (a chat "
            "model asks about any page)"
            if outcome.no_clear_sentence
            else ""
        )
        outcome.warnings.append(
            f"Only {outcome.accepted} of the {count} questions requested passed the gate: the sample ran out "
            f"after {outcome.pages_sampled} pages (see discards{unasked})."
        )
    return outcome


def _verdict(
    draft: Draft, page: PageText, duplicates: DuplicateIndex, limits: GateLimits, rejected: Container[str]
) -> Verdict:
    if draft.failure is not None:
        return Verdict(reason=draft.failure, detail=draft.detail)
    if rejected and question_hash(draft.question) in rejected:
        return Verdict(REJECTED_BEFORE, "a curator rejected this question before")
    return check(draft.question, draft.answer, page.text, duplicates, limits)


def _account(outcome: Outcome, draft: Draft) -> None:
    if not draft.called:
        return
    outcome.calls += 1
    outcome.cache_hits += draft.cached
    outcome.prompt_tokens += draft.prompt_tokens
    outcome.completion_tokens += draft.completion_tokens
    outcome.call_latency_ms += draft.latency_ms
