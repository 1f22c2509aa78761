"""evaluation.targets.callers and evaluation.targets.secret_box, without Django: templates, mappings, id transforms, option
checks, and calls to a real scripted server on 127.0.0.1 (Elasticsearch-shaped and generic JSON endpoints, with
faults)."""

from __future__ import annotations

import json
import time

import pytest
from cryptography.fernet import Fernet

from evalsite.egress import LOOPBACK_NETWORKS, EgressPolicy
from evalsite.errors import EvalsiteError
from evaluation.targets.callers import TargetClient, TargetError, TargetSpec, fill, id_transform, read_hits
from evaluation.targets.definitions import check_options
from evaluation.targets.secret_box import SecretBox, derived_key
from tests.llm_server import llm_server_fixture  # noqa: F401

# The scripted servers listen on loopback, which the default policy refuses (tests/evaluation/test_egress.py).
LOOPBACK = EgressPolicy.parse(LOOPBACK_NETWORKS)

DOCS = {
    "refunds": "Customers get a full refund within 30 days of purchase.",
    "shipping": "Orders ship within two business days; express shipping arrives the next day.",
    "warranty": "Every device carries a two-year warranty covering manufacturing defects.",
}


def search_target(**options) -> TargetSpec:
    return TargetSpec(
        name="t", kind="http", base_url="http://x/search", options=check_options("http", options, ())
    )


def error_of(call) -> EvalsiteError:
    with pytest.raises(EvalsiteError) as caught:
        call()
    return caught.value


# --- templates ------------------------------------------------------------------------------------------------


def test_fill_keeps_a_whole_placeholder_typed_and_substitutes_inside_strings():
    template = {
        "q": "{{query}}",
        "k": "{{ top_k }}",
        "about": "question {{question_id}}: {{query}}",
        "n": [1, None],
    }
    query = 'say "hi" {{top_k}} \\ }'
    filled = fill(template, {"query": query, "top_k": 7, "question_id": "q-1"})
    assert filled == {"q": query, "k": 7, "about": f"question q-1: {query}", "n": [1, None]}
    # a query holding quotes, braces and backslashes stays one JSON string
    assert json.loads(json.dumps(filled))["q"] == query
    assert template["q"] == "{{query}}"  # the template itself is untouched


def test_options_are_checked_per_kind_and_every_error_names_its_field():
    cases = [
        ("http", {}, "options.request_template"),
        (
            "http",
            {"request_template": {"q": "{{qeury}}"}, "response_mapping": {"ids": "a"}},
            "options.request_template",
        ),
        (
            "http",
            {"request_template": {}, "response_mapping": {"scores": "a"}},
            "options.response_mapping.ids",
        ),
        (
            "http",
            {"request_template": {}, "response_mapping": {"ids": "a", "idz": "b"}},
            "options.response_mapping.idz",
        ),
        (
            "http",
            {"request_template": {}, "response_mapping": {"ids": "hits[?"}},
            "options.response_mapping.ids",
        ),
        ("http", {"request_template": {}, "response_mapping": {"ids": "a"}, "index": "x"}, "options.index"),
        ("lmkit", {}, "options.collection_id"),
        ("elasticsearch", {"fields": ["title"]}, "options.index"),
        ("elasticsearch", {"index": "docs", "fields": []}, "options.fields"),
        ("elasticsearch", {"index": "docs", "id_transform": {"regex": "("}}, "options.id_transform.regex"),
        (
            "http",
            {"request_template": {}, "response_mapping": {"ids": "a"}, "id_transform": {"sed": "x"}},
            "options.id_transform",
        ),
        ("python", {}, "options.callable"),
    ]
    for kind, options, field in cases:
        error = error_of(lambda kind=kind, options=options: check_options(kind, options, ()))
        assert error.details["field"] == field, (kind, options, error.message)
        assert error.message.startswith(field + ":")
    bad_expression = error_of(
        lambda: check_options("http", {"request_template": {}, "response_mapping": {"ids": "hits[?"}}, ())
    )
    assert bad_expression.code == "invalid-jmespath"
    assert error_of(lambda: check_options("nope", {}, ())).details["field"] == "kind"


def test_a_python_callable_loads_only_when_the_setting_lists_it():
    error = error_of(lambda: check_options("python", {"callable": "os.system"}, ("json.dumps",)))
    assert error.code == "python-target-not-allowed" and "os.system" in error.message
    assert check_options("python", {"callable": "json.dumps"}, ("json.dumps",)) == {"callable": "json.dumps"}


def test_python_targets_call_the_listed_callable():
    path = "tests.evaluation.test_targets.ranked_by_length"
    spec = TargetSpec(
        name="py", kind="python", options={"callable": path, "id_transform": {"regex": r"^(\w+)#"}}
    )
    with TargetClient(spec, (path,)) as client:
        hits = client.search("abc", 2)
    longest = sorted(DOCS, key=lambda d: -len(DOCS[d]))[:2]
    assert hits.ids == longest and hits.scores == [float(len(DOCS[d])) for d in longest]
    spec = TargetSpec(name="py", kind="python", options={"callable": "tests.evaluation.test_targets.broken"})
    with (
        TargetClient(spec, ("tests.evaluation.test_targets.broken",)) as client,
        pytest.raises(TargetError, match="raised ZeroDivisionError"),
    ):
        client.search("abc", 2)


def ranked_by_length(query: str, top_k: int):
    """A python target: every document, ordered by text length descending, ids suffixed "#p1" (a repeat too)."""
    ranked = sorted(DOCS, key=lambda d: -len(DOCS[d]))
    return [(f"{d}#p1", float(len(DOCS[d]))) for d in ranked] + [("warranty#p2", 1.0)]


def broken(query: str, top_k: int):
    return 1 / 0


# --- mappings ---------------------------------------------------------------------------------------------------


def test_mapping_errors_name_the_expression_and_what_it_found():
    spec = search_target(
        request_template={}, response_mapping={"ids": "data.hits[].id", "scores": "data.hits[].s"}
    )
    with pytest.raises(TargetError, match=r"ids: `data.hits\[\].id` found null, not a list"):
        read_hits(spec, {"data": {}}, 10, 1.0, 1)
    with pytest.raises(TargetError, match=r"gave \{\"a\": 1\}, not a document id"):
        read_hits(spec, {"data": {"hits": [{"id": {"a": 1}, "s": 1}]}}, 10, 1.0, 1)
    with pytest.raises(
        TargetError, match=r"ids: `length\(@\)` failed on this answer \(In function length\(\)"
    ):
        read_hits(search_target(request_template={}, response_mapping={"ids": "length(@)"}), 5, 10, 1.0, 1)
    with pytest.raises(TargetError, match=r"scores: `data.hits\[\].s` found \[1\], not 2 numbers"):
        read_hits(spec, {"data": {"hits": [{"id": "a", "s": 1}, {"id": "b"}]}}, 10, 1.0, 1)


def test_repeated_documents_keep_their_first_rank_after_the_id_transform_and_rankings_are_cut_at_top_k():
    spec = search_target(
        request_template={},
        response_mapping={"ids": "hits[].id", "scores": "hits[].score"},
        id_transform={"regex": r"^(.+?)#p\d+$"},
    )
    payload = {
        "hits": [{"id": i, "score": s} for i, s in [("a#p2", 9), ("b#p1", 8), ("a#p1", 7), (12, 6), ("c", 5)]]
    }
    hits = read_hits(spec, payload, 3, 4.5, 2)
    assert hits.ids == ["a", "b", "12"] and hits.scores == [9.0, 8.0, 6.0]
    assert hits.repeats_dropped == 1 and hits.latency_ms == 4.5 and hits.attempts == 2
    assert id_transform({"jmespath": "@"})("doc-1") == "doc-1"
    assert id_transform({"regex": "^doc-[0-9]+"})("doc-12#p3") == "doc-12"
    assert id_transform({"regex": "^zzz"})("doc-12#p3") == "doc-12#p3"  # no match: unchanged


# --- calls ------------------------------------------------------------------------------------------------------


def test_elasticsearch_kind_sends_a_multi_match_and_reads_hits(llm_server):
    llm_server.documents = dict(DOCS)
    spec = TargetSpec(
        name="es",
        kind="elasticsearch",
        base_url=llm_server.url + "/",
        headers={"X-Trace": "1"},
        secret_headers={"Authorization": "ApiKey s3cret"},
        options=check_options("elasticsearch", {"index": "docs", "fields": ["title", "body"]}, ()),
    )
    with TargetClient(spec, policy=LOOPBACK) as client:
        hits = client.search("express shipping", 2)
    assert hits.ids == ["shipping"] and hits.scores == [2.0]
    (request,) = llm_server.requests
    assert request.path == "/docs/_search"
    assert request.body == {
        "size": 2,
        "query": {"multi_match": {"query": "express shipping", "fields": ["title", "body"]}},
        "_source": False,
    }
    assert request.headers["Authorization"] == "ApiKey s3cret" and request.headers["X-Trace"] == "1"
    # the id from a _source field instead of _id
    spec = TargetSpec(
        name="es", kind="elasticsearch", base_url=llm_server.url,
        options=check_options("elasticsearch", {"index": "docs", "id_field": "doc_id"}, ()),
    )  # fmt: skip
    with TargetClient(spec, policy=LOOPBACK) as client:
        assert client.search("refund warranty", 5).ids == ["refunds", "warranty"]
    assert llm_server.requests[-1].body["_source"] == ["doc_id"]


def generic(url: str, **extra) -> TargetSpec:
    options = {
        "request_template": {"query": "{{query}}", "limit": "{{top_k}}", "meta": {"qid": "{{question_id}}"}},
        "response_mapping": {
            "ids": "data.hits[].id",
            "scores": "data.hits[].relevance",
            "texts": "data.hits[].text",
        },
        **extra.pop("options", {}),
    }
    return TargetSpec(
        name="gen", kind="http", base_url=url + "/search", options=check_options("http", options, ()), **extra
    )


def test_http_kind_substitutes_the_template_and_maps_the_answer(llm_server):
    llm_server.documents = dict(DOCS)
    llm_server.id_suffix = "#p1"
    with TargetClient(
        generic(llm_server.url, options={"id_transform": {"regex": "^(.*)#p1$"}}), policy=LOOPBACK
    ) as client:
        hits = client.search('defects "warranty" {{x}}', 10, "q-7")
    assert hits.ids == ["warranty"] and hits.texts == [DOCS["warranty"]]
    assert llm_server.requests[0].body == {
        "query": 'defects "warranty" {{x}}',
        "limit": 10,
        "meta": {"qid": "q-7"},
    }


def test_faults_are_retried_and_a_question_that_keeps_failing_is_an_error_not_an_empty_ranking(llm_server):
    llm_server.documents = dict(DOCS)
    llm_server.retry_after = "0.2"
    llm_server.hang_seconds = 2.0
    spec = generic(llm_server.url, timeout_s=0.5)
    with TargetClient(spec, policy=LOOPBACK) as client:
        for faults in [(500,), (429,), ("malformed",), ("truncated",), ("hang",), (503, "malformed")]:
            llm_server.reset()
            llm_server.fail_next(*faults)
            started = time.perf_counter()
            hits = client.search("refund", 5)
            assert hits.ids == ["refunds"] and hits.attempts == len(faults) + 1, faults
            if faults == (429,):
                assert time.perf_counter() - started >= 0.2  # Retry-After honoured
            assert hits.latency_ms < 400  # the successful attempt's own latency, not the retries'
        llm_server.fail_next(500, 502, 504)
        with pytest.raises(TargetError, match="HTTP 504 after 3 attempts"):
            client.search("refund", 5)
        llm_server.fail_next(404)
        with pytest.raises(TargetError, match="HTTP 404"):
            client.search("refund", 5)


# --- secrets ----------------------------------------------------------------------------------------------------


def test_secret_box_seals_rotates_and_refuses_a_wrong_key():
    old, new = Fernet.generate_key(), Fernet.generate_key()
    box = SecretBox([old])
    token = box.seal({"Authorization": "Bearer sk-live-123"})
    assert "sk-live-123" not in token and box.open(token) == {"Authorization": "Bearer sk-live-123"}
    rotated = SecretBox([new, old]).rotate(token)
    assert SecretBox([new]).open(rotated) == {"Authorization": "Bearer sk-live-123"}
    with pytest.raises(EvalsiteError) as caught:
        SecretBox([new]).open(token)
    assert caught.value.code == "target-secrets-unreadable" and caught.value.status_code == 409
    assert box.seal({}) == "" and box.open("") == {}
    assert derived_key("a") == derived_key("a") != derived_key("b")
    with pytest.raises(ValueError, match="not a Fernet key"):
        SecretBox(["short"])


def test_the_rate_limit_spaces_calls_across_threads():
    import threading

    from evaluation.targets.callers import _RateLimit

    limit = _RateLimit(20.0)  # one call every 50 ms
    started = time.perf_counter()
    threads = [threading.Thread(target=limit.wait) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert time.perf_counter() - started >= 0.25  # the sixth waits five intervals
    unlimited = _RateLimit(None)
    started = time.perf_counter()
    for _ in range(100):
        unlimited.wait()
    assert time.perf_counter() - started < 0.05


def test_an_answering_target_is_read_with_its_mapping(llm_server):
    llm_server.documents = dict(DOCS)
    options = {
        "request_template": {"question": "{{query}}", "k": "{{top_k}}"},
        "response_mapping": {
            "answer": "output.text",
            "refused": "output.declined",
            "passage_ids": "sources[].doc",
            "passage_texts": "sources[].content",
            "prompt_tokens": "usage.in",
        },
    }
    spec = TargetSpec(
        name="rag",
        kind="rag-http",
        base_url=llm_server.url + "/rag",
        options=check_options("rag-http", options, ()),
    )
    with TargetClient(spec, policy=LOOPBACK) as client:
        answer = client.answer("express shipping", 2)
        declined = client.answer("zebra", 2)
    assert answer.text.endswith("[1]") and answer.refused is False and answer.passage_ids == ["shipping"]
    assert (
        answer.passage_texts == [DOCS["shipping"]] and answer.prompt_tokens == 0 and answer.cited_ids is None
    )
    assert declined.refused is True and declined.passage_ids == []
    bad = {**options, "response_mapping": {**options["response_mapping"], "refused": "output.text"}}
    spec = TargetSpec(
        name="rag",
        kind="rag-http",
        base_url=llm_server.url + "/rag",
        options=check_options("rag-http", bad, ()),
    )
    with (
        TargetClient(spec, policy=LOOPBACK) as client,
        pytest.raises(TargetError, match="refused: `output.text` found .*, not true or false"),
    ):
        client.answer("express shipping", 2)
    missing_ids = {**options, "response_mapping": {"answer": "a", "passage_texts": "b"}}
    assert (
        error_of(lambda: check_options("rag-http", missing_ids, ())).details["field"]
        == "options.response_mapping.passage_ids"
    )


def answering(query: str, top_k: int):
    """A python target's answering form: the longest document, cited."""
    doc = max(DOCS, key=lambda d: len(DOCS[d]))
    return {
        "answer": f"{DOCS[doc]} [1]",
        "passage_ids": [doc],
        "passage_texts": [DOCS[doc]],
        "refused": False,
    }


def test_a_python_target_answers_with_a_mapping():
    path = "tests.evaluation.test_targets.answering"
    spec = TargetSpec(name="py", kind="python", options={"callable": path})
    with TargetClient(spec, (path,)) as client:
        answer = client.answer("anything", 3)
    doc = max(DOCS, key=lambda d: len(DOCS[d]))
    assert answer.passage_ids == [doc] and answer.passage_texts == [DOCS[doc]] and answer.refused is False
    spec = TargetSpec(
        name="py", kind="python", options={"callable": "tests.evaluation.test_targets.ranked_by_length"}
    )
    with (
        TargetClient(spec, ("tests.evaluation.test_targets.ranked_by_length",)) as client,
        pytest.raises(TargetError, match="not a mapping with an 'answer'"),
    ):
        client.answer("anything", 3)
