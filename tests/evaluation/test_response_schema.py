"""Real responses of search, answer, evaluate (sync and as a job), evaluate/answers and the runs endpoints hold to
the served OpenAPI schema: every field they answer is declared, every declared required field is there, and
each value has its declared type, nullability and enum."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import override_settings

from evaluation.answers.answering import answer_question
from evaluation.answers.configs import parse_answer_config
from evaluation.retrieval.read_path import available_rerankers
from goldenset import services
from tests.answer_support import scripted_rag
from tests.conftest import add_documents
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.schema_support import (
    component,
    conforms,
    errors,
    served_schema,
    to_json_schema,
)
from tests.support import answer_entries

API = "/lmkit/v1"


@pytest.fixture(scope="module")
def schema() -> dict:
    return served_schema()


@pytest.fixture
def golden(world):
    answer_entries(world.collection, "refund", "shipping", "gift-wrapping", keys={"refund": "refund-window"})
    policies = services.collection_create(tenant=world.tenant, slug="policies", name="Policies", actor="test")
    add_documents(policies, {"returns": "A refund for returned items needs the receipt."})
    return world


@pytest.fixture
def llm(llm_server, settings):
    settings.EVALSITE_LLM_BASE_URL = llm_server.url
    settings.EVALSITE_LLM_MODEL = "scripted"
    settings.EVALSITE_LLM_MAX_ATTEMPTS = 1
    return llm_server


def script(llm_server, case: str) -> None:
    """The model's behaviour for an answer-evaluation case (the first matching rule answers)."""
    if case == "degraded":  # faithfulness judgements unreadable; the first two judge calls fail (fallbacks)
        llm_server.reply(r"Answer statements:", "The answer looks fine to me.")
        llm_server.fail_next(500, 500)
    if case == "model-down":  # every answer call fails: those questions are errors, neither passed nor failed
        llm_server.fail_next(*([503] * 1000))
    llm_server.reply(r".", scripted_rag)


def job_of(world, schema, accepted) -> dict:
    """The accepted job, polled: the job conforms, and so does its result (by the job's kind)."""
    path = f"{API}/jobs/{{job_id}}"
    job = conforms(schema, world.client.get(f"{API}/jobs/{accepted['job_id']}"), path, "get", 200)
    assert job["status"] == "Completed", job["error"]
    return job


# --- the checks themselves ---------------------------------------------------------------------------------------


def test_the_check_rejects_an_undeclared_field_a_missing_one_and_a_wrong_null(schema, golden):
    body = golden.client.post(
        f"{API}/search", {"collection_id": "handbook", "query": "refund"}, format="json"
    )
    body = body.json()
    assert body["results"] and errors(schema, "SearchOut", body) == []

    assert errors(schema, "SearchOut", {**body, "surprise": 1}) == [
        "(root): Additional properties are not allowed ('surprise' was unexpected)"
    ]
    assert errors(schema, "SearchOut", {k: v for k, v in body.items() if k != "took_ms"}) == [
        "(root): 'took_ms' is a required property"
    ]
    nested = {**body, "results": [{**body["results"][0], "snippet": "x"}]}
    assert errors(schema, "SearchOut", nested) == [
        "results/0: Additional properties are not allowed ('snippet' was unexpected)"
    ]
    not_null = {**body, "results": [{**body["results"][0], "score": None}]}
    assert errors(schema, "SearchOut", not_null) == ["results/0/score: None is not of type 'number'"]
    config = {**body, "config": {**body["config"], "search_type": "Fulltext"}}
    assert len(errors(schema, "SearchOut", config)) == 1  # not one of the enum's values
    assert errors(schema, "SearchOut", {**body, "config": {**body["config"], "top_k": None}}) == []


def test_the_schema_checked_is_the_one_served(schema, client, db):
    served = client.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert served.status_code == 200 and json.loads(served.content) == schema


def test_nullable_becomes_a_null_alternative_and_objects_are_closed():
    converted = to_json_schema(
        {"type": "object", "properties": {"nullable": {"type": "integer", "nullable": True}}, "required": []}
    )
    assert converted == {
        "type": "object",
        "properties": {"nullable": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
        "required": [],
        "additionalProperties": False,
    }
    free = {"type": "object", "additionalProperties": {}}
    assert to_json_schema(free) == free  # a free-form object (a judge's detail) stays free-form


# --- the endpoints -----------------------------------------------------------------------------------------------


def test_search_responses_conform(schema, golden):
    client, path = golden.client, f"{API}/search"
    plain = conforms(
        schema,
        client.post(path, {"collection_id": "handbook", "query": "refund"}, format="json"),
        path,
        "post",
        200,
    )
    assert plain["results"]
    body = {
        "collection_ids": ["handbook", "policies"],
        "query": "refund receipt",
        "search_type": "Hybrid",
        "rerank": True,
        "top_k": "2",
        "as_of": "2030-01-01",
    }
    mixed = conforms(schema, client.post(path, body, format="json"), path, "post", 200)
    assert mixed["config"]["rerank"] == "proximity" and mixed["config"]["as_of"] == "2030-01-01T00:00:00Z"
    assert {r["collection_id"] for r in mixed["results"]} == {"handbook", "policies"}
    none = conforms(
        schema,
        client.post(path, {"collection_id": "handbook", "query": "zeppelin"}, format="json"),
        path,
        "post",
        200,
    )
    assert none["results"] == []
    bad = {"collection_id": "handbook", "query": "refund", "search_type": "Fuzzy"}
    conforms(schema, client.post(path, bad, format="json"), path, "post", 400)


def test_evaluate_responses_conform_in_the_request_and_as_a_job(
    schema, golden, django_capture_on_commit_callbacks
):
    path = f"{API}/search/evaluate"
    body = {
        "collection_ids": ["handbook", "policies"],
        "ks": ["1", "3"],
        "configs": [
            {"label": "ft"},
            {"search_type": "Hybrid", "rerank": True, "top_k": 2, "as_of": "2030-01-01"},
        ],
    }
    done = conforms(schema, golden.client.post(path, body, format="json"), path, "post", 200)
    assert [r["label"] for r in done["runs"]] == [
        "ft",
        "Hybrid Rrf rerank:proximity top_k:2 as_of:2030-01-01",
    ]

    with override_settings(EVALSITE_EVALUATE_SYNC_LIMIT=1), django_capture_on_commit_callbacks(execute=True):
        accepted = conforms(schema, golden.client.post(path, body, format="json"), path, "post", 202)
    job = job_of(golden, schema, accepted)
    assert job["kind"] == "Evaluate" and errors(schema, "EvaluateOut", job["result"]) == []
    component(schema, "EvaluateOut")


def test_answer_responses_conform(schema, golden):
    path = f"{API}/search/answer"
    question = {"collection_id": "handbook", "query": "How long do I have to get a refund?"}
    answered = conforms(schema, golden.client.post(path, question, format="json"), path, "post", 200)
    assert (
        answered["method"] == "extractive" and answered["citations"] and answered["config"]["model"] is None
    )
    off_topic = {
        "collection_id": "handbook",
        "query": "Which volcano erupted in 2010?",
        "groundedness": "High",
    }
    declined = conforms(schema, golden.client.post(path, off_topic, format="json"), path, "post", 200)
    assert declined["refused"] is True and declined["citations"] == []
    conforms(
        schema,
        golden.client.post(path, {**question, "groundedness": "Very"}, format="json"),
        path,
        "post",
        400,
    )


def test_the_answer_service_returns_exactly_what_the_schema_declares(schema, golden):
    """The endpoint answers through AnswerOut, which would drop a field the service added: the service's own dict
    is held to the schema too, so a new field is declared before it is answered."""
    config = parse_answer_config({"groundedness": "Low"}, 0, available_rerankers(), prefix="")
    answer = answer_question(collections=[golden.collection], question="Where do refunds go?", config=config)
    assert answer["citations"] and errors(schema, "AnswerOut", json.loads(json.dumps(answer))) == []


def test_a_model_written_answer_conforms(schema, golden, llm):
    script(llm, "llm-judged")
    path = f"{API}/search/answer"
    body = {
        "collection_ids": ["handbook", "policies"],
        "query": "How long do I have to get a refund?",
        "model": "m1",
    }
    answered = conforms(schema, golden.client.post(path, body, format="json"), path, "post", 200)
    assert answered["method"] == "llm" and answered["model"] == "m1" and answered["citations"]


CASES = {  # case: (judge_model, the first configuration's model, the runs' modes)
    "offline": ("heuristic", "extractive", {"heuristic"}),
    "llm-judged": (None, None, {"llm-judge"}),
    "degraded": (None, "extractive", {"mixed", "llm-judge"}),  # the failed calls fall in one run or both
    "model-down": ("heuristic", None, {"heuristic"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_answer_evaluation_and_its_runs_conform(
    schema, golden, request, django_capture_on_commit_callbacks, case
):
    judge_model, model, modes = CASES[case]
    if case != "offline":
        script(request.getfixturevalue("llm"), case)
    path = f"{API}/search/evaluate/answers"
    body = {
        "collection_id": "handbook",
        "judge_model": judge_model,
        "configs": [{"label": "ft", "model": model}, {"groundedness": "High", "model": model}],
        "unanswerable_questions": ["Can I pay with bitcoin at the store?"],
    }
    with django_capture_on_commit_callbacks(execute=True):
        accepted = conforms(schema, golden.client.post(path, body, format="json"), path, "post", 202)
    job = job_of(golden, schema, accepted)
    assert job["kind"] == "EvaluateAnswers" and errors(schema, "AnswerEvaluationOut", job["result"]) == []
    component(schema, "AnswerEvaluationOut")
    assert {r["mode"] for r in job["result"]["runs"]} <= modes

    runs_path = f"{API}/search/evaluate/runs"
    listed = conforms(schema, golden.client.get(f"{runs_path}?kind=answers"), runs_path, "get", 200)
    assert listed["count"] == 2
    questions = []
    for run in listed["results"]:
        detail_path = f"{runs_path}/{{run_id}}"
        detail = conforms(schema, golden.client.get(f"{runs_path}/{run['run_id']}"), detail_path, "get", 200)
        assert len(detail["results"]) == 4 and detail["summary"]["usage"]
        questions += detail["results"]
    assert {q["answerable"] for q in questions} == {True, False}
    judgements = [j for q in questions for j in q["judgements"].values()]
    if case == "degraded":  # the nullable fields were exercised with values too
        assert any(j["excluded"] == "unreadable" for j in judgements)
        assert any(j["fallback"] for j in judgements)
    if case == "model-down":
        assert any(
            q["diagnosis"] == "error" and q["refused"] is None and q["passed"] is None for q in questions
        )


def test_retrieval_runs_conform_listed_beside_answer_runs(schema, golden, django_capture_on_commit_callbacks):
    golden.client.post(f"{API}/search/evaluate", {"collection_id": "handbook", "ks": [1, 5]}, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        golden.client.post(f"{API}/search/evaluate/answers", {"collection_id": "handbook"}, format="json")
    path = f"{API}/search/evaluate/runs"
    listed = conforms(schema, golden.client.get(path), path, "get", 200)
    assert [r["kind"] for r in listed["results"]] == ["answers", "retrieval"]
    retrieval = listed["results"][1]
    assert retrieval["mode"] == "" and retrieval["index"]["content_versions"]
    assert retrieval["summary"].keys() == {"latency_ms"} and retrieval["summary"]["latency_ms"]["count"] == 2
    detail = conforms(
        schema, golden.client.get(f"{path}/{retrieval['run_id']}"), f"{path}/{{run_id}}", "get", 200
    )
    assert [q["diagnosis"] for q in detail["results"]] == ["pass", "pass"] and detail["results"][0]["ranked"]
    conforms(schema, golden.client.get(f"{path}/not-a-run"), f"{path}/{{run_id}}", "get", 404)


# --- the CLI -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "gate_keys", "evaluation"),
    [
        ([], {"metric", "fail_under", "passed"}, "EvaluateOut"),
        (["--answers", "--no-llm"], {"fail_under", "passed"}, "AnswerEvaluationOut"),
    ],
    ids=["retrieval", "answers"],
)
def test_the_cli_json_has_the_apis_shape(schema, golden, args, gate_keys, evaluation):
    """`manage.py evaluate --format json` is the API's evaluation (as /search/evaluate and the EvaluateAnswers
    job answer it) plus the gate."""
    out = io.StringIO()
    scope = ["--cluster", "acme", "--tenant", "search", "--collection", "handbook", "--format", "json"]
    call_command("evaluate", *scope, *args, stdout=out)
    document = json.loads(out.getvalue())
    assert set(document) == {"batch_id", "runs", *gate_keys} and document["runs"]
    assert errors(schema, evaluation, {k: document[k] for k in ("batch_id", "runs")}) == []


def test_target_responses_and_runs_conform(schema, golden, llm_server):
    """Targets (list, create, one, test connection) and a batch of an external target beside a built-in
    configuration, one question failing (a partial run), as evaluate answers it and as the runs endpoints do."""
    llm_server.documents = {"refunds": "refund within 30 days", "shipping": "express shipping next day"}
    target = {
        "name": "prod",
        "kind": "http",
        "base_url": llm_server.url + "/search",
        "secret_headers": {"Authorization": "Bearer k"},
        "options": {
            "request_template": {"query": "{{query}}", "limit": "{{top_k}}"},
            "response_mapping": {"ids": "data.hits[].id", "scores": "data.hits[].relevance"},
        },
    }
    client, path = golden.client, f"{API}/targets"
    conforms(schema, client.post(path, target, format="json"), path, "post", 201)
    conforms(schema, client.get(path), path, "get", 200)
    conforms(schema, client.get(f"{path}/prod"), f"{path}/{{name}}", "get", 200)
    conforms(
        schema,
        client.patch(f"{path}/prod", {"concurrency": 1}, format="json"),
        f"{path}/{{name}}",
        "patch",
        200,
    )
    tested = conforms(
        schema, client.post(f"{path}/prod/test", {}, format="json"), f"{path}/{{name}}/test", "post", 200
    )
    assert tested["ok"] is True
    llm_server.fail_next(500, 500, 500)
    evaluate = f"{API}/search/evaluate"
    body = {
        "collection_id": "handbook",
        "configs": [{"label": "builtin"}, {"target": "prod", "max_error_rate": 1}],
    }
    result = conforms(schema, client.post(evaluate, body, format="json"), evaluate, "post", 200)
    assert [r["status"] for r in result["runs"]] == ["complete", "partial"]
    runs = f"{API}/search/evaluate/runs"
    detail = conforms(
        schema, client.get(f"{runs}/{result['runs'][1]['run_id']}"), f"{runs}/{{run_id}}", "get", 200
    )
    assert detail["status"] == "partial" and detail["results"][0]["error"] == "HTTP 500 after 3 attempts"


def test_run_file_responses_conform(schema, golden):
    from django.core.files.uploadedfile import SimpleUploadedFile

    path = f"{API}/search/evaluate/run-file"
    upload = SimpleUploadedFile(
        "run.trec", b"refund-window Q0 refunds 1 2.0 mine\nrefund-window Q0 ghost 2 1.0 mine\n"
    )
    result = conforms(
        schema, golden.client.post(path, {"collection_id": "handbook", "file": upload}), path, "post", 200
    )
    (run,) = result["runs"]
    assert run["config"]["run_file"] == "run.trec" and run["unjudged"]["unjudged@5"] == 1
    runs = f"{API}/search/evaluate/runs"
    conforms(schema, golden.client.get(f"{runs}/{run['run_id']}"), f"{runs}/{{run_id}}", "get", 200)
    conforms(schema, golden.client.post(path, {"collection_id": "handbook"}), path, "post", 400)


def test_labels_calibration_and_thresholds_conform(schema, world):
    services.golden_entries_add(
        collection=world.collection,
        entries=[services.EntryInput(question=f"Refund rule {i}?", key=f"k{i}") for i in range(4)],
        actor="test",
    )
    passages = [
        {"document_id": "refunds", "title": "Refunds", "text": "Customers get a full refund in 30 days."}
    ]
    rows = [
        {"question_id": f"k{i}", "rater": rater, "metric": "faithfulness", "label": label, "answer": answer,
         "passages": passages}
        for i, (label, answer) in enumerate((("pass", "Customers get a full refund in 30 days."),
                                             ("fail", "Shipping is free."), ("pass", "A full refund."),
                                             ("fail", "Refunds take a year.")))
        for rater in ("ann", "bob")
    ]  # fmt: skip
    body = {"collection_id": "handbook", "labels": rows}
    conforms(schema, world.client.post(f"{API}/search/evaluate/labels", body, format="json"),
             "/lmkit/v1/search/evaluate/labels", "post", 201)  # fmt: skip
    applied = conforms(
        schema,
        world.client.post(
            f"{API}/search/evaluate/calibration/thresholds",
            {"collection_id": "handbook", "metric": "faithfulness"},
            format="json",
        ),
        "/lmkit/v1/search/evaluate/calibration/thresholds",
        "post",
        200,
    )
    assert applied["calibrated_from"]["labels"] == 4
    report = conforms(
        schema,
        world.client.get(f"{API}/search/evaluate/calibration", {"collection_id": "handbook"}),
        "/lmkit/v1/search/evaluate/calibration",
        "get",
        200,
    )
    assert report["judges"] and report["agreement"] and report["thresholds"]
