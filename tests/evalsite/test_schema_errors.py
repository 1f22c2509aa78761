"""Every error answer is documented (issue 24): each operation of the schema is sent what any operation can
meet — no key or an unknown one, NUL in a query value or a path id, cluster_id / tenant_id of no tenant of the
key, ids that do not exist, a page past the last, a body too large, of a type the operation does not read, not
JSON, or of the wrong shape — and must answer the status expected of it, which its schema documents with the
envelope, the answer's body valid against it. The operations are walked from the schema itself: a new one is
probed as soon as it is routed.

Elsewhere: the 503 of a database that is down on every operation (tests/evalsite/test_database_outage.py), the
conflicts and everything else a fuzzer finds (tests/evalsite/test_fuzz_schema.py, on PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import jsonschema
import pytest

from evalsite.jobs.models import Job, JobStatus
from evaluation.judgments.pools import pool_create
from evaluation.models import PoolApplication
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.runs.slices import EVERY
from goldenset.models import GoldenJobKind
from tests.conftest import api_client, person_client
from tests.schema_support import served_schema, to_json_schema
from tests.support import handbook_entries

BODY_METHODS = ("post", "put", "patch")
# What the reads that require parameters need (the export, the calibration and its thresholds, a pool's next
# item), so their tenant and lookups are reached; each is sent where the operation documents it (one it does not
# is refused: tests/evalsite/test_query_parameters.py).
REQUIRED = {"collection_id": "handbook", "metric": "faithfulness", "rater": "ann"}
# On every operation; 413 and 415 on every one that reads a body.
SHARED = {"400", "401", "404", "414", "431", "503"}


@pytest.fixture(scope="module")
def openapi() -> dict:
    return served_schema()


def operations(openapi: dict) -> Iterator[tuple[str, str]]:
    for path, methods in openapi["paths"].items():
        for method in methods:
            yield method, path


@pytest.fixture
def ids(world) -> dict[str, str]:
    """Path ids that exist for the world's tenant."""
    from evaluation.configs import parse_configs
    from evaluation.models import Target
    from evaluation.retrieval.read_path import available_rerankers

    entries = handbook_entries(world.collection)
    _, runs = evaluate_retrieval(
        tenant=world.tenant,
        collections=[world.collection],
        ks=[10],
        configs=parse_configs([{"label": "bm25"}], available_rerankers(), None),
    )
    Target.objects.create(
        tenant=world.tenant,
        name="stub",
        kind="lmkit",
        base_url="http://127.0.0.1:9/",
        options={"collection_id": "x"},
    )
    pool = pool_create(
        tenant=world.tenant, collection=world.collection, run_ids=[str(runs[0].pk)], depth=10,
        raters_per_item=1, subset=EVERY, actor="test",
    )  # fmt: skip
    application = PoolApplication.objects.create(
        pool=pool, source="people", judgments=0, changes=[], created_by="test"
    )
    job = Job.objects.create(
        tenant=world.tenant,
        collection=world.collection,
        kind=GoldenJobKind.INGEST,
        status=JobStatus.COMPLETED,
        input={},
    )
    from evaluation.models import Study

    study = Study.objects.create(
        tenant=world.tenant,
        collection=world.collection,
        request={"base": {"label": "bm25"}},
        metric="ndcg@10",
    )
    from evaluation.models import Alert, Schedule, ScheduleRun

    schedule = Schedule.objects.create(
        tenant=world.tenant, collection=world.collection, name="nightly", configs=[{"label": "bm25"}], ks=[10],
        every_minutes=60, gate={"metric": "mrr", "min": 0.5},
    )  # fmt: skip
    tick = ScheduleRun.objects.create(schedule=schedule, tick_at=schedule.created_at)
    alert = Alert.objects.create(
        tenant=world.tenant, collection=world.collection, schedule=schedule, reasons=[], fired_by=tick
    )
    return {
        "schedule_id": str(schedule.pk),
        "alert_id": str(alert.pk),
        "study_id": str(study.pk),
        "collection_id": "handbook",
        "document_id": "refunds",
        "entry_id": str(entries[0].pk),
        "job_id": str(job.pk),
        "run_id": str(runs[0].pk),
        "name": "stub",
        "pool_id": str(pool.pk),
        "application_id": str(application.pk),
    }


def url(path: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    assert "{" not in path, path
    return path


def query(openapi: dict, method: str, path: str, **values: str) -> str:
    """A query string of REQUIRED and `values`, the ones the operation documents."""
    known = {p["name"] for p in openapi["paths"][path][method].get("parameters", []) if p["in"] == "query"}
    return "&".join(f"{name}={value}" for name, value in {**REQUIRED, **values}.items() if name in known)


def documented(openapi: dict, method: str, path: str, response) -> str | None:
    """What is wrong with the answer as the schema documents the operation, or None."""
    where = f"{method.upper()} {path} answered {response.status_code}"
    responses = openapi["paths"][path][method]["responses"]
    if str(response.status_code) not in responses:
        return (
            f"{where}, which its schema does not document ({sorted(responses)}): {response.content[:300]!r}"
        )
    content = responses[str(response.status_code)].get("content")
    if response.status_code == 204 or not content:
        return None if not response.content else f"{where} with a body the schema does not document"
    media_type = response["Content-Type"].split(";")[0]
    if media_type not in content:
        return f"{where} as {media_type}, documented as {sorted(content)}"
    if media_type == "application/json":
        schema = to_json_schema(content[media_type]["schema"])
        try:
            jsonschema.validate(
                response.json(), {**schema, "components": to_json_schema(openapi["components"])}
            )
        except jsonschema.ValidationError as exc:
            return f"{where}: the body breaks its schema: {exc.message}"
    return None


def probe(openapi, client, method: str, path: str, target: str, expected: set[int], **request) -> list[str]:
    response = client.generic(method.upper(), target, **request)
    problems = [problem] if (problem := documented(openapi, method, path, response)) else []
    if response.status_code not in expected:
        problems.append(f"{method.upper()} {target}: {response.status_code}, expected {sorted(expected)}")
    if response.status_code >= 400:  # the envelope, whatever the status
        body = response.json()
        assert body.keys() == {"error"} and body["error"].keys() == {"code", "message", "details"}, body
    return problems


def test_every_operation_documents_the_shared_error_answers_with_the_envelope(openapi):
    envelope = {"$ref": "#/components/schemas/ErrorOut"}
    for method, path in operations(openapi):
        responses = openapi["paths"][path][method]["responses"]
        shared = SHARED | ({"413", "415"} if method in BODY_METHODS else set())
        assert shared <= set(responses), (method, path, sorted(responses))
        for status in (s for s in responses if s >= "400"):
            assert responses[status]["content"] == {"application/json": {"schema": envelope}}, (path, status)
            assert responses[status]["description"].startswith("- `"), (path, status)
        assert "`uri-too-long`" in responses["414"]["description"]
        assert "`bad-request`" in responses["400"]["description"]
        assert "Retry-After" in responses["503"]["headers"]
        assert "`database-unavailable`" in responses["503"]["description"]


def test_without_a_key_or_with_an_unknown_one_every_operation_answers_a_documented_401(openapi, ids):
    problems = []
    for method, path in operations(openapi):
        for client in (api_client(None), api_client("esk_unknown-key")):
            problems += probe(openapi, client, method, path, url(path, ids), {401})
    assert not problems, "\n".join(problems)


def test_nul_in_a_query_value_or_a_path_id_is_a_documented_400_everywhere(openapi, world, ids):
    problems = []
    for method, path in operations(openapi):
        problems += probe(openapi, world.client, method, path, url(path, ids) + "?tag=a%00b", {400})
        if "{" in path:
            nul = {name: "a\x00b" for name in ids}
            problems += probe(openapi, world.client, method, path, url(path, nul), {400})
    assert not problems, "\n".join(problems)


def test_another_tenant_missing_ids_and_a_page_past_the_last_are_documented_404s(openapi, world, ids):
    problems = []
    missing = {name: "missing-0" for name in ids} | {"job_id": "00000000-0000-0000-0000-000000000000"}
    for method, path in operations(openapi):
        if method in BODY_METHODS:  # their tenant comes from the body, after its fields are read
            body = json.dumps({"tenant_id": "rival"})
            request = {"data": body, "content_type": "application/json"}
            expected = {400, 404, 415}  # 415: an operation that reads forms only
            problems += probe(openapi, world.client, method, path, url(path, ids), expected, **request)
            if "{" in path:
                problems += probe(
                    openapi, world.client, method, path, url(path, missing), expected, **request
                )
            continue
        for other in ({"tenant_id": "rival"}, {"cluster_id": "elsewhere"}):
            target = f"{url(path, ids)}?{query(openapi, method, path, **other)}"
            problems += probe(openapi, world.client, method, path, target, {404})
        if "{" in path:
            target = f"{url(path, missing)}?{query(openapi, method, path)}"
            problems += probe(openapi, world.client, method, path, target, {404})
        if "page=999" in (paged := query(openapi, method, path, page="999")):  # a list past its last page
            problems += probe(openapi, world.client, method, path, f"{url(path, ids)}?{paged}", {404})
    assert not problems, "\n".join(problems)


def test_every_body_the_operations_cannot_read_is_a_documented_4xx(openapi, world, ids, settings):
    settings.EVALSITE_MAX_REQUEST_BYTES = 1024
    problems = []
    for method, path in operations(openapi):
        if method not in BODY_METHODS:
            continue
        target = url(path, ids)
        for body, content_type, expected in (
            ('{"x": "' + "y" * 2000 + '"}', "application/json", {413}),
            ("plain words", "text/plain", {415}),
            ("{not json", "application/json", {400, 415}),  # invalid-json, or a form-only operation's 415
            # A cancel reads no field (its job has ended: 409), a target's test needs none.
            ("[null, null]", "application/json", {400, 409, 415}),
            # ... and 503 where the operation needs the chat endpoint, which this test server lacks; 202 where it
            # needs nothing more and queues a job (a schedule run now).
            ("{}", "application/json", {200, 202, 400, 404, 409, 415, 503}),
            ("a=1&b=%00", "application/x-www-form-urlencoded", {400, 415}),
        ):
            request = {"data": body, "content_type": content_type}
            problems += probe(openapi, world.client, method, path, target, expected, **request)
    assert not problems, "\n".join(problems)


def test_every_read_answers_its_documented_200(openapi, world, ids):
    problems = []
    for method, path in operations(openapi):
        if method != "get":
            continue
        target = f"{url(path, ids)}?{query(openapi, method, path)}"
        # the next item of a pool is a person's: asked through a rater's own key
        client = person_client(world, "rita") if path.endswith("/next") else world.client
        problems += probe(openapi, client, method, path, target, {200})
    assert not problems, "\n".join(problems)
