"""evaluation.answers.judge without the database: atomic statements, the heuristic metrics on hand-made cases, and the
LLM judge against the scripted server (good judgements, a failing endpoint, unreadable judgements)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable

import pytest

from evalsite.llm.client import ChatClient, ChatResult, MemoryCallCache
from evaluation.answers import judge, judge_llm
from evaluation.answers.judge import (
    HEURISTIC,
    LLM_JUDGE,
    METRICS,
    NOT_APPLICABLE,
    UNREADABLE,
    Score,
    judge_question,
    statements,
)
from evaluation.answers.judge_llm import LLMJudge
from evaluation.answers.writer import REFUSAL, Answer, Citation, Passage, parse_citations
from tests.answer_support import PASSAGES
from tests.llm_server import llm_server_fixture  # noqa: F401

QUESTION = "How long do customers have to request a refund?"
REFERENCE = "Customers get a full refund within 30 days; refunds are paid in cash."

# Three statements: supported by [1]; 5 of 6 terms in [1] but its number (45) is not; about nothing retrieved.
MIXED_TEXT = (
    "Customers get a full refund within 30 days [1]. Customers get a full refund within 45 days [1]. "
    "The moon is made of cheese [2]."
)


def answer_of(text: str, passages=PASSAGES, refused: bool = False) -> Answer:
    return Answer(text, refused, () if refused else parse_citations(text, passages), "llm", "m", -1.0)


MIXED = answer_of(MIXED_TEXT)
REFUSED = answer_of(REFUSAL, refused=True)
FAILED = Answer("", False, (), "llm", "m", -1.0, error="llm-unavailable: HTTP 500")


def check(scores: Iterable[Score]) -> None:
    """The contract every Score keeps: no NaN, value None iff excluded, JSON-serializable."""
    for score in scores:
        assert (score.value is None) == (score.excluded is not None)
        assert score.value is None or (math.isfinite(score.value) and 0.0 <= score.value <= 1.0)
        assert score.fallback is None or score.method == HEURISTIC
        json.dumps(score.as_dict())


# --- statements ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Refunds take 30 days [1]. They go to the card [2].",
            ["Refunds take 30 days.", "They go to the card."],
        ),
        (
            "Refunds take 30 days; exchanges take 14 days.",
            ["Refunds take 30 days", "exchanges take 14 days."],
        ),
        (
            "Refunds take 30 days, and the money goes back to the original card.",
            ["Refunds take 30 days", "the money goes back to the original card."],
        ),
        (
            "Orders ship within two business days, but express orders arrive the next day [2].",
            ["Orders ship within two business days", "express orders arrive the next day."],
        ),
        (
            "Apples, pears, and bananas are sold here.",
            ["Apples, pears, and bananas are sold here."],
        ),  # a list
        ("It is cheap, but slow.", ["It is cheap, but slow."]),  # the halves are too short to be clauses
        ("Yes. It is. Refunds take 30 days. [1]", ["Refunds take 30 days."]),  # contentless ones dropped
        ("- Refunds take 30 days\n- Cards are credited", ["Refunds take 30 days", "Cards are credited"]),
        # An inline numbered list: its markers are never statements, its lead-in is not one either.
        (
            "To reset the router: 1. Unplug it from the wall. 2. Wait thirty seconds. 3. Plug it back in.",
            ["Unplug it from the wall.", "Wait thirty seconds.", "Plug it back in."],
        ),
        (
            "Steps:\n1) Unplug the router.\n2) Wait thirty seconds.",
            ["Unplug the router.", "Wait thirty seconds."],
        ),
        # Numbers that do not run 1, 2, ... are numbers, not a list.
        (
            "The town grew by 12. It had 3. Then 4. schools",
            ["The town grew by 12.", "It had 3.", "Then 4. schools"],
        ),
        # Headings: a Markdown heading, a bold line.
        (
            "## Returns\nItems can be returned within 14 days.\n**Refunds**\nRefunds go to the card.",
            ["Items can be returned within 14 days.", "Refunds go to the card."],
        ),
        ("", []),
    ],
)
def test_statements(text, expected):
    assert statements(text) == expected


# --- heuristic metrics ------------------------------------------------------------------------------------------


def test_an_answer_copying_its_passages_list_inline_is_wholly_faithful():
    # The passage lists its steps a line each; the answer copies them word for word into one line. Its markers
    # were statements of their own ("2.": a number the passage's text lacks), and faithfulness read 0.5.
    steps = "To reset the router:\n1. Unplug it from the wall.\n2. Wait thirty seconds.\n3. Plug it back in."
    passage = Passage(1, "router", 1, "Router reset", steps)
    copied = answer_of(" ".join(steps.split("\n")), passages=[passage])
    score = judge.faithfulness(copied, [passage])
    assert score.value == 1.0
    assert [row["text"] for row in score.detail["statements"]] == [
        "Unplug it from the wall.",
        "Wait thirty seconds.",
        "Plug it back in.",
    ]


def test_heuristic_faithfulness_counts_supported_statements():
    score = judge.faithfulness(MIXED, PASSAGES)
    assert score.value == pytest.approx(1 / 3) and score.method == HEURISTIC and score.excluded is None
    assert score.detail == {
        "statements": [
            {
                "text": "Customers get a full refund within 30 days.",
                "supported": True,
                "support": 1.0,
                "coverage": 1.0,
                "passage": 1,
                "passages": [1],
            },
            # 5 of its 6 terms are in passage 1, but the number 45 is not: the score is halved, and the pair
            # (45, day) is missing too.
            {
                "text": "Customers get a full refund within 45 days.",
                "supported": False,
                "support": 0.363,
                "coverage": 0.8333,
                "passage": None,
                "passages": [],
            },
            {
                "text": "The moon is made of cheese.",
                "supported": False,
                "support": 0.0,
                "coverage": 0.0,
                "passage": None,
                "passages": [],
            },
        ]
    }
    assert score.calls == 0
    check([score])


def test_heuristic_context_recall_counts_reference_statements_in_the_context():
    score = judge.context_recall(REFERENCE, PASSAGES)
    assert score.value == 0.5
    assert [(s["text"], s["supported"]) for s in score.detail["statements"]] == [
        ("Customers get a full refund within 30 days", True),
        ("refunds are paid in cash.", False),
    ]


def test_heuristic_answer_relevancy_is_coverage_times_focus():
    answer = answer_of(
        "Customers get a refund within 30 days [1]. Express shipping arrives the next day [2]."
    )
    score = judge.answer_relevancy(QUESTION, answer)
    # customer and refund of {long, customer, request, refund}: 0.5; one statement of two on topic: x 0.75
    assert score.value == 0.375
    assert score.detail == {"question_coverage": 0.5, "focus": 0.5}
    focused = judge.answer_relevancy(QUESTION, answer_of("Customers get a refund within 30 days [1]."))
    assert focused.value == 0.5


def test_heuristic_citation_precision_checks_only_the_cited_passage():
    score = judge.citation_precision(MIXED, PASSAGES)
    assert score.value == pytest.approx(1 / 3)
    assert [(c["citation"], c["supports"]) for c in score.detail["citations"]] == [
        (1, True),
        (1, False),
        (2, False),
    ]
    # The right statement, the wrong passage cited:
    miscited = judge.citation_precision(answer_of("Express shipping arrives the next day [1][2]."), PASSAGES)
    assert miscited.value == 0.5
    assert [c["supports"] for c in miscited.detail["citations"]] == [False, True]


def test_heuristic_context_relevancy_and_the_reference_vocabulary():
    score = judge.context_relevancy("When does express shipping arrive?", PASSAGES)
    assert score.value == 0.5
    assert [(p["number"], p["document_id"], p["relevant"], p["score"]) for p in score.detail["passages"]] == [
        (1, "refunds", False, 0.0),
        (2, "shipping", True, 1.0),
    ]
    question = "How quickly do parcels come?"  # shares no term with the passages
    assert judge.context_relevancy(question, PASSAGES).value == 0.0
    helped = judge.context_relevancy(question, PASSAGES, "Express shipping arrives the next day.")
    assert helped.value == 0.5 and helped.detail["passages"][1]["reference_coverage"] == 1.0


def test_nothing_retrieved_is_a_real_zero():
    assert judge.context_relevancy(QUESTION, []).value == 0.0
    assert judge.faithfulness(MIXED, []).value == 0.0
    assert judge.context_recall(REFERENCE, []).value == 0.0


@pytest.mark.parametrize("answer", [REFUSED, FAILED, answer_of("Yes.")], ids=["refused", "failed", "empty"])
def test_answers_with_nothing_to_judge_are_not_applicable(answer):
    scores = [
        judge.faithfulness(answer, PASSAGES),
        judge.answer_relevancy(QUESTION, answer),
        judge.citation_precision(answer, PASSAGES),
    ]
    for score in scores:
        assert score.value is None and score.excluded == NOT_APPLICABLE and score.method == HEURISTIC
    check(scores)


def test_other_not_applicable_cases():
    assert judge.context_recall("", PASSAGES).excluded == NOT_APPLICABLE
    uncited = judge.citation_precision(answer_of("Refunds take 30 days."), PASSAGES)
    assert uncited.excluded == NOT_APPLICABLE and uncited.detail["reason"] == "the answer cited nothing"
    assert judge.context_relevancy("What is it?", PASSAGES).excluded == NOT_APPLICABLE


def test_without_a_judge_every_metric_is_heuristic():
    scores = judge_question(QUESTION, REFERENCE, MIXED, PASSAGES, None)
    assert list(scores) == list(METRICS)
    assert {s.method for s in scores.values()} == {HEURISTIC}
    check(scores.values())


def test_a_score_refuses_to_break_the_contract():
    with pytest.raises(ValueError):
        Score(math.nan, HEURISTIC, {})
    with pytest.raises(ValueError):
        Score(None, LLM_JUDGE, {})  # None without a reason
    with pytest.raises(ValueError):
        Score(0.5, LLM_JUDGE, {}, excluded=UNREADABLE)
    with pytest.raises(ValueError):
        Score(1.5, HEURISTIC, {})
    with pytest.raises(ValueError):
        Score(0.5, LLM_JUDGE, {}, fallback="judge call failed")  # a fallback is never labelled llm-judge


# --- the LLM judge against the scripted server --------------------------------------------------------------------


def verdicts(key: str, flag: str, values: list[bool]) -> str:
    return json.dumps({"verdicts": [{key: i, flag: v, "reason": "r"} for i, v in enumerate(values, 1)]})


def good_judge(messages: list[dict]) -> str:
    """A judge that answers each metric's prompt with a fixed, well-formed judgement."""
    user = messages[-1]["content"]
    if "Answer statements:" in user:
        return verdicts("statement", "supported", [True, False, False])
    if "Reference statements:" in user:
        return "```json\n" + verdicts("statement", "supported", [True, True]) + "\n```"
    if "Answer to rate:" in user:
        return 'Here you go: {"rating": 4, "reason": "direct"}'
    if "Citations to check:" in user:
        return verdicts("citation", "supports", [True, True, False])
    if "Passages to rate:" in user:
        return json.dumps({"verdicts": [{"passage": 2, "relevant": False}, {"passage": 1, "relevant": True}]})
    return "?"


@pytest.fixture
def client(llm_server):
    with ChatClient(llm_server.url, model="judge", timeout=2.0, backoff=0.001, max_attempts=1) as c:
        yield c


def test_good_judgements_are_read_exactly(llm_server, client):
    llm_server.reply(r".", good_judge)
    scores = judge_question(QUESTION, REFERENCE, MIXED, PASSAGES, LLMJudge(client, "judge"))
    assert {name: s.value for name, s in scores.items()} == {
        "faithfulness": pytest.approx(1 / 3),
        "context_recall": 1.0,  # the fenced answer is read
        "answer_relevancy": 0.75,  # rating 4 of 1..5
        "citation_precision": pytest.approx(2 / 3),
        "context_relevancy": 0.5,
    }
    assert {s.method for s in scores.values()} == {LLM_JUDGE}
    assert all(s.calls == 1 and s.fallback is None and s.latency_ms > 0 for s in scores.values())
    assert llm_server.count("/v1/chat/completions") == 5
    faithful = scores["faithfulness"].detail["statements"]
    assert [(s["text"], s["supported"]) for s in faithful] == [
        ("Customers get a full refund within 30 days.", True),
        ("Customers get a full refund within 45 days.", False),
        ("The moon is made of cheese.", False),
    ]
    relevant = scores["context_relevancy"].detail["passages"]
    assert [(p["number"], p["relevant"]) for p in relevant] == [(1, True), (2, False)]
    assert scores["answer_relevancy"].detail == {"rating": 4, "reason": "direct"}
    check(scores.values())

    bodies = [r.body for r in llm_server.requests]
    assert all(b["model"] == "judge" and b["temperature"] == 0.0 for b in bodies)
    users = [b["messages"][-1]["content"] for b in bodies]  # the five calls run concurrently: find each

    def prompt(heading: str) -> str:
        (found,) = [u for u in users if heading in u]
        return found

    faithfulness_prompt = prompt("Answer statements:")
    assert "1. Customers get a full refund within 30 days.\n2. Customers get a full refund within 45" in (
        faithfulness_prompt
    )
    assert "[1] Refund policy\n" in faithfulness_prompt and "[2] Shipping\n" in faithfulness_prompt
    assert "Reference answer (context only" in prompt("Answer to rate:")
    assert "Reference answer (context only" in prompt("Passages to rate:")
    assert "1. [1] Customers get a full refund within 30 days." in prompt("Citations to check:")


def test_a_judge_call_that_fails_falls_back_to_the_heuristic_labelled_so(llm_server, client):
    llm_server.fail_next(*([500] * 4), "malformed")
    scores = judge_question(QUESTION, REFERENCE, MIXED, PASSAGES, LLMJudge(client, "judge"))
    heuristic = judge_question(QUESTION, REFERENCE, MIXED, PASSAGES, None)
    for name, score in scores.items():
        assert score.method == HEURISTIC, name
        assert score.fallback is not None and score.fallback.startswith("judge call failed: "), name
        assert score.value == heuristic[name].value and score.detail == heuristic[name].detail
        assert score.calls == 1 and score.excluded is None
    # The five calls run concurrently, so which metric met which fault varies; the faults are all accounted for.
    reasons = sorted(score.fallback or "" for score in scores.values())
    assert sum("HTTP 500" in r for r in reasons) == 4
    assert sum("unreadable answer" in r for r in reasons) == 1  # a body that is not a chat completion
    check(scores.values())


@pytest.mark.parametrize(
    "reply",
    [
        "I think it is fine",
        '{"verdicts": [{"statement": 1, "supported": true}]}',  # too few verdicts
        '{"verdicts": [{"statement": 1, "supported": true}, {"statement": 1, "supported": true}, '
        '{"statement": 2, "supported": true}]}',  # a repeated index
        '{"verdicts": [{"statement": 1, "supported": "yes"}, {"statement": 2, "supported": true}, '
        '{"statement": 3, "supported": true}]}',  # not a boolean
        '{"verdicts": [{"statement": 0, "supported": true}, {"statement": 1, "supported": true}, '
        '{"statement": 2, "supported": true}]}',  # out of range
        '{"verdicts": "all good"}',
    ],
)
def test_an_unreadable_faithfulness_judgement_is_excluded_not_zero(llm_server, client, reply):
    llm_server.reply(r".", reply)
    score = LLMJudge(client, "judge").faithfulness(MIXED, PASSAGES)
    assert score.value is None and score.excluded == UNREADABLE and score.method == LLM_JUDGE
    assert score.fallback is None and score.calls == 1 and score.detail["error"]
    check([score])


@pytest.mark.parametrize("rating", ["0", "6", "2.5", "true", '"4"', "null"])
def test_an_unreadable_rating_is_excluded(llm_server, client, rating):
    llm_server.reply(r".", '{"rating": ' + rating + "}")
    score = LLMJudge(client, "judge").answer_relevancy(QUESTION, MIXED)
    assert score.value is None and score.excluded == UNREADABLE and score.method == LLM_JUDGE


def test_unknown_passage_numbers_are_unreadable(llm_server, client):
    llm_server.reply(
        r".", '{"verdicts": [{"passage": 1, "relevant": true}, {"passage": 3, "relevant": true}]}'
    )
    score = LLMJudge(client, "judge").context_relevancy(QUESTION, PASSAGES)
    assert score.excluded == UNREADABLE and "passage 3" in score.detail["error"]


def test_not_applicable_cases_make_no_call(llm_server, client):
    llm_server.reply(r".", good_judge)
    llm_judge = LLMJudge(client, "judge")
    for answer in (REFUSED, FAILED):
        scores = judge_question(QUESTION, "", answer, PASSAGES, llm_judge)
        for name in ("faithfulness", "context_recall", "answer_relevancy", "citation_precision"):
            assert scores[name].excluded == NOT_APPLICABLE and scores[name].method == LLM_JUDGE, name
            assert scores[name].calls == 0
        assert scores["context_relevancy"].value == 0.5  # retrieval is judged whatever the answer did
    uncited = llm_judge.citation_precision(answer_of("Refunds take 30 days."), PASSAGES)
    assert uncited.excluded == NOT_APPLICABLE
    assert llm_server.count("/v1/chat/completions") == 2  # the two context relevancy calls


def test_nothing_retrieved_is_zero_without_a_call(llm_server, client):
    llm_judge = LLMJudge(client, "judge")
    scores = [
        llm_judge.faithfulness(MIXED, []),
        llm_judge.context_recall(REFERENCE, []),
        llm_judge.context_relevancy(QUESTION, []),
    ]
    assert [s.value for s in scores] == [0.0, 0.0, 0.0]
    assert {s.method for s in scores} == {LLM_JUDGE}
    assert llm_server.count() == 0


def test_citations_of_passages_not_retrieved_are_unsupported_without_asking(llm_server, client):
    llm_server.reply(r"Citations to check:", verdicts("citation", "supports", [True]))
    answer = Answer(
        "Refunds take 30 days [1]. Cards [7].",
        False,
        (Citation(1, "refunds", "Refunds take 30 days."), Citation(7, "gone", "Cards.")),
        "llm",
        "m",
        -1.0,
    )
    score = LLMJudge(client, "judge").citation_precision(answer, PASSAGES)
    assert score.value == 0.5 and [c["supports"] for c in score.detail["citations"]] == [True, False]
    assert "[7]" not in llm_server.requests[0].body["messages"][-1]["content"]


class CountingClient:
    """Stands in for ChatClient: answers every call with a fixed text and usage."""

    def __init__(self, text: str):
        self.text = text

    def complete(self, messages, **params) -> ChatResult:
        return ChatResult(self.text, "judge", 120, 30, 42.0, 1, "stop", cached=False)


def test_tokens_and_latency_are_recorded_even_when_unreadable():
    good = LLMJudge(CountingClient('{"rating": 5}'), "judge").answer_relevancy(QUESTION, MIXED)
    assert (good.value, good.prompt_tokens, good.completion_tokens, good.latency_ms, good.calls) == (
        1.0,
        120,
        30,
        42.0,
        1,
    )
    bad = LLMJudge(CountingClient("no idea"), "judge").answer_relevancy(QUESTION, MIXED)
    assert bad.excluded == UNREADABLE
    assert (bad.prompt_tokens, bad.completion_tokens, bad.latency_ms, bad.calls) == (120, 30, 42.0, 1)


def test_cached_judgements_are_counted(llm_server):
    llm_server.reply(r".", good_judge)
    with ChatClient(llm_server.url, model="judge", cache=MemoryCallCache()) as cached:
        llm_judge = LLMJudge(cached, "judge", seed=3)
        first = judge_question(QUESTION, REFERENCE, MIXED, PASSAGES, llm_judge)
        again = judge_question(QUESTION, REFERENCE, MIXED, PASSAGES, llm_judge)
    assert sum(s.cached_calls for s in first.values()) == 0
    assert sum(s.cached_calls for s in again.values()) == 5
    assert {n: s.value for n, s in again.items()} == {n: s.value for n, s in first.items()}
    assert llm_server.count() == 5 and all(r.body["seed"] == 3 for r in llm_server.requests)


CASES = [
    ("answered", MIXED, PASSAGES, REFERENCE),
    ("refused", REFUSED, PASSAGES, REFERENCE),
    ("failed", FAILED, PASSAGES, ""),
    ("no passages", MIXED, [], REFERENCE),
    ("uncited", answer_of("Refunds take 30 days."), PASSAGES, ""),
    ("contentless question", answer_of("Yes [1]."), PASSAGES, ""),
]


@pytest.mark.parametrize("judge_reply", ["good", "unreadable", "down"])
@pytest.mark.parametrize(("name", "answer", "passages", "reference"), CASES, ids=[c[0] for c in CASES])
def test_no_score_ever_breaks_the_contract(
    llm_server, client, judge_reply, name, answer, passages, reference
):
    if judge_reply == "good":
        llm_server.reply(r".", good_judge)
    elif judge_reply == "unreadable":
        llm_server.reply(r".", "It is fine.")
    else:
        llm_server.fail_next(*([503] * 5))
    question = "What is it?" if name == "contentless question" else QUESTION
    for llm_judge in (None, LLMJudge(client, "judge")):
        scores = judge_question(question, reference, answer, passages, llm_judge)
        assert list(scores) == list(METRICS)
        check(scores.values())
        for score in scores.values():
            if score.method == LLM_JUDGE:
                assert llm_judge is not None and score.fallback is None


def test_prompts_name_their_reply_format():
    for prompt in (
        judge_llm.FAITHFULNESS_PROMPT,
        judge_llm.RECALL_PROMPT,
        judge_llm.CITATION_PROMPT,
        judge_llm.CONTEXT_PROMPT,
    ):
        assert re.search(r'\{"verdicts": \[\{"\w+": 1, "\w+": true', prompt)
    assert '"rating"' in judge_llm.RELEVANCY_PROMPT
