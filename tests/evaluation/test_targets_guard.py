"""A tenant's targets cannot reach the server's network or take it down (issue: safe to share): URLs refused
with the rule named, secrets bound to the server they were given for, every option bounded, and a tenant's
regular expression run in linear time. Over REST, with the loopback allowance of the test settings turned off
where the refusal is tested; the internal service is a real server on 127.0.0.1 that must see no request."""

from __future__ import annotations

import json
import threading

import pytest
from django.test import override_settings

from evalsite.audit.models import AuditEvent
from evaluation.models import QuestionResult, Target
from evaluation.targets.callers import id_transform
from evaluation.targets.definitions import LIMITS
from tests.llm_server import ScriptedLLMServer, llm_server_fixture  # noqa: F401
from tests.support import handbook_entries, refused

TARGETS = "/lmkit/v1/targets"
STRICT = override_settings(EVALSITE_OUTBOUND_ALLOW=[])


def es_target(url: str, name: str = "es", **options) -> dict:
    return {
        "name": name,
        "kind": "elasticsearch",
        "base_url": url,
        "options": {"index": "docs", **options},
    }


def http_target(url: str, name: str = "api", **fields) -> dict:
    return {
        "name": name,
        "kind": "http",
        "base_url": url,
        "options": {"request_template": {"q": "{{query}}"}, "response_mapping": {"ids": "hits[].id"}},
        **fields,
    }


# --- 1. where a call may go -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "rule"),
    [
        ("127.0.0.1", "loopback"),
        ("localhost", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("2130706433", "loopback"),
        ("0x7f.1", "loopback"),
        ("[::1]", "loopback"),
        ("[::ffff:127.0.0.1]", "loopback"),
        ("169.254.169.254", "link-local"),
        ("10.0.0.5", "private"),
        ("192.168.1.20", "private"),
    ],
)
def test_a_url_to_the_servers_network_is_refused_naming_the_field_and_the_rule(world, llm_server, host, rule):
    port = llm_server.url.rsplit(":", 1)[1]
    with STRICT:
        response = world.client.post(TARGETS, es_target(f"http://{host}:{port}"), format="json")
    error = refused(response, 400, "url-not-allowed")
    assert error["details"] == {"field": "base_url", "rule": rule}
    assert error["message"].startswith("base_url: ") and "EVALSITE_OUTBOUND_ALLOW" in error["message"]
    assert not Target.objects.exists()
    assert llm_server.count() == 0


def test_a_target_stored_while_allowed_is_refused_when_called_after_the_allowance_is_gone(world, llm_server):
    """What decides is the policy when the call is made: nothing is sent, and test connection says why."""
    handbook_entries(world.collection)
    created = world.client.post(TARGETS, es_target(llm_server.url), format="json")
    assert created.status_code == 201, created.json()
    with STRICT:
        response = world.client.post(f"{TARGETS}/es/test", {"query": "refund"}, format="json")
        error = refused(response, 400, "url-not-allowed")
        assert error["details"] == {"field": "base_url", "rule": "loopback"}

        handbook = world.client.post(
            "/lmkit/v1/search/evaluate",
            {"collection_id": "handbook", "configs": [{"label": "es", "target": "es"}]},
            format="json",
        )
    assert llm_server.count() == 0
    # An evaluation has no request to refuse: each question keeps the refusal as its error.
    assert handbook.status_code == 200, handbook.content
    (run,) = handbook.json()["runs"]
    assert run["status"] == "failed"
    errors = {r.error for r in QuestionResult.objects.filter(run__label="es")}
    assert len(errors) == 1 and "loopback address" in errors.pop()


def test_a_user_and_password_in_the_url_is_refused(world):
    error = refused(
        world.client.post(TARGETS, es_target("https://admin:hunter2@search.example.com"), format="json"),
        400,
        "validation-error",
    )
    assert error["details"] == {"field": "base_url", "rule": "userinfo"}
    assert "hunter2" not in error["message"] and "secret header" in error["message"]


@pytest.mark.parametrize(
    "index", ["../json?x=", "docs/_doc/1", "docs#frag", "%2e%2e", "..", "Docs Index", "a" * 300]
)
def test_an_elasticsearch_index_that_would_leave_its_path_is_refused(world, index):
    error = refused(
        world.client.post(TARGETS, es_target("https://es.example.com", index=index), format="json"),
        400,
        "validation-error",
    )
    assert error["details"]["field"] == "options.index"
    assert not Target.objects.exists()


def test_an_index_list_with_patterns_and_a_remote_cluster_is_sent_in_the_path_as_written(world, llm_server):
    created = world.client.post(
        TARGETS, es_target(llm_server.url, index="docs,logs-*,remote:docs"), format="json"
    )
    assert created.status_code == 201, created.json()
    world.client.post(f"{TARGETS}/es/test", {"query": "refund"}, format="json")
    assert [r.path for r in llm_server.requests] == ["/docs,logs-*,remote:docs/_search"]


def test_test_connection_shows_no_byte_of_an_answer_that_is_not_json(world, llm_server):
    created = world.client.post(TARGETS, http_target(llm_server.url + "/search"), format="json")
    assert created.status_code == 201
    llm_server.fail_next("malformed", "malformed", "malformed")  # every attempt
    body = world.client.post(f"{TARGETS}/api/test", {"query": "refund"}, format="json").json()
    assert body["ok"] is False and body["raw"] == ""
    assert "not JSON (" in body["error"] and "bytes)" in body["error"]
    sent = {r.fault for r in llm_server.requests}
    assert sent == {"malformed"}


# --- 2. secrets stay with the server they were given for -------------------------------------------------------


def test_re_pointing_a_target_needs_its_secrets_again_and_never_sends_the_old_ones(world, llm_server):
    created = world.client.post(
        TARGETS,
        http_target(llm_server.url + "/search", secret_headers={"Authorization": "Bearer old-secret-11"}),
        format="json",
    )
    assert created.status_code == 201
    with ScriptedLLMServer().start() as other:
        moved = world.client.patch(f"{TARGETS}/api", {"base_url": other.url + "/search"}, format="json")
        error = refused(moved, 400, "target-secrets-origin")
        assert error["details"] == {"field": "secret_headers", "names": ["Authorization"]}
        assert Target.objects.get(name="api").base_url == llm_server.url + "/search"

        # The same server on another path keeps them.
        same = world.client.patch(f"{TARGETS}/api", {"base_url": llm_server.url + "/search/"}, format="json")
        assert same.status_code == 200, same.json()
        assert same.json()["secret_headers"] == ["Authorization"]

        # Sent again (or dropped with null) in the same request: moved, and the new value goes to the new host.
        moved = world.client.patch(
            f"{TARGETS}/api",
            {"base_url": other.url + "/search", "secret_headers": {"Authorization": "Bearer new-secret-22"}},
            format="json",
        )
        assert moved.status_code == 200, moved.json()
        world.client.post(f"{TARGETS}/api/test", {"query": "refund"}, format="json")
        assert [r.headers.get("Authorization") for r in other.requests] == ["Bearer new-secret-22"]
        assert all("old-secret-11" not in json.dumps(r.headers) for r in other.requests)

        dropped = world.client.patch(
            f"{TARGETS}/api",
            {"base_url": llm_server.url + "/search", "secret_headers": {"Authorization": None}},
            format="json",
        )
        assert dropped.status_code == 200 and dropped.json()["secret_headers"] == []
    events = AuditEvent.objects.filter(object_type="target", action="update").order_by("pk")
    assert [sorted(e.changes) for e in events] == [
        ["base_url"],
        ["base_url", "secret_headers"],
        ["base_url", "secret_headers"],
    ]


# --- 3. bounded: every option, header and expression ------------------------------------------------------------


def _nested(depth: int) -> dict:
    template: dict = {"q": "{{query}}"}
    for _ in range(depth):
        template = {"a": template}
    return template


@pytest.mark.parametrize(
    ("fields", "field", "limit"),
    [
        ({"options": {"request_template": _nested(60)}}, "options.request_template", LIMITS.depth),
        ({"options": {"request_template": {"q": "{{query}}", "pad": "x" * (5 << 20)}}}, "options", None),
        ({"headers": {f"X-H{i}": "v" for i in range(10_000)}}, "headers", LIMITS.headers),
        ({"headers": {"X-Bad\r\nInjected": "v"}}, "headers", None),
        ({"headers": {"X-Ok": "line\r\nInjected: yes"}}, "headers.X-Ok", None),
        (
            {"secret_headers": {"Authorization": "Bearer s\u00e9cr\u00eat-\u2603"}},
            "secret_headers.Authorization",
            None,
        ),
        ({"secret_headers": {"X-Key": "k" * 4001}}, "secret_headers.X-Key", None),
    ],
)
def test_oversized_or_malformed_target_fields_are_refused_naming_the_field(world, fields, field, limit):
    body = http_target("https://api.example.com/search")
    options = fields.pop("options", None)
    if options is not None:
        body["options"] = {**body["options"], **options}
    body.update(fields)
    response = world.client.post(TARGETS, body, format="json")
    assert response.status_code == 400, response.content[:300]
    error = response.json()["error"]
    assert error["message"].startswith(f"{field}: "), error
    if limit is not None:
        assert error["details"]["limit"] == limit and str(limit) in error["message"]
    assert not Target.objects.exists()


@pytest.mark.parametrize(
    ("mapping", "code"),
    [
        ({"ids": "[" * 5000 + "a" + "]" * 5000}, "validation-error"),
        ({"ids": "(" * 60 + "a" + ")" * 60}, "validation-error"),
        ({"ids": "a." * 600 + "b"}, "validation-error"),
    ],
)
def test_a_jmespath_expression_too_long_or_nested_too_deep_is_a_400(world, mapping, code):
    body = http_target("https://api.example.com/search")
    body["options"]["response_mapping"] = mapping
    error = refused(world.client.post(TARGETS, body, format="json"), 400, code)
    assert error["details"]["field"] == "options.response_mapping.ids" and "limit" in error["details"]


def test_a_backtracking_pattern_runs_in_linear_time_and_unsupported_syntax_is_named(world):
    """^(a+)+$ took Python's re 6.4 s at 27 characters, doubling with each; RE2 answers at once."""
    transform = id_transform({"regex": "^(a+)+$"})
    done = threading.Event()
    result: list[str] = []

    def run() -> None:
        result.append(transform("a" * 5000 + "!"))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(10), "the pattern backtracked"
    assert result == ["a" * 5000 + "!"]  # no match: the id as it came
    assert id_transform({"regex": "^(.+)#chunk-[0-9]+$"})("doc-7#chunk-3") == "doc-7"

    body = es_target("https://es.example.com", id_transform={"regex": r"^(a)\1$"})
    error = refused(world.client.post(TARGETS, body, format="json"), 400, "validation-error")
    assert error["details"]["field"] == "options.id_transform.regex" and "RE2" in error["message"]


def test_a_patch_is_bounded_as_a_create_is(world):
    created = world.client.post(TARGETS, http_target("https://api.example.com/search"), format="json")
    assert created.status_code == 201
    response = world.client.patch(
        f"{TARGETS}/api",
        {"options": {**created.json()["options"], "request_template": _nested(60)}},
        format="json",
    )
    error = refused(response, 400, "validation-error")
    assert error["details"]["field"] == "options.request_template"
    assert Target.objects.get(name="api").options["request_template"] == {"q": "{{query}}"}


def test_an_answer_past_the_size_limit_is_the_calls_error_not_a_worker_holding_it(
    world, llm_server, monkeypatch
):
    import dataclasses

    from evaluation.targets import callers as targets

    monkeypatch.setattr(targets, "LIMITS", dataclasses.replace(LIMITS, answer_bytes=2000))
    llm_server.documents = {f"doc-{i}": "refund " + "word " * 50 for i in range(40)}
    created = world.client.post(
        TARGETS,
        http_target(
            llm_server.url + "/search",
            options={
                "request_template": {"query": "{{query}}", "limit": 40},
                "response_mapping": {"ids": "data.hits[].id"},
            },
        ),
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = world.client.post(f"{TARGETS}/api/test", {"query": "refund"}, format="json").json()
    assert (
        body["ok"] is False
        and body["error"] == "answer larger than 2000 bytes (the limit of a target's answer)"
    )
    assert len(llm_server.requests) == 1  # not retried: the same answer would come again


def test_a_target_stored_before_the_header_limits_is_a_400_when_called_not_a_500(world, llm_server):
    from evaluation.targets.services import secret_box

    created = world.client.post(TARGETS, http_target(llm_server.url + "/search"), format="json")
    assert created.status_code == 201
    # As the drill left it: a secret value no request can carry, stored before the check existed.
    Target.objects.filter(name="api").update(
        secret_headers_sealed=secret_box().seal({"Authorization": "Bearer s\u00e9cret"}),
        secret_header_names=["Authorization"],
    )
    error = refused(
        world.client.post(f"{TARGETS}/api/test", {"query": "refund"}, format="json"), 400, "validation-error"
    )
    assert error["details"]["field"] == "secret_headers.Authorization"
    assert "s\u00e9cret" not in error["message"]
    assert llm_server.count() == 0


@pytest.mark.parametrize(("echo", "shown"), [(0, 0), (12, 12)])
def test_test_connection_shows_as_much_of_a_json_answer_as_the_operator_allows(
    world, llm_server, echo, shown
):
    created = world.client.post(TARGETS, es_target(llm_server.url), format="json")
    assert created.status_code == 201, created.json()
    with override_settings(EVALSITE_TARGET_TEST_ECHO_CHARS=echo):
        body = world.client.post(f"{TARGETS}/es/test", {"query": "refund"}, format="json").json()
    assert llm_server.count() == 1 and len(body["raw"]) == shown, body
    assert body["error"] == "" or "found" in body["error"]  # the mapping's own report, never the body


def test_an_allowance_of_another_port_refuses_the_target(world, llm_server):
    port = int(llm_server.url.rsplit(":", 1)[1])
    with override_settings(EVALSITE_OUTBOUND_ALLOW=[f"127.0.0.1:{port + 1}"]):
        error = refused(
            world.client.post(TARGETS, es_target(llm_server.url), format="json"), 400, "url-not-allowed"
        )
    assert (
        error["details"] == {"field": "base_url", "rule": "loopback"}
        and f"on port {port}" in error["message"]
    )
    with override_settings(EVALSITE_OUTBOUND_ALLOW=[f"127.0.0.1:{port}"]):
        assert world.client.post(TARGETS, es_target(llm_server.url), format="json").status_code == 201
    assert llm_server.count() == 0
