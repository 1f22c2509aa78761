"""The seed's curl examples for the golden-set endpoints, sent verbatim with real curl to a live server."""

from __future__ import annotations

import json
import shutil
import subprocess
from io import StringIO

import pytest
from django.core.management import call_command

from evalsite.tenancy.models import Tenant
from goldenset import services
from goldenset.models import GoldenEntry
from tests.llm_server import llm_server_fixture  # noqa: F401

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")

# Copied character for character from ../shared/seeds/003_b9d49aaaf83cda7b.txt.
LIST = '''curl -X GET "$LMKIT_ONE_URL/lmkit/v1/search/golden-set" \\
  -H "Authorization: Bearer $LMKIT_API_KEY"'''

ADD = """curl -X POST "$LMKIT_ONE_URL/lmkit/v1/search/golden-set" \\
  -H "Authorization: Bearer $LMKIT_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{
  "cluster_id": "string",
  "tenant_id": "string",
  "collection_id": "string",
  "entries": [
    {
      "question": "string",
      "expected_document_ids": [
        "string"
      ],
      "reference_answer": "string"
    }
  ]
}\'"""

DELETE = '''curl -X DELETE "$LMKIT_ONE_URL/lmkit/v1/search/golden-set/$ENTRYID" \\
  -H "Authorization: Bearer $LMKIT_API_KEY"'''


def _curl(command: str, url: str, key: str, entry_id: str = "") -> str:
    env = {"LMKIT_ONE_URL": url, "LMKIT_API_KEY": key, "ENTRYID": entry_id, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout


def _createapikey(cluster: str, tenant: str) -> str:
    out = StringIO()
    call_command(
        "createapikey",
        "--cluster",
        cluster,
        "--tenant",
        tenant,
        "--role",
        "admin",
        "--name",
        "seed",
        stdout=out,
    )
    return out.getvalue().strip().splitlines()[-1]


@pytest.mark.django_db(transaction=True)
def test_the_seed_examples_work_verbatim_and_not_across_tenants(live_server):
    key = _createapikey("string", "string")
    tenant = Tenant.objects.get(cluster__slug="string", slug="string")
    collection = services.collection_create(tenant=tenant, slug="string", actor="test")
    services.documents_upsert(
        collection=collection,
        documents=[services.DocumentInput.from_text(id="string", text="string")],
        actor="test",
    )
    rival_key = _createapikey("string", "rival")

    # Another tenant's key: the add is refused as not found, and nothing is written.
    refused = json.loads(_curl(ADD, live_server.url, rival_key))
    assert refused["error"]["code"] == "not-found"
    assert GoldenEntry.objects.count() == 0

    added = json.loads(_curl(ADD, live_server.url, key))
    assert added["added"] == 1
    entry = GoldenEntry.objects.get()
    assert (entry.question, entry.expected_document_ids, entry.reference_answer) == (
        "string",
        ["string"],
        "string",
    )
    assert added["entries"][0]["id"] == str(entry.pk)

    listed = json.loads(_curl(LIST, live_server.url, key))
    assert listed["count"] == 1 and listed["results"][0]["id"] == str(entry.pk)
    # The rival sees its own (empty) golden set, never this tenant's.
    assert json.loads(_curl(LIST, live_server.url, rival_key))["count"] == 0

    assert (
        json.loads(_curl(DELETE, live_server.url, rival_key, str(entry.pk)))["error"]["code"] == "not-found"
    )
    assert GoldenEntry.objects.filter(pk=entry.pk).exists()

    assert _curl(DELETE, live_server.url, key, str(entry.pk)) == ""
    assert not GoldenEntry.objects.exists()


GENERATE = """curl -X POST "$LMKIT_ONE_URL/lmkit/v1/search/golden-set/generate" \\
  -H "Authorization: Bearer $LMKIT_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{
  "cluster_id": "string",
  "tenant_id": "string",
  "collection_id": "string",
  "count": "string",
  "model": "string",
  "seed": "string"
}\'"""

EVALUATE_ANSWERS = """curl -X POST "$LMKIT_ONE_URL/lmkit/v1/search/evaluate/answers" \\
  -H "Authorization: Bearer $LMKIT_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{
  "cluster_id": "string",
  "tenant_id": "string",
  "collection_id": "string",
  "collection_ids": [
    "string"
  ],
  "judge_model": "string",
  "configs": [
    {
      "label": "string",
      "model": "string",
      "search_type": "Hybrid",
      "groundedness": "Off"
    }
  ]
}\'"""

JOB = '''curl "$LMKIT_ONE_URL/lmkit/v1/jobs/$ENTRYID" -H "Authorization: Bearer $LMKIT_API_KEY"'''


@pytest.mark.django_db(transaction=True)
def test_the_seed_generate_and_answer_evaluation_examples(live_server, llm_server, settings):
    """With a chat endpoint whose model is called "string": the answer evaluation runs verbatim; the generate
    example's placeholders "string" for count and seed are not numbers, which is said, and with numbers it runs."""
    from tests.answer_support import scripted_rag
    from tests.generation_support import scripted_writer, synthetic_corpus

    llm_server.reply(r"Passage:\n<<<", scripted_writer)
    llm_server.reply(r".", scripted_rag)
    settings.EVALSITE_LLM_BASE_URL = llm_server.url
    key = _createapikey("string", "string")
    tenant = Tenant.objects.get(cluster__slug="string", slug="string")
    collection = services.collection_create(tenant=tenant, slug="string", actor="test")
    services.documents_upsert(
        collection=collection,
        documents=[services.DocumentInput.from_text(id=d, text=t) for d, t in synthetic_corpus(6).items()],
        actor="test",
    )

    refused = json.loads(_curl(GENERATE, live_server.url, key))
    assert refused["error"]["code"] == "validation-error" and "count" in refused["error"]["message"]
    numbers = GENERATE.replace('"count": "string"', '"count": "3"').replace('"seed": "string"', '"seed": "7"')
    accepted = json.loads(_curl(numbers, live_server.url, key))
    assert (accepted["seed"], accepted["model"], accepted["backend"]) == (7, "string", "llm")
    job = json.loads(_curl(JOB, live_server.url, key, accepted["job_id"]))
    assert job["status"] == "Completed" and job["result"]["accepted"] == 3
    assert {r.body["model"] for r in llm_server.requests} == {"string"}

    started = json.loads(_curl(EVALUATE_ANSWERS, live_server.url, key))
    job = json.loads(_curl(JOB, live_server.url, key, started["job_id"]))
    assert job["status"] == "Completed", job
    (run,) = job["result"]["runs"]
    assert run["label"] == "string" and run["mode"] == "llm-judge" and run["question_count"] == 3
    assert run["config"]["model"] == "string" and run["config"]["judge_model"] == "string"
    assert run["config"]["search_type"] == "Hybrid" and run["config"]["groundedness"] == "Off"
