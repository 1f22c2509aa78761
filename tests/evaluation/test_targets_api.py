"""Targets over REST (/lmkit/v1/targets) and in /search/evaluate: secrets write-only, tenancy, test connection,
failures, unjudged ids, latency; an lmkit target pointed at a second evalsite process scores as the built-in
FullText does."""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET

import pytest

from evalsite.audit.models import AuditEvent
from evaluation.models import EvaluationRun, QuestionResult, Target
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.support import HANDBOOK_QUESTIONS, handbook_entries, refused

TARGETS = "/lmkit/v1/targets"
EVALUATE = "/lmkit/v1/search/evaluate"
SECRET = "sk-live-never-shown-0042"
TEXTS = {
    "refunds": "Customers get a full refund within 30 days of purchase. Refunds go to the original card.",
    "shipping": "Orders ship within two business days. Express shipping arrives the next day.",
    "warranty": "Every device carries a two-year warranty covering manufacturing defects.",
}


def generic_target(url: str, name: str = "prod-search", **extra) -> dict:
    return {
        "name": name,
        "kind": "http",
        "base_url": url + "/search",
        "headers": {"X-Team": "search"},
        "secret_headers": {"Authorization": f"Bearer {SECRET}"},
        "timeout_s": 2,
        "concurrency": 4,
        "options": {
            "request_template": {"query": "{{query}}", "limit": "{{top_k}}"},
            "response_mapping": {"ids": "data.hits[].id", "scores": "data.hits[].relevance"},
            **extra,
        },
    }


@pytest.fixture
def golden(world):
    return handbook_entries(world.collection)


def test_a_target_is_created_shown_changed_and_deleted_and_its_secret_never_comes_back(
    world, llm_server, caplog
):
    caplog.set_level(logging.DEBUG)
    created = world.client.post(TARGETS, generic_target(llm_server.url), format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["secret_headers"] == ["Authorization"] and body["headers"] == {"X-Team": "search"}
    stored = Target.objects.get(name="prod-search")
    assert SECRET not in stored.secret_headers_sealed and stored.secret_headers_sealed

    changed = world.client.patch(
        f"{TARGETS}/prod-search",
        {"timeout_s": 5, "secret_headers": {"X-Api-Key": "other-secret-77", "Authorization": None}},
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    assert changed.json()["timeout_s"] == 5 and changed.json()["secret_headers"] == ["X-Api-Key"]
    assert changed.json()["options"]["request_template"] == {"query": "{{query}}", "limit": "{{top_k}}"}

    pages = [
        world.client.get(TARGETS).content,
        world.client.get(f"{TARGETS}/prod-search").content,
        created.content,
        changed.content,
    ]
    audit = [str(e.changes) for e in AuditEvent.objects.filter(object_type="target")]
    assert len(audit) == 2
    for text in [*(p.decode() for p in pages), *audit, caplog.text]:
        assert SECRET not in text and "other-secret-77" not in text

    assert world.client.delete(f"{TARGETS}/prod-search").status_code == 204
    assert not Target.objects.exists()
    refused(world.client.get(f"{TARGETS}/prod-search"), 404, "not-found")


def test_bad_targets_are_refused_naming_the_field_and_nothing_is_written(world, llm_server):
    cases = [
        ({**generic_target(llm_server.url), "kind": "ftp"}, "kind"),
        ({**generic_target(llm_server.url), "base_url": "ftp://x"}, "base_url"),
        ({**generic_target(llm_server.url), "base_url": "http://"}, "base_url"),
        ({**generic_target(llm_server.url), "colour": "red"}, "colour"),
        ({**generic_target(llm_server.url), "concurrency": 0}, "concurrency"),
        (generic_target(llm_server.url, response_mapping={"ids": "data.["}), "options.response_mapping.ids"),
        (
            {**generic_target(llm_server.url), "kind": "python", "options": {"callable": "os.system"}},
            "options.callable",
        ),
    ]
    for payload, field in cases:
        response = world.client.post(TARGETS, payload, format="json")
        assert response.status_code == 400, (field, response.content)
        error = response.json()["error"]
        assert field in error["message"] or field in str(error["details"]), (field, error)
    assert not Target.objects.exists()
    assert world.client.post(TARGETS, generic_target(llm_server.url), format="json").status_code == 201
    refused(world.client.post(TARGETS, generic_target(llm_server.url), format="json"), 409, "target-exists")


def test_another_tenants_target_is_invisible(world, llm_server, golden):
    assert world.other_client.post(TARGETS, generic_target(llm_server.url), format="json").status_code == 201
    refused(world.client.get(f"{TARGETS}/prod-search"), 404, "not-found")
    refused(world.client.patch(f"{TARGETS}/prod-search", {"timeout_s": 1}, format="json"), 404, "not-found")
    refused(world.client.delete(f"{TARGETS}/prod-search"), 404, "not-found")
    refused(world.client.post(f"{TARGETS}/prod-search/test", {}, format="json"), 404, "not-found")
    assert world.client.get(TARGETS).json()["results"] == []
    error = refused(
        world.client.post(
            EVALUATE, {"collection_id": "handbook", "configs": [{"target": "prod-search"}]}, format="json"
        ),
        400,
        "unknown-target",
    )
    assert error["details"]["field"] == "configs[0].target"
    assert Target.objects.get().tenant == world.other_tenant


def test_test_connection_shows_mapped_ids_beside_the_raw_answer_or_the_exact_mapping_error(world, llm_server):
    llm_server.documents = dict(TEXTS)
    world.client.post(TARGETS, generic_target(llm_server.url), format="json")
    result = world.client.post(
        f"{TARGETS}/prod-search/test", {"query": "express shipping"}, format="json"
    ).json()
    assert result["ok"] is True and result["error"] == ""
    assert result["results"] == [{"rank": 1, "document_id": "shipping", "score": 2.0}]
    assert '"relevance": 2.0' in result["raw"]
    assert llm_server.requests[-1].headers["Authorization"] == f"Bearer {SECRET}"  # sent, never shown
    assert SECRET not in str(result)

    world.client.patch(
        f"{TARGETS}/prod-search",
        {"options": {**generic_target("")["options"], "response_mapping": {"ids": "hits[].id"}}},
        format="json",
    )
    result = world.client.post(f"{TARGETS}/prod-search/test", {"query": "refund"}, format="json").json()
    assert result["ok"] is False and result["error"] == "ids: `hits[].id` found null, not a list"
    assert '"data"' in result["raw"]
    llm_server.fail_next(500, 500, 500)
    result = world.client.post(f"{TARGETS}/prod-search/test", {"query": "refund"}, format="json").json()
    assert result["ok"] is False and result["error"] == "HTTP 500 after 3 attempts"


def test_a_target_evaluates_beside_a_builtin_configuration_with_latency_and_its_name_and_kind(
    world, llm_server, golden
):
    llm_server.documents = dict(TEXTS)
    world.client.post(TARGETS, generic_target(llm_server.url), format="json")
    response = world.client.post(
        EVALUATE,
        {
            "collection_id": "handbook",
            "ks": [1, 3],
            "configs": [
                {"label": "builtin", "search_type": "FullText"},
                {"label": "prod", "target": "prod-search"},
            ],
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    builtin, prod = response.json()["runs"]
    assert prod["config"] == {
        "label": "prod", "target": "prod-search", "target_kind": "http", "top_k": None, "max_error_rate": 0.05,
    }  # fmt: skip
    assert prod["status"] == "complete" and builtin["status"] == "complete"
    # The scripted server ranks by shared words: what trec_eval's measures of its rankings say, computed here.
    expected_rankings = {
        key: [d for d, _ in llm_server.rank(q, 3)] for key, (q, _) in HANDBOOK_QUESTIONS.items()
    }
    run = EvaluationRun.objects.get(pk=prod["run_id"])
    results = {r.entry_key: r for r in QuestionResult.objects.filter(run=run)}
    for key, ranking in expected_rankings.items():
        assert [d for d, _ in results[key].ranked] == ranking
        assert results[key].latency_ms > 0 and results[key].error == ""
        assert results[key].unjudged == {"unjudged@1": 0, "unjudged@3": 0}
    first_relevant = [ranking.index(HANDBOOK_QUESTIONS[k][1]) + 1 for k, ranking in expected_rankings.items()]
    assert prod["metrics"]["mrr"] == pytest.approx(sum(1 / r for r in first_relevant) / 3, abs=1e-12)
    for summary in (builtin, prod):
        latency = summary["latency_ms"]
        assert (
            latency["count"] == 3 and 0 < latency["p50"] <= latency["p95"] <= latency["p99"] <= latency["max"]
        )
    assert run.summary["failed_questions"] == 0 and SECRET not in str(run.config) + str(response.content)
    assert {r.headers["Authorization"] for r in llm_server.requests} == {f"Bearer {SECRET}"}


def test_failed_questions_are_left_out_of_the_means_and_too_many_fail_the_run(world, llm_server, golden):
    llm_server.documents = dict(TEXTS)
    world.client.post(TARGETS, {**generic_target(llm_server.url), "concurrency": 1}, format="json")

    def evaluate(rate):
        llm_server.reset()
        llm_server.fail_next(500, 500, 500)  # the first question fails all its attempts
        config = {"target": "prod-search", **({"max_error_rate": rate} if rate is not None else {})}
        response = world.client.post(
            EVALUATE, {"collection_id": "handbook", "ks": [3], "configs": [config]}, format="json"
        )
        assert response.status_code == 200, response.json()
        return response.json()["runs"][0]

    partial = evaluate(0.5)
    assert partial["status"] == "partial"
    assert any(
        "1 of 3 questions failed" in w and "HTTP 500 after 3 attempts" in w for w in partial["warnings"]
    )
    results = QuestionResult.objects.filter(run_id=partial["run_id"]).order_by("position")
    assert (
        results[0].error == "HTTP 500 after 3 attempts" and results[0].metrics == {} and not results[0].ranked
    )
    assert partial["metrics"]["recall@3"] == 1.0  # the two answered questions; the failed one is no zero

    failed = evaluate(None)  # default max_error_rate 5%
    assert failed["status"] == "failed" and failed["metrics"] == {}
    assert any(w.startswith("Run failed: 1 of 3 questions failed (33.3%") for w in failed["warnings"])


def test_ids_the_collection_lacks_are_counted_as_unjudged_and_an_id_transform_maps_them(
    world, llm_server, golden
):
    llm_server.documents = dict(TEXTS)
    llm_server.id_suffix = "#p1"
    world.client.post(TARGETS, generic_target(llm_server.url), format="json")
    world.client.post(
        TARGETS,
        generic_target(llm_server.url, "mapped", id_transform={"regex": r"^(.+)#p\d+$"}),
        format="json",
    )
    response = world.client.post(
        EVALUATE,
        {
            "collection_id": "handbook",
            "ks": [1, 3],
            "configs": [{"target": "prod-search"}, {"target": "mapped"}],
        },
        format="json",
    )
    raw, mapped = response.json()["runs"]
    returned = {k: len(llm_server.rank(q, 3)) for k, (q, _) in HANDBOOK_QUESTIONS.items()}
    run = EvaluationRun.objects.get(pk=raw["run_id"])
    assert run.summary["unjudged"] == {"unjudged@1": 3, "unjudged@3": sum(returned.values())}
    assert raw["metrics"]["recall@3"] == 0.0
    assert any("are not documents of the collection" in w for w in raw["warnings"])
    assert mapped["metrics"]["recall@3"] == 1.0
    assert EvaluationRun.objects.get(pk=mapped["run_id"]).summary["unjudged"] == {
        "unjudged@1": 0,
        "unjudged@3": 0,
    }


def test_rotating_the_key_re_encrypts_every_secret_and_a_missing_key_is_a_clear_error(
    world, llm_server, settings
):
    import io

    from cryptography.fernet import Fernet
    from django.core.management import call_command

    from evaluation.targets.services import target_spec

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.EVALSITE_TARGET_KEYS = [old]
    world.client.post(TARGETS, generic_target(llm_server.url), format="json")
    sealed = Target.objects.get().secret_headers_sealed
    settings.EVALSITE_TARGET_KEYS = [new, old]
    call_command("rotate_target_secrets")
    target = Target.objects.get()
    assert target.secret_headers_sealed != sealed
    settings.EVALSITE_TARGET_KEYS = [new]  # the old key dropped: the rotated value still opens
    assert target_spec(target).secret_headers == {"Authorization": f"Bearer {SECRET}"}
    settings.EVALSITE_TARGET_KEYS = [Fernet.generate_key().decode()]
    stderr = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("rotate_target_secrets", stderr=stderr)
    assert exited.value.code == 2
    assert stderr.getvalue().startswith("error [target-secrets-unreadable] target 'prod-search'")
    assert Target.objects.get().secret_headers_sealed == target.secret_headers_sealed  # nothing changed
    refused(
        world.client.post(f"{TARGETS}/prod-search/test", {}, format="json"), 409, "target-secrets-unreadable"
    )


def test_the_cli_gate_evaluates_a_target_and_a_failed_target_run_fails_the_gate(world, llm_server, golden):
    import json
    from io import StringIO

    from django.core.management import call_command

    def gate(*args: str) -> tuple[int, str]:
        out = StringIO()
        code = 0
        try:
            call_command(
                "evaluate", "--cluster", "acme", "--tenant", "search", "--collection", "handbook", *args,
                stdout=out, stderr=StringIO(),
            )  # fmt: skip
        except SystemExit as exc:
            code = int(exc.code or 0)
        return code, out.getvalue()

    llm_server.documents = dict(TEXTS)
    world.client.post(TARGETS, generic_target(llm_server.url), format="json")
    code, out = gate(
        "--config", "FullText", "--target", "prod-search", "--metric", "mrr", "--fail-under", "0.5"
    )
    assert code == 0, out
    lines = out.splitlines()
    assert (
        lines[1].startswith("FullText")
        and lines[2].startswith("target:prod-search")
        and lines[2].endswith("PASS")
    )
    code, out = gate("--target", "prod-search", "--format", "json")
    document = json.loads(out)
    assert code == 0 and document["runs"][0]["config"]["target_kind"] == "http" and document["passed"] is True
    llm_server.fail_next(*([500] * 9))  # every question's three attempts
    code, out = gate("--target", "prod-search")
    assert (
        code == 1
        and "gate: every run complete for every configuration: FAIL (target:prod-search: run failed)" in out
    )
    llm_server.fail_next(
        *([500] * 9)
    )  # without a bar, the markdown and JUnit reports say the gate failed too
    code, out = gate("--target", "prod-search", "--format", "markdown")
    assert code == 1 and out.splitlines()[0] == "### evalsite: every run complete: FAIL"
    llm_server.fail_next(*([500] * 9))
    code, out = gate("--target", "prod-search", "--format", "junit")
    failure = ET.fromstring(out).find("testsuite/testcase[@name='gate: every run complete']/failure")
    assert code == 1 and failure.get("message").startswith("the run failed")
    code, out = gate("--target", "nope")
    assert code == 2


def test_the_models_kinds_are_the_callers_kinds():
    from evaluation.models import TargetKind
    from evaluation.targets.kinds import KINDS

    assert list(TargetKind.values) == list(KINDS)


def rag_target(url: str, name: str = "rag-prod") -> dict:
    return {
        "name": name,
        "kind": "rag-http",
        "base_url": url + "/rag",
        "secret_headers": {"Authorization": f"Bearer {SECRET}"},
        "options": {
            "request_template": {"question": "{{query}}", "k": "{{top_k}}"},
            "response_mapping": {
                "answer": "output.text",
                "refused": "output.declined",
                "passage_ids": "sources[].doc",
                "passage_texts": "sources[].content",
            },
        },
    }


def test_an_answering_target_is_judged_as_a_builtin_answer_is(
    world, llm_server, golden, django_capture_on_commit_callbacks
):
    llm_server.documents = dict(TEXTS)
    created = world.client.post(TARGETS, {**rag_target(llm_server.url), "concurrency": 1}, format="json")
    assert created.status_code == 201, created.json()
    llm_server.fail_next(500, 500, 500)  # the first question's call fails every attempt (one call at a time)
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(
            "/lmkit/v1/search/evaluate/answers",
            {
                "collection_id": "handbook",
                "unanswerable_questions": ["Who painted Sistine frescoes?"],
                "configs": [
                    {"label": "built-in", "search_type": "FullText"},
                    {"label": "rag", "target": "rag-prod", "top_k": 2, "max_error_rate": 0.5},
                ],
            },
            format="json",
        )
    assert response.status_code == 202, response.json()
    job = world.client.get(f"/lmkit/v1/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "Completed", job
    builtin, rag = job["result"]["runs"]
    assert rag["config"]["target_kind"] == "rag-http" and rag["config"]["model"] == "target:rag-prod"
    assert rag["status"] == "partial" and builtin["status"] == "complete"
    assert rag["latency_ms"]["count"] == 3  # the three calls that answered
    run = EvaluationRun.objects.get(pk=rag["run_id"])
    results = list(run.results.order_by("position"))
    assert results[0].diagnosis == "error" and results[0].error.startswith("target-failed: HTTP 500")
    answered = results[1]
    question = answered.question
    best = llm_server.rank(question, 2)
    assert [p["document_id"] for p in answered.context] == [d for d, _ in best]
    assert answered.answer.endswith("[1]") and answered.citations[0]["document_id"] == best[0][0]
    assert answered.judgements["faithfulness"]["method"] == "heuristic"
    assert answered.latency_ms > 0 and answered.refused is False
    unanswerable = results[-1]
    assert unanswerable.answerable is False and unanswerable.refused is True  # the target declined
    assert rag["refusal"]["refusal_recall"] == 1.0
    assert {r.headers["Authorization"] for r in llm_server.requests if r.path == "/rag"} == {
        f"Bearer {SECRET}"
    }
    assert SECRET not in str(job)


def test_a_target_of_the_wrong_kind_is_refused_for_each_evaluation(world, llm_server, golden):
    world.client.post(TARGETS, rag_target(llm_server.url), format="json")
    world.client.post(TARGETS, generic_target(llm_server.url), format="json")
    error = refused(
        world.client.post(
            EVALUATE, {"collection_id": "handbook", "configs": [{"target": "rag-prod"}]}, format="json"
        ),
        400,
        "target-kind-mismatch",
    )
    assert error["details"]["field"] == "configs[0].target" and "answers questions" in error["message"]
    error = refused(
        world.client.post(
            "/lmkit/v1/search/evaluate/answers",
            {"collection_id": "handbook", "configs": [{"target": "prod-search"}]},
            format="json",
        ),
        400,
        "target-kind-mismatch",
    )
    assert "returns rankings" in error["message"]
    error = refused(
        world.client.post(
            "/lmkit/v1/search/evaluate/answers",
            {"collection_id": "handbook", "configs": [{"target": "rag-prod", "groundedness": "High"}]},
            format="json",
        ),
        400,
        "validation-error",
    )
    assert error["details"]["field"] == "configs[0].groundedness"


def test_test_connection_of_an_answering_target_shows_its_mapped_answer(world, llm_server):
    llm_server.documents = dict(TEXTS)
    world.client.post(TARGETS, rag_target(llm_server.url), format="json")
    result = world.client.post(
        f"{TARGETS}/rag-prod/test", {"query": "express shipping", "top_k": 2}, format="json"
    )
    body = result.json()
    assert result.status_code == 200 and body["ok"] is True and body["results"] == []
    assert body["answer"]["passage_ids"] == ["shipping"] and body["answer"]["text"].endswith("[1]")
    assert body["answer"]["refused"] is False and '"sources"' in body["raw"]


def test_an_evaluation_asking_a_target_many_questions_runs_as_a_job(
    world, llm_server, golden, settings, django_capture_on_commit_callbacks
):
    llm_server.documents = dict(TEXTS)
    world.client.post(TARGETS, generic_target(llm_server.url), format="json")
    settings.EVALSITE_TARGET_SYNC_QUESTIONS = 2  # three questions to ask the target
    body = {"collection_id": "handbook", "configs": [{"label": "builtin"}, {"target": "prod-search"}]}
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(EVALUATE, body, format="json")
    assert response.status_code == 202, response.json()
    job = world.client.get(f"/lmkit/v1/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "Completed", job
    assert [r["config"].get("target_kind") for r in job["result"]["runs"]] == [None, "http"]
    settings.EVALSITE_TARGET_SYNC_QUESTIONS = 3
    assert world.client.post(EVALUATE, body, format="json").status_code == 200


def test_an_answering_targets_passages_without_texts_are_read_from_the_collection(
    world, llm_server, golden, django_capture_on_commit_callbacks
):
    llm_server.documents = dict(TEXTS)
    target = rag_target(llm_server.url)
    del target["options"]["response_mapping"]["passage_texts"]
    world.client.post(TARGETS, target, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(
            "/lmkit/v1/search/evaluate/answers",
            {"collection_id": "handbook", "configs": [{"target": "rag-prod", "top_k": 1}]},
            format="json",
        )
    job = world.client.get(f"/lmkit/v1/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "Completed", job
    run = EvaluationRun.objects.get(pk=job["result"]["runs"][0]["run_id"])
    stored = {
        d.external_id: d.pages.order_by("number").first().text for d in world.collection.documents.all()
    }
    for result in run.results.all():
        (passage,) = result.context
        assert passage["text"] == stored[passage["document_id"]] != ""
        assert result.judgements["faithfulness"]["value"] is not None


def test_a_python_target_answers_in_an_answer_evaluation(
    world, golden, settings, django_capture_on_commit_callbacks
):
    path = "tests.evaluation.test_targets.answering"
    settings.EVALSITE_PYTHON_TARGETS = [path]
    created = world.client.post(
        TARGETS, {"name": "py", "kind": "python", "options": {"callable": path}}, format="json"
    )
    assert created.status_code == 201, created.json()
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(
            "/lmkit/v1/search/evaluate/answers",
            {"collection_id": "handbook", "configs": [{"target": "py"}]},
            format="json",
        )
    job = world.client.get(f"/lmkit/v1/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "Completed", job
    (run,) = job["result"]["runs"]
    assert (
        run["config"]["target_kind"] == "python"
        and run["status"] == "complete"
        and run["latency_ms"]["count"] == 3
    )
