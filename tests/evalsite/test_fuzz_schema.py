"""The served OpenAPI schema fuzzed with schemathesis (issue 24): no answer is a server error, and every answer's
status, content type and body are the ones the schema documents for its operation.

The production server (`manage.py serve`, two web processes and a worker cluster) on PostgreSQL and Redis, with
an API key, a collection of documents, golden entries, a run, a job and a target; schemathesis's CLI against
/api/schema with a fixed seed and a fixed number of examples an operation (its examples, coverage and fuzzing
phases), mixing the existing ids into the ids and names it generates. Its own report (and a JUnit file) is
written under tmp_path and shown whole when it finds anything.

Run it alone (about two minutes on two cores; docs/development.md, Development):
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalsite EVALSITE_REDIS_URL=redis://127.0.0.1:6379/15 \\
        .venv/bin/python -m pytest tests/evalsite/test_fuzz_schema.py -q
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml
from django.db import connection

from evalsite.jobs.models import Job
from goldenset import services
from tests.conftest import add_documents
from tests.support import handbook_entries
from tests.worker_support import Serve, free_port

HOOKS = Path(__file__).with_name("fuzz_hooks.py")

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="CI's PostgreSQL leg: the production server as deployed"
    ),
]

# The budget: examples an operation in the fuzzing phase (the examples and coverage phases have their own fixed
# sets), one seed, and a wall clock for the schemathesis run after which the test fails rather than waits.
MAX_EXAMPLES = 10
SEED = 24
WALL_CLOCK_SECONDS = 210
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "dependency_503s_are_index_building",  # fuzz_hooks.py
)


def _config(ids: dict[str, list[str]], report_dir: Path) -> str:
    """schemathesis.toml: what the command line cannot say (the 503 that is no server error, the ids to mix in,
    no cache or example database carried from one run to the next)."""
    lines = [
        "[cache]",
        "enabled = false",
        "",
        "[generation]",
        'database = "none"',
        "",
        "[checks.not_a_server_error]",
        # index-building is by design (a collection the fuzzer made has no index yet); the custom check holds
        # every 503 to that code and its Retry-After, so a 503 of anything else still fails the run.
        'expected-statuses = ["2xx", "3xx", "4xx", "503"]',
        "",
        "[reports.junit]",
        f"path = {json.dumps(str(report_dir / 'junit.xml'))}",
        "",
        "[dictionaries]",
    ]
    lines += [f"{name} = {{ values = {json.dumps(values)} }}" for name, values in ids.items()]
    lines += ["", "[parameters]"]
    # Half the time an existing id, so the operations get past their lookups to the code behind them.
    bindings = {
        "path.collection_id": "collections",
        "query.collection_id": "collections",
        "body.collection_id": "collections",
        "path.document_id": "documents",
        "path.entry_id": "entries",
        "path.job_id": "jobs",
        "path.run_id": "runs",
        "path.name": "targets",
        "query.batch_id": "batches",
    }
    lines += [f'"{key}" = {{ dictionary = "{name}", probability = 0.5 }}' for key, name in bindings.items()]
    return "\n".join(lines) + "\n"


def _seed(world, server: Serve, target_url: str) -> dict[str, list[str]]:
    """What the operations look up: the world's collection, golden entries, a run, a job and a target."""
    entries = handbook_entries(world.collection, 3, unanswerable=True)
    scratch = services.collection_create(tenant=world.tenant, slug="scratch", actor="test")
    add_documents(scratch, {"memo": "A collection the fuzzer may delete."})
    headers = {"Authorization": f"Bearer {world.key}"}
    with httpx.Client(base_url=server.url + "/lmkit/v1", headers=headers, timeout=60) as client:
        target = client.post(
            "/targets",
            json={"name": "stub", "kind": "lmkit", "base_url": target_url, "options": {"collection_id": "x"}},
        )
        assert target.status_code == 201, target.text
        body = {"collection_id": "handbook", "configs": [{"label": "bm25", "search_type": "FullText"}]}
        deadline = time.monotonic() + 60
        evaluated = client.post("/search/evaluate", json=body)
        while evaluated.status_code == 503 and time.monotonic() < deadline:  # its index: built by the worker
            time.sleep(0.5)
            evaluated = client.post("/search/evaluate", json=body)
        assert evaluated.status_code == 200, evaluated.text
    run = evaluated.json()["runs"][0]
    return {
        # "scratch": what DELETE collections/{collection_id} gets instead of "handbook" (fuzz_hooks.py).
        "collections": ["handbook", "scratch"],
        "documents": ["refunds", "shipping", "warranty"],
        "entries": [str(e.pk) for e in entries],
        "jobs": [str(pk) for pk in Job.objects.values_list("pk", flat=True)[:5]],
        "runs": [run["run_id"]],
        "batches": [evaluated.json()["batch_id"]],
        "targets": ["stub"],
    }


def test_schemathesis_finds_no_server_error_and_no_answer_the_schema_does_not_document(
    world, manage_env, tmp_path
):
    target_url = f"http://127.0.0.1:{free_port()}/"  # nothing listens there: a target call fails at once
    env = {
        **manage_env,
        "EVALSITE_WORKERS": "1",
        "EVALSITE_JOB_HEARTBEAT_SECONDS": "1",
        "EVALSITE_OUTBOUND_ALLOW": "127.0.0.0/8",  # the pinned target_url only (fuzz_hooks.py)
    }
    server = Serve(env, tmp_path / "serve.log", processes=2, threads=4)
    try:
        server.start()
        ids = _seed(world, server, target_url)
        schema = yaml.safe_load(httpx.get(f"{server.url}/api/schema", timeout=30).text)
        operations = sum(len(methods) for methods in schema["paths"].values())
        assert operations >= 36
        report_dir = tmp_path / "schemathesis"
        report_dir.mkdir()
        config = tmp_path / "schemathesis.toml"
        config.write_text(_config(ids, report_dir))
        report = report_dir / "report.txt"
        started = time.monotonic()
        command = [
            str(Path(sys.executable).with_name("schemathesis")),
            "--config-file", str(config),
            "--no-color",
            "run", f"{server.url}/api/schema",
            "--header", f"Authorization: Bearer {world.key}",
            "--checks", ",".join(CHECKS),
            "--phases", "examples,coverage,fuzzing",
            "--max-examples", str(MAX_EXAMPLES),
            "--seed", str(SEED),
            # One: two cores, shared with the server; and hypothesis's lambda descriptions are not thread-safe
            # on Python 3.11 (a run with two workers died of "AST constructor recursion depth mismatch").
            "--workers", "1",
            "--request-timeout", "60",
            "--output-sanitize", "true",
        ]  # fmt: skip
        with report.open("w") as out:
            try:
                finished = subprocess.run(
                    command,
                    cwd=tmp_path,  # anything it keeps on disk stays out of the repository
                    env={
                        **os.environ,
                        "SCHEMATHESIS_HOOKS": str(HOOKS),
                        "EVALSITE_FUZZ_TARGET_URL": target_url,
                    },
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=WALL_CLOCK_SECONDS,
                )
                code: int | str = finished.returncode
            except subprocess.TimeoutExpired:
                code = f"still running after {WALL_CLOCK_SECONDS} s"
        took = time.monotonic() - started
        text = report.read_text()
        log = server.log.read_text()
        assert code == 0, f"schemathesis: {code} ({took:.0f} s); its report ({report}):\n{text}"
        summary = text[text.rfind("SUMMARY") :]
        assert f"Tested: {operations}" in summary, text  # every operation of the schema, none skipped
        assert "Traceback" not in log, log[-5000:]
        # The HTTP server's own 414 past 8190 bytes of request line, in the envelope as documented (below that,
        # the API answers: a golden-set filter of 900 CJK characters, 8100 bytes).
        headers = {"Authorization": f"Bearer {world.key}"}
        filtered = httpx.get(
            f"{server.url}/lmkit/v1/search/golden-set", params={"text": "語" * 900}, headers=headers
        )
        assert filtered.status_code == 200 and filtered.json()["count"] == 0, filtered.text
        too_long = httpx.get(
            f"{server.url}/lmkit/v1/search/golden-set", params={"text": "語" * 920}, headers=headers
        )
        assert too_long.status_code == 414, too_long.text
        assert too_long.json()["error"]["code"] == "uri-too-long", too_long.text
        assert "414" in schema["paths"]["/lmkit/v1/search/golden-set"]["get"]["responses"]
        print(f"schemathesis: {took:.0f} s\n{summary}")
    finally:
        server.close()
