"""goldenset.generation without the database: seeded sampling, the offline template writer, the chat writer
against the scripted server over real HTTP, and the gate loop (order, concurrency, faults, stopping)."""

from __future__ import annotations

import pytest

from evalsite.llm.client import ChatClient, MemoryCallCache
from goldenset import generation
from goldenset.duplicates import DuplicateIndex
from goldenset.generation import (
    DISCARD_REASONS,
    NO_CLEAR_SENTENCE,
    REJECTED_BEFORE,
    ChatQuestionWriter,
    Draft,
    PageText,
    TemplateQuestionWriter,
    generate,
    sample_pages,
)
from goldenset.quality import Verdict
from goldenset.text import question_hash
from tests.generation_support import FAULTS, company_name, scripted_writer, synthetic_corpus
from tests.llm_server import llm_server_fixture  # noqa: F401


def pages_of(corpus: dict[str, str]) -> list[PageText]:
    return [
        PageText(key=i, document_id=doc, number=1, title=doc.title(), text=text)
        for i, (doc, text) in enumerate(corpus.items())
    ]


def store_all(page: PageText, draft: Draft, verdict: Verdict) -> str | None:
    return verdict.reason


# --- sampling ----------------------------------------------------------------------------------------------


CANDIDATES = [(f"{doc}#{n}", doc, n) for doc in ("a", "b", "c", "d", "e") for n in (1, 2, 3)]


def test_sampling_takes_one_page_per_document_in_a_seeded_order():
    order = sample_pages(CANDIDATES, seed=7)
    assert len(order) == 5
    assert sorted(key.split("#")[0] for key in order) == ["a", "b", "c", "d", "e"]
    assert order == sample_pages(list(reversed(CANDIDATES)), seed=7)  # database order does not matter
    assert order == sample_pages(CANDIDATES, seed=7)


def test_different_seeds_sample_differently():
    orders = {tuple(sample_pages(CANDIDATES, seed=s)) for s in range(20)}
    assert len(orders) > 10  # 5 documents x 3 pages: seeds pick other pages and other orders


def test_the_rank_is_the_documented_hash():
    import hashlib

    assert generation.page_rank(3, "doc", 2) == hashlib.sha256(b"3\x1fdoc\x1f2").digest()


# --- the offline template writer ----------------------------------------------------------------------------


def test_a_definition_sentence_gives_a_what_is_question():
    page = PageText(
        key=1,
        document_id="tower",
        number=1,
        title="Eiffel Tower",
        text="Paris. The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
        "It opened in 1889.",
    )
    draft = TemplateQuestionWriter().write(page, seed=1)
    assert draft.question == "What is the Eiffel Tower?"
    assert draft.answer.startswith("The Eiffel Tower is a wrought-iron lattice tower")
    assert draft.failure is None and not draft.called


def test_a_sentence_without_a_clear_pattern_gives_no_question():
    # Before, this gave "What is known about Customers, merchandise, defective (Refund policy)?": keyword salad.
    page = PageText(
        key=1,
        document_id="d",
        number=1,
        title="Refund policy",
        text="Customers receive refunds within thirty days whenever merchandise arrives damaged or defective.",
    )
    draft = TemplateQuestionWriter().write(page, seed=1)
    assert (draft.question, draft.answer, draft.failure) == ("", "", NO_CLEAR_SENTENCE)
    assert "no clear sentence" in draft.detail and not draft.called


def test_a_page_without_a_usable_sentence_offers_no_clear_sentence():
    page = PageText(key=1, document_id="d", number=1, title="", text="Contents. Index. See also.")
    draft = TemplateQuestionWriter().write(page, seed=1)
    assert (draft.question, draft.answer, draft.failure) == ("", "", NO_CLEAR_SENTENCE)


def test_the_writer_takes_the_most_informative_clear_sentence_and_answers_with_it():
    page = PageText(
        key=1,
        document_id="acme",
        number=1,
        title="Acme",
        text="Acme is big. It sells anvils. Acme Corporation was founded in 1920 by Wile Coyote in Phoenix. "
        "The Acme catalogue consists of anvils, rockets, magnets and giant rubber bands for every customer.",
    )
    draft = TemplateQuestionWriter().write(page, seed=1)
    assert draft.question == "What does the Acme catalogue consist of?"
    assert draft.answer == (
        "The Acme catalogue consists of anvils, rockets, magnets and giant rubber bands for every customer."
    )
    assert TemplateQuestionWriter().write(page, seed=2) == draft  # the seed plays no part


def test_no_clear_sentence_is_counted_apart_from_the_gate_s_discards():
    pages = pages_of(synthetic_corpus(4))
    pages.insert(1, PageText(key=99, document_id="list", number=1, title="", text="apples pears plums " * 20))
    outcome = generate(
        pages, TemplateQuestionWriter(), count=5, seed=1, duplicates=DuplicateIndex(), on_page=store_all
    )
    assert outcome.no_clear_sentence == 1
    assert "no_clear_sentence" not in outcome.discards and sum(outcome.discards.values()) == 0
    assert (outcome.pages_sampled, outcome.accepted) == (5, 4)
    assert outcome.warnings == [
        "Only 4 of the 5 questions requested passed the gate: the sample ran out after 5 pages (see discards; 1 "
        "of them offered no clear sentence to the offline writer (a chat model asks about any page))."
    ]


def test_a_rejected_question_is_discarded_before_the_gate_and_the_next_page_asked():
    pages = pages_of(synthetic_corpus(6))
    writer = TemplateQuestionWriter()
    drafts = [writer.write(page, 1).question for page in pages]
    # Rejected as a curator saw it: case and spacing do not matter (goldenset.text.question_hash).
    rejected = {question_hash("  " + drafts[1].upper()), question_hash(drafts[3])}
    seen: list[tuple[str, str | None]] = []

    def record(page: PageText, draft: Draft, verdict: Verdict) -> str | None:
        seen.append((draft.question, verdict.reason))
        return verdict.reason

    outcome = generate(
        pages, writer, count=4, seed=1, duplicates=DuplicateIndex(), on_page=record, rejected=rejected
    )
    assert outcome.accepted == 4 and outcome.pages_sampled == 6  # the two skipped pages replaced by the next
    assert outcome.discards == dict.fromkeys(DISCARD_REASONS, 0) | {REJECTED_BEFORE: 2}
    assert seen[1] == (drafts[1], REJECTED_BEFORE) and seen[3] == (drafts[3], REJECTED_BEFORE)
    assert [q for q, reason in seen if reason is None] == [drafts[0], drafts[2], drafts[4], drafts[5]]
    assert outcome.warnings == []


def test_the_template_writer_passes_its_own_drafts_through_the_gate_deterministically():
    pages = pages_of(synthetic_corpus(30))
    first = [d.question for d in (TemplateQuestionWriter().write(p, 1) for p in pages)]
    outcome = generate(
        pages, TemplateQuestionWriter(), count=30, seed=1, duplicates=DuplicateIndex(), on_page=store_all
    )
    again = [d.question for d in (TemplateQuestionWriter().write(p, 1) for p in pages)]
    assert first == again
    assert outcome.pages_sampled == 30
    assert outcome.accepted + sum(outcome.discards.values()) + outcome.no_clear_sentence == 30
    assert outcome.accepted >= 20, outcome.discards
    assert all(q.startswith("When was ") and q.endswith(" founded?") for q in first), first[:3]
    assert outcome.calls == 0  # no model was asked


# --- the chat writer and the loop against the scripted server -------------------------------------------------


@pytest.fixture
def writer(llm_server):
    llm_server.reply(r"Passage:", scripted_writer)
    client = ChatClient(
        llm_server.url, model="scripted", timeout=2.0, backoff=0.01, max_attempts=2, concurrency=4
    )
    with client:
        yield ChatQuestionWriter(client, "scripted")


def test_the_chat_writer_sends_the_page_and_reads_a_fenced_json_answer(llm_server, writer):
    page = pages_of(synthetic_corpus(1))[0]
    draft = writer.write(page, seed=42)
    name = company_name(0)
    assert draft.question == f"In which year was the company {name} founded?"
    assert draft.answer == f"{name} was founded in 1850."
    assert draft.called and draft.failure is None
    body = llm_server.requests[0].body
    assert body["model"] == "scripted" and body["temperature"] == 0.0 and body["seed"] == 42
    assert page.text in body["messages"][1]["content"]
    assert "self-contained" in body["messages"][0]["content"]


def test_every_fault_is_counted_under_its_reason_and_the_rest_accepted(llm_server, writer):
    markers = tuple(FAULTS)
    pages = pages_of(synthetic_corpus(12, faults=markers))
    # A duplicate of the first good page's question already in the golden set:
    existing = DuplicateIndex([f"In what year was the company {company_name(len(markers))} founded?"])
    outcome = generate(pages, writer, count=12, seed=1, duplicates=existing, on_page=store_all)
    expected = {reason: 0 for reason in DISCARD_REASONS}
    for reason, _ in FAULTS.values():
        expected[reason] += 1
    expected["near_duplicate"] += 1
    assert outcome.discards == expected
    assert outcome.accepted == 12 - len(markers) - 1
    assert outcome.pages_sampled == 12
    assert outcome.calls == 12 and outcome.stopped is None
    assert outcome.warnings and "Only 6 of the 12" in outcome.warnings[0]


def test_model_errors_are_counted_not_raised(llm_server, writer):
    pages = pages_of(synthetic_corpus(6))
    writer.concurrency = 1  # one call at a time, so the faults below hit the first two pages
    llm_server.fail_next(500, 500, 503, 503)  # two attempts each
    outcome = generate(pages, writer, count=6, seed=1, duplicates=DuplicateIndex(), on_page=store_all)
    assert outcome.discards["model_error"] == 2
    assert outcome.accepted == 4
    assert outcome.pages_sampled == 6


def test_a_dead_endpoint_stops_the_loop_after_consecutive_model_errors(llm_server, writer):
    pages = pages_of(synthetic_corpus(40))
    llm_server.fail_next(*([500] * 200))
    outcome = generate(
        pages,
        writer,
        count=40,
        seed=1,
        duplicates=DuplicateIndex(),
        on_page=store_all,
        max_consecutive_failures=5,
    )
    assert outcome.stopped == "model_errors"
    assert outcome.discards["model_error"] == 5 and outcome.accepted == 0
    assert "5 model errors in a row" in outcome.warnings[0]
    assert llm_server.count("/v1/chat/completions") < 40 * 2  # it did not go on through every page


def test_no_call_is_wasted_when_every_draft_passes(llm_server, writer):
    pages = pages_of(synthetic_corpus(30))
    outcome = generate(pages, writer, count=7, seed=1, duplicates=DuplicateIndex(), on_page=store_all)
    assert outcome.accepted == 7
    assert llm_server.count("/v1/chat/completions") == 7


def test_concurrent_and_sequential_runs_give_the_same_outcome(llm_server, writer):
    pages = pages_of(synthetic_corpus(20, faults=tuple(FAULTS)))

    def run(concurrency: int) -> tuple[list[str], dict[str, int]]:
        accepted: list[str] = []

        def on_page(page: PageText, draft: Draft, verdict: Verdict) -> str | None:
            if verdict.accepted:
                accepted.append(draft.question)
            return verdict.reason

        writer.concurrency = concurrency
        outcome = generate(pages, writer, count=12, seed=5, duplicates=DuplicateIndex(), on_page=on_page)
        return accepted, outcome.discards

    llm_server.latency = 0.02
    assert run(1) == run(4)


def test_the_call_cache_answers_a_rerun_without_a_request(llm_server):
    llm_server.reply(r"Passage:", scripted_writer)
    cache = MemoryCallCache()
    pages = pages_of(synthetic_corpus(5))
    with ChatClient(llm_server.url, model="scripted", backoff=0.01, cache=cache) as client:
        writer = ChatQuestionWriter(client, "scripted")
        first = generate(pages, writer, count=5, seed=3, duplicates=DuplicateIndex(), on_page=store_all)
        sent = llm_server.count()
        second = generate(pages, writer, count=5, seed=3, duplicates=DuplicateIndex(), on_page=store_all)
        assert llm_server.count() == sent == 5
        assert (second.accepted, second.cache_hits, second.calls) == (first.accepted, 5, 5)
        generate(pages, writer, count=5, seed=4, duplicates=DuplicateIndex(), on_page=store_all)
        assert llm_server.count() == 10  # another seed is another call (the seed is sent to the model)
    assert len(cache) == 10


def test_should_stop_ends_the_loop_between_pages(llm_server, writer):
    pages = pages_of(synthetic_corpus(20))
    seen: list[int] = []

    def on_page(page: PageText, draft: Draft, verdict: Verdict) -> str | None:
        seen.append(page.key)
        return verdict.reason

    outcome = generate(
        pages,
        writer,
        count=20,
        seed=1,
        duplicates=DuplicateIndex(),
        on_page=on_page,
        should_stop=lambda: len(seen) >= 3,
    )
    assert outcome.stopped == "cancelled"
    assert outcome.pages_sampled == 3 == len(seen)
    assert not outcome.warnings  # a cancel is not a shortfall


def test_a_clause_is_not_taken_for_a_definitions_subject():
    page = PageText(
        key=1,
        document_id="d",
        number=1,
        title="Acupuncture",
        text="The review found that the evidence was of moderate quality across the randomized trials examined.",
    )
    draft = TemplateQuestionWriter().write(page, seed=1)
    assert draft.question == "" and draft.failure == NO_CLEAR_SENTENCE
