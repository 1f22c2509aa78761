"""The LLM judge with k samples, against the scripted server answering each call by its seed: the majority per
item and the median rating, the confidence (the share that agreed), unreadable and failed samples, the fallback
when the calls fail, the temperature and seeds sent, usage summed over the samples, and the call cache keeping k
answers."""

from __future__ import annotations

import json

import pytest

from evalsite.llm.client import ChatClient, ChatResult, MemoryCallCache
from evaluation.answers import judge_llm
from evaluation.answers.judge import HEURISTIC, LLM_JUDGE, METRICS, UNREADABLE, faithfulness, judge_question
from evaluation.answers.judge_llm import LLMJudge
from evaluation.answers.writer import Answer, Citation, Passage, parse_citations
from tests.llm_server import llm_server_fixture  # noqa: F401

PASSAGES = [
    Passage(1, "refunds", 1, "Refund policy", "Customers get a full refund within 30 days of purchase."),
    Passage(2, "shipping", 1, "Shipping", "Orders ship within two business days."),
]
QUESTION = "How long do customers have to request a refund?"
REFERENCE = "Customers get a full refund within 30 days."
TEXT = (
    "Customers get a full refund within 30 days [1]. Orders ship within two business days [2]. "
    "The moon is made of cheese [2]."
)
ANSWER = Answer(TEXT, False, parse_citations(TEXT, PASSAGES), "llm", "m", -1.0)
STATEMENTS = r"Answer statements:"


def verdicts(key: str, flag: str, values: list[bool], reason: str = "r") -> str:
    return json.dumps({"verdicts": [{key: i, flag: v, "reason": reason} for i, v in enumerate(values, 1)]})


def statements(values: list[bool], reason: str = "r") -> str:
    return verdicts("statement", "supported", values, reason)


@pytest.fixture
def client(llm_server):
    with ChatClient(
        llm_server.url, model="judge", timeout=2.0, backoff=0.001, max_attempts=1, concurrency=4
    ) as c:
        yield c


def judge_of(client, samples: int = 3, **kwargs) -> LLMJudge:
    return LLMJudge(client, "judge", samples=samples, **kwargs)


def test_the_majority_per_statement_with_its_confidence(llm_server, client):
    llm_server.reply_by_seed(
        STATEMENTS,
        {
            0: statements([True, True, False], "seed 0"),
            1: statements([True, False, False], "seed 1"),
            2: statements([True, False, True], "seed 2"),
        },
    )
    score = judge_of(client).faithfulness(ANSWER, PASSAGES)
    assert score.method == LLM_JUDGE and score.excluded is None and score.fallback is None
    assert score.value == pytest.approx(1 / 3)  # True 3/3, False 2/3, False 2/3
    rows = score.detail["statements"]
    assert [(r["supported"], r["confidence"], r["reason"]) for r in rows] == [
        (True, 1.0, "seed 0"),
        (False, 0.6667, "seed 1"),  # the reason of the first sample that gave the majority verdict
        (False, 0.6667, "seed 0"),
    ]
    assert score.detail["confidence"] == pytest.approx(0.7778)  # (1 + 2/3 + 2/3) / 3
    assert score.detail["samples"] == {"asked": 3, "readable": 3, "unreadable": 0, "failed": 0}
    assert score.calls == 3 and score.cached_calls == 0
    bodies = [r.body for r in llm_server.requests]
    assert sorted(b["seed"] for b in bodies) == [0, 1, 2]
    assert {b["temperature"] for b in bodies} == {0.7} and {b["model"] for b in bodies} == {"judge"}


def test_one_judgement_is_sent_at_temperature_0_and_records_no_confidence(llm_server, client):
    llm_server.reply(STATEMENTS, statements([True, False, False]))
    score = LLMJudge(client, "judge").faithfulness(ANSWER, PASSAGES)
    assert score.value == pytest.approx(1 / 3) and score.calls == 1
    assert "confidence" not in score.detail and "samples" not in score.detail
    assert all("confidence" not in row for row in score.detail["statements"])
    (request,) = llm_server.requests
    assert request.body["temperature"] == 0.0 and "seed" not in request.body


def test_a_chosen_temperature_and_seed_base_are_sent(llm_server, client):
    llm_server.reply(STATEMENTS, statements([True, True, True]))
    score = judge_of(client, samples=5, temperature=0.3, seed=10).faithfulness(ANSWER, PASSAGES)
    assert score.value == 1.0 and score.detail["confidence"] == 1.0 and score.calls == 5
    assert sorted(r.body["seed"] for r in llm_server.requests) == [10, 11, 12, 13, 14]
    assert {r.body["temperature"] for r in llm_server.requests} == {0.3}


def test_one_unreadable_sample_of_three_judges_on_the_readable_two_and_says_so(llm_server, client):
    llm_server.reply_by_seed(
        STATEMENTS,
        {0: statements([True, False, False]), 1: "It looks fine.", 2: statements([True, True, False])},
    )
    score = judge_of(client).faithfulness(ANSWER, PASSAGES)
    assert score.method == LLM_JUDGE and score.excluded is None
    # Statement 2: one True, one False among the readable two: a tie is not supported.
    assert [(r["supported"], r["confidence"]) for r in score.detail["statements"]] == [
        (True, 1.0),
        (False, 0.5),
        (False, 1.0),
    ]
    assert score.value == pytest.approx(1 / 3)
    assert score.detail["samples"] == {"asked": 3, "readable": 2, "unreadable": 1, "failed": 0}
    assert score.detail["confidence"] == pytest.approx(0.8333)
    assert score.calls == 3


def test_two_unreadable_samples_of_three_make_the_score_unreadable_never_zero(llm_server, client):
    llm_server.reply_by_seed(
        STATEMENTS, {0: "no idea", 1: statements([True, True, True]), 2: statements([True])}
    )
    score = judge_of(client).faithfulness(ANSWER, PASSAGES)
    assert score.value is None and score.excluded == UNREADABLE and score.method == LLM_JUDGE
    assert score.fallback is None and score.calls == 3
    assert score.detail["samples"] == {"asked": 3, "readable": 1, "unreadable": 2, "failed": 0}
    assert (
        score.detail["error"] and score.detail["answer"] == "no idea"
    )  # the first unreadable, in seed order


def test_every_sample_failing_falls_back_to_the_heuristic_labelled_so(llm_server, client):
    llm_server.fail_next(500, 500, 500)
    score = judge_of(client).faithfulness(ANSWER, PASSAGES)
    heuristic = faithfulness(ANSWER, PASSAGES)
    assert score.method == HEURISTIC and score.value == heuristic.value and score.detail == heuristic.detail
    assert score.fallback is not None
    assert score.fallback.startswith("judge call failed: 3 of 3 samples failed: ") and "HTTP 500" in (
        score.fallback
    )
    assert score.calls == 3 and llm_server.count("/v1/chat/completions") == 3


def test_two_failed_samples_of_three_fall_back_one_failed_is_outvoted(llm_server, client):
    llm_server.reply(STATEMENTS, statements([True, False, True]))
    llm_server.fail_next(503, 503)
    down = judge_of(client).faithfulness(ANSWER, PASSAGES)
    assert down.method == HEURISTIC and down.fallback is not None
    assert down.fallback.startswith("judge call failed: 2 of 3 samples failed: ")
    assert down.calls == 3

    llm_server.reset()
    llm_server.fail_next(503)
    up = judge_of(client).faithfulness(ANSWER, PASSAGES)
    assert up.method == LLM_JUDGE and up.value == pytest.approx(2 / 3)
    assert up.detail["samples"] == {"asked": 3, "readable": 2, "unreadable": 0, "failed": 1}


def test_the_rating_takes_the_median_and_its_share(llm_server, client):
    llm_server.reply_by_seed(
        r"Answer to rate:",
        {
            0: '{"rating": 5, "reason": "exact"}',
            1: '{"rating": 2, "reason": "off"}',
            2: '{"rating": 4, "reason": "close"}',
        },
    )
    score = judge_of(client).answer_relevancy(QUESTION, ANSWER)
    assert score.value == 0.75 and score.method == LLM_JUDGE
    assert score.detail == {
        "rating": 4,
        "reason": "close",
        "ratings": [5, 2, 4],
        "confidence": 0.3333,
        "samples": {"asked": 3, "readable": 3, "unreadable": 0, "failed": 0},
    }


def test_citations_and_passages_vote_too(llm_server, client):
    llm_server.reply_by_seed(
        r"Citations to check:",
        {
            0: verdicts("citation", "supports", [True, True, False]),
            1: verdicts("citation", "supports", [True, False, False]),
            2: verdicts("citation", "supports", [False, True, True]),
        },
    )
    llm_server.reply_by_seed(
        r"Passages to rate:",
        {
            0: verdicts("passage", "relevant", [True, False]),
            1: verdicts("passage", "relevant", [True, True]),
            2: verdicts("passage", "relevant", [True, False]),
        },
    )
    cited = judge_of(client).citation_precision(ANSWER, PASSAGES)
    assert [(c["supports"], c["confidence"]) for c in cited.detail["citations"]] == [
        (True, 0.6667),
        (True, 0.6667),
        (False, 0.6667),
    ]
    assert cited.value == pytest.approx(2 / 3) and cited.detail["confidence"] == pytest.approx(0.6667)
    relevant = judge_of(client).context_relevancy(QUESTION, PASSAGES)
    assert [(p["relevant"], p["confidence"]) for p in relevant.detail["passages"]] == [
        (True, 1.0),
        (False, 0.6667),
    ]
    assert relevant.value == 0.5 and relevant.detail["confidence"] == pytest.approx(0.8333)


def test_a_citation_of_a_passage_not_retrieved_is_decided_unasked_and_carries_no_confidence(
    llm_server, client
):
    text = "Customers get a full refund within 30 days [1]. Gift cards never expire [3]."
    answer = Answer(
        text,
        False,
        (Citation(1, "refunds", "Customers get a full refund within 30 days."), Citation(3, "gone", "Gift.")),
        "llm",
        "m",
        -1.0,
    )
    llm_server.reply(r"Citations to check:", verdicts("citation", "supports", [True]))
    score = judge_of(client).citation_precision(answer, PASSAGES)
    assert [c.get("confidence") for c in score.detail["citations"]] == [1.0, None]
    assert score.value == 0.5 and score.detail["confidence"] == 1.0


def test_five_metrics_with_three_samples_each_sum_their_usage(llm_server, client):
    from tests.answer_support import scripted_rag

    llm_server.reply(r".", scripted_rag)  # agrees with everything, whatever the seed
    scores = judge_question(QUESTION, REFERENCE, ANSWER, PASSAGES, judge_of(client))
    assert list(scores) == list(METRICS)
    assert {s.method for s in scores.values()} == {LLM_JUDGE}
    assert all(s.calls == 3 and s.detail["confidence"] == 1.0 for s in scores.values())
    assert llm_server.count("/v1/chat/completions") == 15


class FixedClient:
    """Stands in for ChatClient where usage matters (the scripted server reports no tokens): every call answers
    the same text with the same usage, and the parameters it was sent are kept."""

    def __init__(self, text: str):
        self.text = text
        self.sent: list[dict] = []

    def complete(self, messages, **params) -> ChatResult:
        self.sent.append(params)
        return ChatResult(self.text, "judge", 120, 30, 42.0, 1, "stop", cached=False)


def test_usage_sums_over_the_samples():
    fixed = FixedClient('{"rating": 5, "reason": "exact"}')
    score = LLMJudge(fixed, "judge", samples=3).answer_relevancy(QUESTION, ANSWER)  # type: ignore[arg-type]
    assert score.value == 1.0 and score.detail["confidence"] == 1.0
    assert (score.prompt_tokens, score.completion_tokens, score.latency_ms, score.calls) == (
        360,
        90,
        126.0,
        3,
    )
    assert sorted(p["seed"] for p in fixed.sent) == [0, 1, 2]
    unreadable = LLMJudge(FixedClient("no idea"), "judge", samples=3).answer_relevancy(QUESTION, ANSWER)  # type: ignore[arg-type]
    assert unreadable.excluded == UNREADABLE
    assert (unreadable.prompt_tokens, unreadable.completion_tokens, unreadable.calls) == (360, 90, 3)


def test_the_cache_keeps_each_sample_apart(llm_server):
    llm_server.reply_by_seed(
        STATEMENTS,
        {
            0: statements([True, True, False]),
            1: statements([False, True, False]),
            2: statements([True, False, False]),
        },
    )
    cache = MemoryCallCache()
    with ChatClient(llm_server.url, model="judge", cache=cache, max_attempts=1) as cached:
        first = judge_of(cached).faithfulness(ANSWER, PASSAGES)
        again = judge_of(cached).faithfulness(ANSWER, PASSAGES)
        single = LLMJudge(cached, "judge").faithfulness(ANSWER, PASSAGES)  # temperature 0: a call of its own
    assert len(cache) == 4 and llm_server.count() == 4
    assert first.cached_calls == 0 and again.cached_calls == 3
    assert again.detail == first.detail and first.detail["confidence"] == pytest.approx(0.7778)
    assert single.cached_calls == 0 and single.calls == 1


def test_every_statement_prompt_carries_a_worked_example():
    for prompt, heading in (
        (judge_llm.FAITHFULNESS_PROMPT, "Answer statements:"),
        (judge_llm.RECALL_PROMPT, "Reference statements:"),
        (judge_llm.CITATION_PROMPT, "Citations to check:"),
        (judge_llm.CONTEXT_PROMPT, "Passages to rate:"),
    ):
        example = prompt.split("Example.", 1)[1]
        assert heading in example
        reply = json.loads(example.split("Reply: ", 1)[1])
        flags = [next(v for k, v in verdict.items() if isinstance(v, bool)) for verdict in reply["verdicts"]]
        assert set(flags) == {True, False}  # each example shows both verdicts
    assert judge_llm.RELEVANCY_PROMPT.count("Answer to rate:") == 3
