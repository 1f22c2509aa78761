"""Every shell block of the README and docs/ that talks to the server or runs a command on the demo, run as printed
against a live demo server:
`manage.py migrate`, `load_demo` and `serve`, as `scripts/run` starts them, on SQLite in a data directory of
their own. The only change to a block is the demo's address and API key put where the README prints
`http://127.0.0.1:8000` and `esk_...`. A block passes when bash runs it to the end (`set -euo pipefail`) and no
answer it printed is an error envelope."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.worker_support import Serve

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?:sh|bash)\n(.*?)^```", re.S | re.M)
PRINTED_URL, PRINTED_KEY = "http://127.0.0.1:8000", "esk_..."


def server_blocks() -> list:
    """(text, where) of every shell block that calls the server (it names $LMKIT_ONE_URL) or runs a command on
    the demo (`manage.py ... --cluster demo`)."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            if "LMKIT_ONE_URL" in match.group(1) or "--cluster demo" in match.group(1):
                line = text[: match.start()].count("\n") + 1
                found.append(pytest.param(match.group(1), id=f"{page.relative_to(ROOT)}:{line}"))
    return found


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo as `scripts/run` serves it; (its URL, its API key, the environment its commands need)."""
    data = tmp_path_factory.mktemp("demo-data")
    env = {
        key: value
        for key, value in os.environ.items()
        if key
        not in ("DATABASE_URL", "EVALSITE_REDIS_URL", "EVALSITE_OUTBOUND_ALLOW", "EVALSITE_TEST_WORKER")
    }
    env.update({"DJANGO_SETTINGS_MODULE": "evalsite.settings", "EVALSITE_DATA_DIR": str(data)})
    _manage(env, "migrate", "--noinput")
    printed = _manage(env, "load_demo")
    key = re.search(r"API key \(cluster_id=demo, tenant_id=demo\): (\S+)", printed)
    assert key, printed
    serve = Serve({**env, "EVALSITE_WORKERS": "1"}, data / "serve.log", processes=1, threads=4)
    try:
        yield serve.start(timeout=120), key.group(1), env
    finally:
        serve.close()


def test_the_docs_have_server_blocks_and_the_check_sees_them():
    blocks = server_blocks()
    pages = {param.id.split(":")[0] for param in blocks}
    assert {"README.md", "docs/evaluation.md", "docs/golden-sets.md"} <= pages
    assert len(blocks) >= 11


@pytest.mark.parametrize("block", server_blocks())
def test_a_docs_shell_block_runs_as_printed_against_the_demo(block, demo, tmp_path):
    serve, key, env = demo
    script = block.replace(PRINTED_URL, serve.url).replace(PRINTED_KEY, key)
    # The block runs from a directory of its own (what it writes stays there) that sees the checkout's files.
    for name in ("demo", "manage.py", ".venv", "evalsite", "goldenset", "evaluation", "templates", "static"):
        (tmp_path / name).symlink_to(ROOT / name)
    run = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script],
        cwd=tmp_path,
        env={**env, "LMKIT_ONE_URL": serve.url, "LMKIT_API_KEY": key, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert '"error": {' not in run.stdout and '"error":{' not in run.stdout, run.stdout[-3000:]
