"""What clients see when `manage.py serve` stops: N clients send request after request on kept-alive
connections to a fresh server (DEBUG off, SQLite in a temporary data directory, no worker), the server gets
SIGTERM, and every outcome after that is counted: an answer (HTTP status), a refusal (ConnectError: the server
is gone, cleanly) or a reset after the request was sent (ReadError, RemoteProtocolError...: not clean).

    .venv/bin/python benchmarks/graceful_stop_drill.py [--clients 50]

Exit status 1 when any request was reset. Every request goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from bench_django import free_port

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="evalsite-stop-drill-")
    port = free_port()
    env = {
        **os.environ,
        "DEBUG": "0",
        "PORT": str(port),
        "EVALSITE_DATA_DIR": data,
        "EVALSITE_WORKER_CLUSTERS": "0",
        "EVALSITE_WEB_PROCESSES": "2",
        "EVALSITE_WEB_THREADS": "2",
        "EVALSITE_ACCESS_LOG": "0",
    }
    for name in ("DATABASE_URL", "EVALSITE_REDIS_URL"):
        env.pop(name, None)
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        with open(Path(data) / "serve.log", "w") as log:
            server = subprocess.Popen(
                [sys.executable, "manage.py", "serve"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                httpx.get(url + "/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        outcomes: collections.Counter[str] = collections.Counter()
        stopping = threading.Event()
        lock = threading.Lock()

        def client() -> None:
            with httpx.Client(base_url=url, timeout=10) as session:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    try:
                        outcome = f"HTTP {session.get('/healthz').status_code}"
                    except httpx.ConnectError:
                        outcome = "refused"
                    except httpx.TransportError as exc:
                        outcome = f"reset ({type(exc).__name__})"
                    if stopping.is_set():
                        with lock:
                            outcomes[outcome] += 1
                        if not outcome.startswith("HTTP"):
                            return
                    time.sleep(0.05)

        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        for thread in threads:
            thread.start()
        time.sleep(3)
        stopping.set()
        server.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(90)
        server.wait(30)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(
        f"{args.clients} clients, after SIGTERM: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
    )
    return 1 if any(k.startswith("reset") for k in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
