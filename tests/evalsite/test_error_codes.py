"""One list of error codes: evalsite.errors.ERROR_CODES, the table of docs/api.md, and every code the source raises
agree; an empty upload is the same error over HTTP and on the command line."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsite.errors import ERROR_CODES, EvalsiteError

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| `([a-z-]+)` \| (\d{3}) \| (.+) \|$")
CODE = re.compile(r"^[a-z]+(-[a-z0-9]+)+$")
RAISERS = ("Error", "_fail", "field_error", "_choice", "envelope", "_invalid")


def documented_codes() -> dict[str, int]:
    return {
        m[1]: int(m[2])
        for line in (ROOT / "docs" / "api.md").read_text().splitlines()
        if (m := ROW.match(line))
    }


def codes_in_source() -> dict[str, str]:
    """Code-like string constants given to an error's constructor or helper, or as an envelope's "code"."""
    found: dict[str, str] = {}
    for path in [
        *ROOT.glob("evalsite/**/*.py"),
        *ROOT.glob("goldenset/**/*.py"),
        *ROOT.glob("evaluation/**/*.py"),
    ]:
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            candidates: list[ast.expr] = []
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if any(part in name for part in RAISERS):
                    candidates += [*node.args, *(k.value for k in node.keywords if k.arg == "code")]
            elif isinstance(node, ast.Dict):
                candidates += [
                    v
                    for k, v in zip(node.keys, node.values, strict=True)
                    if getattr(k, "value", None) == "code"
                ]
            for value in candidates:
                if (
                    isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                    and CODE.match(value.value)
                ):
                    found.setdefault(value.value, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_api_docs_list_every_code_with_its_status():
    assert documented_codes() == {code: status for code, (status, _when) in ERROR_CODES.items()}


def test_every_code_the_source_raises_is_registered():
    unknown = {code: where for code, where in codes_in_source().items() if code not in ERROR_CODES}
    assert unknown == {}
    assert {"invalid-file", "too-many-configs", "broker-unavailable", "empty-file"} <= set(codes_in_source())


def test_an_unregistered_code_cannot_be_raised():
    with pytest.raises(ValueError, match="not in evalsite.errors.ERROR_CODES"):
        EvalsiteError("made-up-code", "nothing")


def test_an_empty_golden_file_is_empty_file_over_http_and_on_the_command_line(
    transactional_db, world, manage_env, tmp_path
):
    response = world.client.post(
        "/lmkit/v1/search/golden-set/upload",
        {"collection_id": "handbook", "file": SimpleUploadedFile("golden.json", b"")},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "empty-file"
    blank = world.client.post(
        "/lmkit/v1/search/golden-set/upload",
        {"collection_id": "handbook", "file": SimpleUploadedFile("golden.json", b"  \n")},
        format="multipart",
    )
    assert blank.json()["error"]["code"] == "empty-file"
    documents = world.client.post(
        "/lmkit/v1/collections/handbook/uploads",
        {"file": SimpleUploadedFile("notes.md", b"")},
        format="multipart",
    )
    assert documents.status_code == 400 and documents.json()["error"]["code"] == "empty-file"

    empty = tmp_path / "golden.json"
    empty.write_bytes(b"")
    done = subprocess.run(
        [sys.executable, "manage.py", "import_golden", str(empty), "--cluster", "acme", "--tenant", "search",
         "--collection", "handbook"],
        cwd=ROOT, env=manage_env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == "error [empty-file] golden.json: the file is empty."
