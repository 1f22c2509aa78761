"""A client generated from the OpenAPI schema works (issue 38): openapi-python-client (pinned in the test extra)
writes a Python client, offline, from the schema `manage.py spectacular` writes (what /api/schema serves); every
module of it imports in a fresh interpreter, and it sends a body of either media type an operation reads.

A body one operation reads in several media types (POST /search/judgments and POST /search/evaluate/labels: JSON
or multipart) had one component for both: the generated client could not tell the bodies apart (it sent a JSON
body's model as multipart too), and the module did not import (the generator names `Unset` without importing it
for a required body of several media types). evalsite.api.schema.AutoSchema gives each media type its own
component, and marks such a body not required.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from evalsite.tenancy.services import api_key_create
from evaluation.models import RelevanceJudgment
from tests.schema_support import served_schema
from tests.support import handbook_entries, member_of

GENERATOR = Path(sys.executable).with_name("openapi-python-client")

# Imports every module of the generated package, and prints which did and which failed.
IMPORT_ALL = textwrap.dedent(
    """
    import importlib, json, pkgutil
    import evalsite_client as package
    imported, failed = [], []
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        try:
            importlib.import_module(module.name)
            imported.append(module.name)
        except Exception as exc:
            failed.append(f"{module.name}: {type(exc).__name__}: {exc}")
    print(json.dumps({"imported": imported, "failed": failed}))
    """
)

# Stores a judgment as JSON, then one from a CSV file, through the generated client: (status, body) of each.
SEND_BOTH = textwrap.dedent(
    """
    import io, json, sys
    from evalsite_client import AuthenticatedClient
    from evalsite_client.api.lmkit import lmkit_v1_search_judgments_create as judgments
    from evalsite_client.models import JudgmentsInJsonRequest, JudgmentsInMultipartRequest
    from evalsite_client.types import File

    client = AuthenticatedClient(base_url=sys.argv[1], token=sys.argv[2])
    rows = [{"question_id": "q1", "document_id": "refunds", "grade": 3, "rater": "ann"}]
    as_json = judgments.sync_detailed(
        client=client, body=JudgmentsInJsonRequest(collection_id="handbook", judgments=rows)
    )
    csv = b"question_id,document_id,grade,rater,note\\nq2,shipping,2,bob,fast\\n"
    as_file = judgments.sync_detailed(
        client=client,
        body=JudgmentsInMultipartRequest(
            collection_id="handbook", file=File(payload=io.BytesIO(csv), file_name="judgments.csv")
        ),
    )
    print(json.dumps([[r.status_code, json.loads(r.content)] for r in (as_json, as_file)]))
    """
)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict:
    """The client, generated once: where it is, the schema it came from, the generator's seconds."""
    where = tmp_path_factory.mktemp("generated")
    schema_file = where / "schema.yaml"
    call_command("spectacular", "--file", str(schema_file), "--validate", "--fail-on-warn")
    config = where / "generator.yaml"
    config.write_text("post_hooks: []\n")  # no formatter over the generated code: importing it is the test
    done = subprocess.run(
        [
            str(GENERATOR), "generate", "--path", str(schema_file), "--output-path",
            str(where / "evalsite_client"), "--meta", "none", "--config", str(config), "--fail-on-warning",
        ],
        cwd=where, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return {"dir": where, "schema": yaml.safe_load(schema_file.read_text())}


def test_every_module_of_a_client_generated_from_the_schema_imports(generated):
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL], cwd=generated["dir"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["failed"] == [], "\n".join(found["failed"])
    # A module an operation: none left out.
    operations = sum(len(methods) for methods in generated["schema"]["paths"].values())
    endpoints = [name for name in found["imported"] if name.count(".") == 3 and ".api." in name]
    assert len(endpoints) == operations, sorted(endpoints)


def test_each_media_type_of_a_body_has_its_own_component():
    """Every operation that reads a body in several media types, not only the two of today: JSON's component
    has no file, a form's no list or object."""
    schema = served_schema()
    components = schema["components"]["schemas"]
    several = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            content = operation.get("requestBody", {}).get("content", {})
            if len(content) < 2:
                continue
            several.append(f"{method} {path}")
            refs = [media["schema"]["$ref"] for media in content.values()]
            assert len(set(refs)) == len(refs), (method, path, refs)
            for media_type, media in content.items():
                fields = components[media["schema"]["$ref"].rsplit("/", 1)[1]]["properties"]
                kinds = {name: (field.get("type"), field.get("format")) for name, field in fields.items()}
                if media_type == "application/json":
                    assert ("string", "binary") not in kinds.values(), (path, media_type, kinds)
                else:
                    assert not {"array", "object"} & {t for t, _ in kinds.values()}, (path, media_type, kinds)
    assert {"post /lmkit/v1/search/judgments", "post /lmkit/v1/search/evaluate/labels"} <= set(several)


@pytest.mark.django_db(transaction=True)
def test_the_generated_client_sends_a_body_as_json_and_as_a_file(generated, world, live_server):
    handbook_entries(world.collection)
    # a curator's own key: its JSON judgment is ann's, live; its file's raters are imported
    ann = member_of(world.tenant, "ann", role="curator")
    _, secret = api_key_create(tenant=world.tenant, role="curator", user=ann, actor="test")
    done = subprocess.run(
        [sys.executable, "-c", SEND_BOTH, live_server.url, secret],
        cwd=generated["dir"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    as_json, as_file = json.loads(done.stdout)
    assert as_json == [201, {"judgments": 1, "created": 1, "updated": 0}]
    assert as_file == [201, {"judgments": 1, "created": 1, "updated": 0}]
    stored = RelevanceJudgment.objects.order_by("rater")
    assert [(j.entry.key, j.document_id, j.grade, j.rater, j.note) for j in stored] == [
        ("q2", "shipping", 2, "imported:bob", "fast"),
        ("q1", "refunds", 3, "user:ann", ""),
    ]
