"""What the benchmarks share: Django on a private, temporary SQLite database, whatever the shell says.

A benchmark measures the code, not someone's database: DATABASE_URL, EVALSITE_REDIS_URL and
EVALSITE_LLM_BASE_URL are ignored (jobs run inline, a model is the scripted server the benchmark starts), and
the data directory is removed afterwards. load_bench.py starts real servers instead and sets their
environment itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on now (for a server a benchmark starts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(
    env: dict[str, str], log: Path, timeout: float = 300.0
) -> tuple[subprocess.Popen, str, float]:
    """`manage.py serve` as users start it, with `env`, on a free port of 127.0.0.1, its output to `log`, waited
    for until /healthz answers (any status: a 503 names a worker cluster a benchmark did not start); returns the
    process (in a session of its own: stop_server stops it whole), its URL and the seconds it took to start."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve"], cwd=ROOT, env={**env, "EVALSITE_BIND": f"127.0.0.1:{port}"},
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    while True:
        try:
            httpx.get(url + "/healthz", timeout=2)
            return server, url, time.monotonic() - started
        except httpx.TransportError:
            pass
        if server.poll() is not None or time.monotonic() - started > timeout:
            stop_server(server)
            raise SystemExit(f"serve did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)


def stop_server(server: subprocess.Popen) -> None:
    """The server and its workers stopped (SIGTERM to its session, SIGKILL after 30 s)."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(10)


@contextmanager
def private_django(prefix: str, *, database_url: str | None = None, **environ: str) -> Iterator[str]:
    """Set up Django in a new temporary data directory (migrated), and remove the directory afterwards; on a
    temporary SQLite database there, or on `database_url` (a database the caller made for this run)."""
    data_dir = tempfile.mkdtemp(prefix=prefix)
    try:
        os.environ.update(
            {
                "DJANGO_SETTINGS_MODULE": "evalsite.settings",
                "DEBUG": "1",
                "EVALSITE_DATA_DIR": data_dir,
                "EVALSITE_Q_SYNC": "1",
                "LOG_LEVEL": "WARNING",
                **environ,
            }
        )
        for name in ("DATABASE_URL", "EVALSITE_REDIS_URL", "EVALSITE_LLM_BASE_URL"):
            os.environ.pop(name, None)
        if database_url:
            os.environ["DATABASE_URL"] = database_url
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        yield data_dir
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
