"""evaluation.answers.writer without the database: the extractive answer and its groundedness levels, citation
markers, refusal phrases, and the LLM answer against the scripted server over real HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalsite.llm.client import ChatClient, MemoryCallCache
from evaluation.answers.writer import (
    GROUNDEDNESS,
    GROUNDEDNESS_MIN_SUPPORT,
    REFUSAL,
    Answer,
    Citation,
    Passage,
    answer_messages,
    extractive_answer,
    llm_answer,
    looks_like_refusal,
    parse_citations,
    split_sentences,
    unknown_citations,
)
from tests.answer_support import PASSAGES
from tests.llm_server import llm_server_fixture  # noqa: F401

REFUND_QUESTION = "How long do customers have to request a refund?"  # terms: long, customer, request, refund


def test_the_modules_import_no_django():
    code = (
        "import sys, evaluation.answers.writer, evaluation.answers.judge, evaluation.answers.judge_llm, evaluation.answers.verdicts; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert done.stdout.strip() == "[]"


# --- the extractive answer ------------------------------------------------------------------------------------


def test_the_extractive_answer_picks_the_best_sentence_and_cites_it():
    answer = extractive_answer("When does express shipping arrive?", PASSAGES, "High")
    assert answer == Answer(
        text="Express shipping arrives the next day [2].",
        refused=False,
        citations=(Citation(2, "shipping", "Express shipping arrives the next day."),),
        method="extractive",
        model="",
        support=1.0,  # express, shipping, arrive: all in the sentence
    )


def test_a_second_sentence_joins_only_when_it_adds_a_question_term():
    question = "How long do refunds take, and where does the refund money go?"
    passages = [
        Passage(1, "r", 1, "", "Refunds take 30 days. Refund money goes back to the original card."),
        Passage(2, "s", 1, "", "Refunds are popular."),
    ]
    answer = extractive_answer(question, passages, "Off")
    assert answer.text == "Refunds take 30 days [1]. Refund money goes back to the original card [1]."
    assert [c.statement for c in answer.citations] == [
        "Refunds take 30 days.",
        "Refund money goes back to the original card.",
    ]
    one = extractive_answer(question, passages, "Off", max_sentences=1)
    assert one.text == "Refund money goes back to the original card [1]."


def test_one_shared_word_does_not_bring_an_off_topic_sentence():
    passages = [
        Passage(
            1,
            "song",
            1,
            "Who Am I",
            "Who Am I was the third top ten hit of Snoop Dogg on the Billboard chart.",
        ),
        Passage(
            2, "memorial", 1, "Memorial", "The crowd sang a hymn while the bands played at the memorial."
        ),
    ]
    answer = extractive_answer("who sang who am i snoop dogg", passages, "Off")
    assert [c.document_id for c in answer.citations] == ["song"]  # "sang" alone does not qualify passage 2


def test_the_extractive_answer_is_deterministic():
    runs = {extractive_answer(REFUND_QUESTION, PASSAGES, level) for level in GROUNDEDNESS for _ in range(3)}
    assert len(runs) == 2  # one answer, one refusal (High); the same each time
    assert extractive_answer(REFUND_QUESTION, PASSAGES, "Low") == extractive_answer(
        REFUND_QUESTION, PASSAGES, "Low"
    )


def test_stricter_levels_decline_the_same_weakly_supported_question():
    # customer and refund are covered, long and request are not: support 0.5
    answers = {level: extractive_answer(REFUND_QUESTION, PASSAGES, level) for level in GROUNDEDNESS}
    assert {a.support for a in answers.values()} == {0.5}
    for level in ("Off", "Low", "Medium"):
        assert not answers[level].refused
        assert answers[level].text == "Customers get a full refund within 30 days of purchase [1]."
        assert answers[level].citations == (
            Citation(1, "refunds", "Customers get a full refund within 30 days of purchase."),
        )
    high = answers["High"]
    assert high.refused and high.text == REFUSAL and high.citations == ()
    assert GROUNDEDNESS_MIN_SUPPORT["Medium"] <= 0.5 < GROUNDEDNESS_MIN_SUPPORT["High"]


def test_a_question_whose_terms_are_absent_declines_at_low_but_answers_at_off():
    question = "What is the capital of Peru?"
    low = extractive_answer(question, PASSAGES, "Low")
    assert low.refused and low.text == REFUSAL and low.support == 0.0
    off = extractive_answer(question, PASSAGES, "Off")
    assert not off.refused  # Off answers regardless: the first sentence of the best passage
    assert off.text == "Customers get a full refund within 30 days of purchase [1]."


def test_no_passages_is_a_refusal_at_every_level():
    for level in GROUNDEDNESS:
        answer = extractive_answer(REFUND_QUESTION, [], level)
        assert answer.refused and answer.text == REFUSAL and answer.citations == () and answer.support == 0.0


def test_a_sentence_ending_in_a_quote_gets_its_marker_last():
    passages = [Passage(4, "faq", 1, "", 'The clerk says the answer is "express shipping."')]
    answer = extractive_answer("Which shipping does the clerk say?", passages, "Off")
    assert answer.text == 'The clerk says the answer is "express shipping." [4]'
    assert [(c.number, c.statement) for c in parse_citations(answer.text, passages)] == [
        (4, 'The clerk says the answer is "express shipping."')
    ]


def test_the_levels_are_case_insensitive_and_unknown_ones_are_refused():
    assert extractive_answer(REFUND_QUESTION, PASSAGES, "high").refused
    with pytest.raises(ValueError, match="groundedness"):
        extractive_answer(REFUND_QUESTION, PASSAGES, "Strict")


def test_footnote_markers_in_a_passage_do_not_become_citations():
    passages = [Passage(1, "tower", 1, "Eiffel Tower", "The Eiffel Tower opened in 1889.[4] It is tall.")]
    answer = extractive_answer("When did the Eiffel Tower open?", passages, "High")
    assert answer.text == "The Eiffel Tower opened in 1889 [1]."
    assert [c.number for c in answer.citations] == [1]


# --- sentences, citations, refusals ------------------------------------------------------------------------------


def test_split_sentences():
    text = 'Dr. Smith came at 9. He said "yes." then left!\nIt rained.\n\n- first item here\n- second item'
    assert split_sentences(text) == [
        "Dr. Smith came at 9.",
        'He said "yes." then left!',
        "It rained.",
        "first item here",
        "second item",
    ]


THREE = [*PASSAGES, Passage(3, "warranty", 1, "Warranty", "Two years.")]


@pytest.mark.parametrize(
    ("text", "expected", "unknown"),
    [
        ("Refunds take 30 days [1].", [(1, "Refunds take 30 days.")], ()),
        ("Refunds take 30 days [1, 3].", [(1, "Refunds take 30 days."), (3, "Refunds take 30 days.")], ()),
        ("Refunds take 30 days [1][2].", [(1, "Refunds take 30 days."), (2, "Refunds take 30 days.")], ()),
        ("Refunds take 30 days. [2] Cards too [1].", [(2, "Refunds take 30 days."), (1, "Cards too.")], ()),
        (
            "A refund [1]. Orders ship [2-3].",
            [(1, "A refund."), (2, "Orders ship."), (3, "Orders ship.")],
            (),
        ),
        ("Refunds take 30 days [9].", [], (9,)),
        ("Refunds take 30 days [1, 9]. Cards [9][7].", [(1, "Refunds take 30 days.")], (9, 7)),
        ("Cards get it [Passage 2]. Refunds [source 1].", [(2, "Cards get it."), (1, "Refunds.")], ()),
        ("No markers here.", [], ()),
    ],
)
def test_parse_citations(text, expected, unknown):
    citations = parse_citations(text, THREE)
    assert [(c.number, c.statement) for c in citations] == expected
    assert all(c.document_id == THREE[c.number - 1].document_id for c in citations)
    assert unknown_citations(text, THREE) == unknown


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        (REFUSAL, True),
        ("I cannot answer that based on the provided passages.", True),
        ("I'm unable to find this in the documents.", True),
        ("There is not enough information to answer.", True),
        ("The documents do not say how long refunds take.", True),
        ("The provided context doesn't mention a fee.", True),
        ("The fee is not mentioned in the passages.", True),
        ("Sorry. I don't know.", True),
        ("There is no information about fees.", True),
        ("This cannot be answered from the sources.", True),
        ("Refunds take 30 days [1].", False),
        ("Refunds take 30 days [1]. The documents do not say when the card is credited.", False),
        ("Applications with not enough information are rejected [2].", False),
        ("The refund does not cover shipping costs.", False),
        ("", False),
    ],
)
def test_looks_like_refusal(text, refusal):
    assert looks_like_refusal(text) is refusal


# --- the LLM answer against the scripted server ---------------------------------------------------------------


@pytest.fixture
def client(llm_server):
    with ChatClient(llm_server.url, model="scripted", timeout=2.0, backoff=0.01, max_attempts=2) as c:
        yield c


def test_a_json_answer_is_read_with_its_citations(llm_server, client):
    llm_server.reply(
        r"Question:",
        json.dumps({"answer": "Refunds take 30 days [1]. Express is next day [2].", "refused": False}),
    )
    answer = llm_answer(client, "judge-me", REFUND_QUESTION, PASSAGES, "Medium", seed=7)
    assert answer.text == "Refunds take 30 days [1]. Express is next day [2]."
    assert not answer.refused and answer.error is None
    assert answer.citations == (
        Citation(1, "refunds", "Refunds take 30 days."),
        Citation(2, "shipping", "Express is next day."),
    )
    assert (answer.method, answer.model, answer.support) == ("llm", "judge-me", -1.0)
    body = llm_server.requests[0].body
    assert body["model"] == "judge-me" and body["temperature"] == 0.0 and body["seed"] == 7
    assert body["max_tokens"] == 400
    system, user = (m["content"] for m in body["messages"])
    assert "Decline when the passages do not contain the information" in system
    assert REFUSAL in system and '"refused"' in system
    assert user.startswith(f"Question: {REFUND_QUESTION}\n\nPassages:\n")
    assert f"[1] Refund policy\n{PASSAGES[0].text}\n\n[2] Shipping\n{PASSAGES[1].text}" in user


def test_each_level_has_its_rule_and_off_never_asks_to_decline():
    systems = {level: answer_messages("q?", PASSAGES, level)[0]["content"] for level in GROUNDEDNESS}
    assert len(set(systems.values())) == 4
    assert "do not decline" in systems["Off"] and REFUSAL not in systems["Off"]
    assert "Decline only when the passages hold nothing relevant" in systems["Low"]
    assert "Decline unless the passages state the answer explicitly" in systems["High"]


def test_long_passages_are_cut_for_the_prompt():
    long = Passage(1, "d", 1, "T", "word " * 1000)
    user = answer_messages("q?", [long], "Off")[1]["content"]
    assert len(user) < 2100 and user.endswith(" ...")


def test_a_fenced_json_answer_is_read(llm_server, client):
    llm_server.reply(r"Question:", '```json\n{"answer": "Cards get the money [1].", "refused": false}\n```')
    answer = llm_answer(client, "m", REFUND_QUESTION, PASSAGES, "Low")
    assert answer.text == "Cards get the money [1]." and [c.number for c in answer.citations] == [1]


def test_a_plain_text_answer_is_accepted(llm_server, client):
    llm_server.reply(r"Question:", "Customers have 30 days to ask for a refund [1].")
    answer = llm_answer(client, "m", REFUND_QUESTION, PASSAGES, "High")
    assert answer.text == "Customers have 30 days to ask for a refund [1]."
    assert not answer.refused and answer.error is None
    assert answer.citations == (Citation(1, "refunds", "Customers have 30 days to ask for a refund."),)


def test_a_fenced_plain_text_answer_loses_its_fence(llm_server, client):
    llm_server.reply(r"Question:", "```\nRefunds take 30 days [1].\n```")
    answer = llm_answer(client, "m", REFUND_QUESTION, PASSAGES, "Low")
    assert answer.text == "Refunds take 30 days [1]." and len(answer.citations) == 1


def test_a_plain_text_refusal_is_recognised(llm_server, client):
    llm_server.reply(r"Question:", "I'm sorry, but the passages do not mention a refund deadline.")
    answer = llm_answer(client, "m", REFUND_QUESTION, PASSAGES, "High")
    assert answer.refused and answer.citations == () and answer.error is None
    assert answer.text == "I'm sorry, but the passages do not mention a refund deadline."


def test_a_structured_refusal_is_a_refusal(llm_server, client):
    llm_server.reply(r"Question:", json.dumps({"answer": REFUSAL, "refused": True}))
    answer = llm_answer(client, "m", REFUND_QUESTION, PASSAGES, "High")
    assert answer.refused and answer.text == REFUSAL and answer.citations == ()


def test_unknown_citation_numbers_are_dropped_and_counted(llm_server, client):
    llm_server.reply(r"Question:", json.dumps({"answer": "Refunds take 30 days [1][5].", "refused": False}))
    answer = llm_answer(client, "m", REFUND_QUESTION, PASSAGES, "Off")
    assert [c.number for c in answer.citations] == [1] and answer.unknown_citations == (5,)


def test_a_server_failure_is_recorded_not_raised(llm_server, client):
    llm_server.fail_next(500, 500)
    answer = llm_answer(client, "m", REFUND_QUESTION, PASSAGES, "Medium")
    assert answer.error is not None and answer.error.startswith("llm-unavailable:")
    assert answer.text == "" and not answer.refused and answer.citations == ()


@pytest.mark.parametrize("reply", ['{"answer": 3}', '{"text": "Refunds take 30 days [1]."}', "   "])
def test_an_unreadable_answer_is_an_error_with_its_usage(llm_server, client, reply):
    llm_server.reply(r"Question:", reply)
    answer = llm_answer(client, "m", REFUND_QUESTION, PASSAGES, "Medium")
    assert answer.error is not None and answer.error.startswith("llm-unreadable:")
    assert answer.text == "" and not answer.refused
    assert answer.latency_ms > 0


def test_no_passages_declines_without_a_call(llm_server, client):
    answer = llm_answer(client, "m", REFUND_QUESTION, [], "Off")
    assert answer.refused and answer.text == REFUSAL and answer.error is None
    assert llm_server.count() == 0


def test_a_repeated_call_comes_from_the_cache(llm_server):
    llm_server.reply(r"Question:", json.dumps({"answer": "Refunds take 30 days [1].", "refused": False}))
    with ChatClient(llm_server.url, model="m", cache=MemoryCallCache()) as cached:
        first = llm_answer(cached, "m", REFUND_QUESTION, PASSAGES, "Low", seed=1)
        again = llm_answer(cached, "m", REFUND_QUESTION, PASSAGES, "Low", seed=1)
    assert not first.cached and again.cached
    assert again.text == first.text and llm_server.count() == 1
