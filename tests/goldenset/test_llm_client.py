"""evalsite.llm.client.ChatClient against the scripted OpenAI-compatible server over real HTTP: answers, JSON reading
and validation, retries on 429/5xx/timeouts/bad bodies, no retry on other 4xx, bounded concurrency."""

from __future__ import annotations

import json
import threading
import time

import pytest

from evalsite.errors import EvalsiteError
from evalsite.llm.client import ChatClient, map_concurrent
from evalsite.llm.json_replies import extract_json, validate
from tests.llm_server import llm_server_fixture  # noqa: F401

KEY = "sk-very-secret-key"
SCHEMA = {
    "type": "object",
    "required": ["questions"],
    "properties": {
        "questions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["question", "difficulty"],
                "properties": {
                    "question": {"type": "string", "minLength": 5},
                    "difficulty": {"enum": ["easy", "hard"]},
                    "score": {"type": "number"},
                },
            },
        }
    },
}


@pytest.fixture
def client(llm_server):
    with ChatClient(llm_server.url, api_key=KEY, model="scripted-chat", timeout=2.0, backoff=0.01) as c:
        yield c


def ask(text: str) -> list[dict]:
    return [{"role": "system", "content": "You answer briefly."}, {"role": "user", "content": text}]


def test_a_completion_returns_text_tokens_and_latency(llm_server, client):
    llm_server.latency = 0.05
    llm_server.reply(r"capital of france", "Paris")
    result = client.complete(ask("What is the capital of France?"), max_tokens=10)
    assert result.text == "Paris"
    assert result.model == "scripted-chat"
    assert (result.prompt_tokens, result.completion_tokens) == (0, 0)  # as the server reports them
    assert result.latency_ms >= 50
    assert result.attempts == 1
    assert result.finish_reason == "stop"
    sent = llm_server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert sent.body["temperature"] == 0.0
    assert sent.body["max_tokens"] == 10
    assert sent.body["model"] == "scripted-chat"
    assert sent.body["messages"][1]["content"] == "What is the capital of France?"
    # model per request; a base URL already ending in /v1 works too
    client.complete(ask("hi"), model="other")
    assert llm_server.requests[-1].body["model"] == "other"
    with ChatClient(llm_server.url + "/v1/", backoff=0.01) as plain:
        assert plain.complete(ask("echo me")).text == "echo me"
    assert (
        "model" not in llm_server.requests[-1].body and "Authorization" not in llm_server.requests[-1].headers
    )
    usage = client.usage()
    assert (usage.calls, usage.failures, usage.attempts) == (2, 0, 2)


def test_json_in_a_fence_with_prose_is_extracted_and_validated(llm_server, client):
    payload = {"questions": [{"question": "How long do refunds take?", "difficulty": "easy", "score": 1}]}
    llm_server.reply(
        r"questions", f"Sure! Here you go:\n```json\n{json.dumps(payload, indent=2)}\n```\nHope it helps {{:"
    )
    data, result = client.complete_json(ask("Write questions"), schema=SCHEMA)
    assert data == payload
    assert result.attempts == 1


def test_a_schema_violation_is_unreadable_and_names_the_path(llm_server, client):
    bad = {
        "questions": [
            {"question": "Fine question?", "difficulty": "easy"},
            {"question": "Why", "difficulty": "easy"},
        ]
    }
    llm_server.reply(r"questions", json.dumps(bad))
    with pytest.raises(EvalsiteError) as caught:
        client.complete_json(ask("Write questions"), schema=SCHEMA)
    assert caught.value.code == "llm-unreadable"
    assert caught.value.details["path"] == "$.questions[1].question"
    assert "$.questions[1].question" in caught.value.message
    llm_server.reply(r"prose", "I cannot help with that.")
    with pytest.raises(EvalsiteError) as caught:
        client.complete_json(ask("only prose"), schema=SCHEMA)
    assert caught.value.code == "llm-unreadable"


def test_429_then_500_then_ok_succeeds_on_the_third_attempt(llm_server, client):
    llm_server.fail_next(429, 500)
    result = client.complete(ask("persist"))
    assert result.text == "persist"
    assert result.attempts == 3
    assert llm_server.count("/v1/chat/completions") == 3


def test_exhausted_retries_are_unavailable_without_the_key(llm_server, client):
    llm_server.fail_next(503, 502, 500, 429)
    with pytest.raises(EvalsiteError) as caught:
        client.complete(ask("doomed"))
    error = caught.value
    assert error.code == "llm-unavailable"
    assert error.status_code == 503
    assert "after 4 attempts" in error.message
    assert KEY not in json.dumps(error.as_dict()) and KEY not in repr(client)
    assert llm_server.count() == 4
    assert client.usage().failures == 1


def test_other_4xx_are_not_retried(llm_server):
    llm_server.api_key = "right-key"
    with (
        ChatClient(llm_server.url, api_key=KEY, backoff=0.01) as wrong,
        pytest.raises(EvalsiteError) as caught,
    ):
        wrong.complete(ask("let me in"))
    assert caught.value.code == "llm-unavailable"
    assert caught.value.details["status"] == 401
    assert llm_server.count() == 1
    assert KEY not in json.dumps(caught.value.as_dict())


def test_a_hang_times_out_and_is_retried(llm_server):
    llm_server.hang_seconds = 1.0
    llm_server.fail_next("hang")
    with ChatClient(llm_server.url, timeout=0.2, backoff=0.01) as quick:
        started = time.perf_counter()
        result = quick.complete(ask("are you there"))
    assert result.text == "are you there"
    assert result.attempts == 2
    assert 0.2 <= time.perf_counter() - started < 1.0


def test_malformed_and_truncated_bodies_are_retried(llm_server, client):
    llm_server.fail_next("malformed", "truncated")
    result = client.complete(ask("whole answer"))
    assert result.text == "whole answer"
    assert result.attempts == 3
    llm_server.fail_next("truncated", "malformed", "truncated", "malformed")
    with pytest.raises(EvalsiteError) as caught:
        client.complete(ask("never whole"))
    assert caught.value.code == "llm-unavailable"


def test_concurrency_is_bounded_and_order_preserved(llm_server):
    in_flight = 0
    peak = 0
    lock = threading.Lock()

    def slow_echo(messages):
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.08)
        with lock:
            in_flight -= 1
        return "answer " + messages[-1]["content"]

    llm_server.reply(r"^item", slow_echo)
    with ChatClient(llm_server.url, concurrency=3, backoff=0.01) as c:
        started = time.perf_counter()
        results = c.map_concurrent(lambda i: c.complete(ask(f"item {i}")).text, range(9))
        elapsed = time.perf_counter() - started
        assert results == [f"answer item {i}" for i in range(9)]
        assert peak == 3  # reached, never exceeded
        assert elapsed >= 0.24  # three waves of 0.08 s

        # The bound holds per client, however many threads call it directly.
        peak = 0
        threads = [threading.Thread(target=c.complete, args=(ask(f"item x{i}"),)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert 1 <= peak <= 3


def test_map_concurrent_raises_the_first_error():
    def boom(i: int) -> int:
        if i == 2:
            raise EvalsiteError("llm-unavailable", "no", status=503)
        return i * 10

    assert map_concurrent(lambda i: i * 10, range(5), concurrency=2) == [0, 10, 20, 30, 40]
    assert map_concurrent(boom, [], concurrency=2) == []
    with pytest.raises(EvalsiteError):
        map_concurrent(boom, range(5), concurrency=2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]  ", [1, 2]),
        ('Here it is: {"a": {"b": [1, "}"]}} -- done.', {"a": {"b": [1, "}"]}}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Sure.\n```\n[{"q": "x"}]\n```\nAnything else?', [{"q": "x"}]),
        ('Text {not json} then {"ok": true} and {"later": 1}', {"ok": True}),
        ('<think>maybe {"draft": 1}</think>{"final": 2}', {"final": 2}),
        ('```json\n{"fenced": 1}\n```\n{"bare": 2}', {"fenced": 1}),
    ],
)
def test_extract_json(text, expected):
    assert extract_json(text) == expected


def test_extract_json_expecting_a_kind_and_failing():
    assert extract_json('see [1] then {"a": 1}', expect="object") == {"a": 1}
    assert extract_json('see [1] then {"a": 1}') == [1]
    for text in ["", "no json here", '{"a": 1', "```json\n{broken\n```"]:
        with pytest.raises(EvalsiteError) as caught:
            extract_json(text)
        assert caught.value.code == "llm-unreadable"


def test_validate_subset():
    validate(
        {"n": 3, "f": 1.5, "b": True, "s": "abc"},
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "f": {"type": "number"},
                "b": {"type": "boolean"},
                "s": {"type": ["string", "null"], "minLength": 3},
            },
        },
    )
    cases = [
        ({"n": True}, {"properties": {"n": {"type": "integer"}}}, "$.n"),
        ({"n": 1.5}, {"properties": {"n": {"type": "integer"}}}, "$.n"),
        ({}, {"type": "object", "required": ["x"]}, "$.x"),
        ([1, "a"], {"type": "array", "items": {"type": "number"}}, "$[1]"),
        ("c", {"enum": ["a", "b"]}, "$"),
        ({"s": ""}, {"properties": {"s": {"type": "string", "minLength": 1}}}, "$.s"),
        ([], {"type": "object"}, "$"),
    ]
    for data, schema, path in cases:
        with pytest.raises(EvalsiteError) as caught:
            validate(data, schema)
        assert caught.value.code == "llm-unreadable"
        assert caught.value.details["path"] == path


def test_from_settings_reads_the_configured_endpoint(llm_server, settings):
    settings.EVALSITE_LLM_BASE_URL = llm_server.url
    settings.EVALSITE_LLM_API_KEY = KEY
    settings.EVALSITE_LLM_MODEL = "scripted-chat"
    with ChatClient.from_settings(backoff=0.01) as configured:
        result = configured.complete([{"role": "user", "content": "hello"}])
    assert result.model == "scripted-chat" and result.attempts == 1 and result.text


def test_from_settings_without_an_endpoint_is_a_clear_503(settings):
    settings.EVALSITE_LLM_BASE_URL = ""
    with pytest.raises(EvalsiteError) as caught:
        ChatClient.from_settings()
    assert (caught.value.code, caught.value.status_code) == ("llm-unavailable", 503)


def test_text_no_database_can_store_is_cleaned_from_answers_and_their_json(llm_server, client):
    llm_server.reply(r"nul", 'Bad\x00 text \ud800 here {"answer": "x\\u0000y\\udc00z", "list": ["\\u0000"]}')
    result = client.complete(ask("nul please"))
    assert result.text == 'Bad text \ufffd here {"answer": "x\\u0000y\\udc00z", "list": ["\\u0000"]}'
    assert extract_json(result.text) == {"answer": "xy\ufffdz", "list": [""]}
