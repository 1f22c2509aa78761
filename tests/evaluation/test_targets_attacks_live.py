"""The drill's attacks on targets, against the production server as users run it (`manage.py serve`, DEBUG off,
without the tests' loopback allowance): an internal service on 127.0.0.1 that the server could reach must see
no request, and every attack is a 4xx naming its field, never a 500."""

from __future__ import annotations

import httpx
import pytest

from tests.llm_server import ScriptedLLMServer
from tests.worker_support import Serve

pytestmark = pytest.mark.django_db(transaction=True)


def _deep(depth: int) -> dict:
    template: dict = {"q": "{{query}}"}
    for _ in range(depth):
        template = {"a": template}
    return template


def test_no_tenant_reaches_the_servers_network_or_gets_a_server_error(world, manage_env, tmp_path):
    env = {**manage_env, "EVALSITE_OUTBOUND_ALLOW": ""}
    with ScriptedLLMServer().start() as internal:
        port = internal.url.rsplit(":", 1)[1]
        serve = Serve(env, tmp_path / "serve.log", processes=1, threads=2).start()
        try:
            with httpx.Client(
                base_url=serve.url + "/lmkit/v1", headers={"Authorization": f"Bearer {world.key}"}, timeout=30
            ) as api:

                def create(body: dict) -> httpx.Response:
                    return api.post("/targets", json={"name": "t", "kind": "http", **body})

                http_options = {
                    "request_template": {"q": "{{query}}"},
                    "response_mapping": {"ids": "hits[].id"},
                }
                for host in (
                    "127.0.0.1",
                    "localhost",
                    "0.0.0.0",
                    "2130706433",
                    "0x7f.1",
                    "[::1]",
                    "[::ffff:127.0.0.1]",
                ):
                    response = create({"base_url": f"http://{host}:{port}/search", "options": http_options})
                    assert response.status_code == 400, (host, response.text)
                    assert response.json()["error"]["code"] == "url-not-allowed"
                    assert response.json()["error"]["details"]["field"] == "base_url"

                es = api.post(
                    "/targets",
                    json={"name": "es", "kind": "elasticsearch", "base_url": "https://es.example.com",
                          "options": {"index": "../json?x="}},
                )  # fmt: skip
                assert es.status_code == 400 and es.json()["error"]["details"]["field"] == "options.index"

                # Nested 900 deep: past the body's own limit (100), refused before any field is read.
                deep = create({"base_url": "https://api.example.com/search",
                               "options": {**http_options, "request_template": _deep(900)}})  # fmt: skip
                assert deep.status_code == 400 and deep.json()["error"]["code"] == "invalid-json", deep.text
                attacks = {
                    "options.request_template": {  # within the body's limit, past the options' (32)
                        "base_url": "https://api.example.com/search",
                        "options": {**http_options, "request_template": _deep(60)},
                    },
                    "options.response_mapping.ids": {
                        "base_url": "https://api.example.com/search",
                        "options": {**http_options, "response_mapping": {"ids": "[" * 5000 + "]" * 5000}},
                    },
                    "headers": {
                        "base_url": "https://api.example.com/search",
                        "options": http_options,
                        "headers": {f"X-{i}": "v" for i in range(10_000)},
                    },
                    "secret_headers.Authorization": {
                        "base_url": "https://api.example.com/search",
                        "options": http_options,
                        "secret_headers": {"Authorization": "Bearer \u2603"},
                    },
                }
                for field, body in attacks.items():
                    response = create(body)
                    assert response.status_code == 400, (field, response.text[:300])
                    assert response.json()["error"]["message"].startswith(f"{field}: ")

                backtracking = create(
                    {
                        "base_url": "https://api.example.com/search",
                        "options": {**http_options, "id_transform": {"regex": "^(a+)+$"}},
                    }
                )
                assert backtracking.status_code == 201, backtracking.text  # RE2 runs it in linear time
                assert api.get("/targets").json()["results"][0]["name"] == "t"
        finally:
            serve.close()
        log = (tmp_path / "serve.log").read_text()
        assert "Traceback" not in log and "Internal Server Error" not in log
        assert internal.count() == 0
