"""Real worker clusters and a private Redis for the durability tests: started as users start them, killed as
machines die (SIGKILL to the whole process group), stopped as supervisors stop them (SIGTERM to the group)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from evalsite.jobs.models import Job

ROOT = Path(__file__).resolve().parents[1]
# Real clusters that notice a dead worker in seconds, one worker process each, `slow_search` below a python
# target they may call.
FAST_WORKERS = {
    "EVALSITE_JOB_HEARTBEAT_SECONDS": "1",
    "EVALSITE_JOB_STALE_SECONDS": "4",
    "EVALSITE_TASK_LEASE_SECONDS": "3",
    "EVALSITE_WORKERS": "1",
    "EVALSITE_PYTHON_TARGETS": "tests.worker_support.slow_search",
}
SLOW_SEARCH = "tests.worker_support.slow_search"


def slow_search(query: str, top_k: int):
    """A python target that takes its time (0.25 s a question): a job is caught while it runs."""
    time.sleep(0.25)
    return [("company-000", 1.0), ("company-001", 0.5)][:top_k]


def fast_workers(manage_env: dict[str, str], settings, monkeypatch) -> dict[str, str]:
    """FAST_WORKERS in this process's settings (the jobs it queues read them) and in the environment of the
    clusters it starts (returned); tasks queued to the broker, not run inline."""
    from django_q.conf import Conf  # late: only tests that start clusters need django-q's settings

    for name, value in FAST_WORKERS.items():
        setattr(
            settings, name, int(value) if value.isdigit() else [value] if name.endswith("TARGETS") else value
        )
    monkeypatch.setattr(Conf, "SYNC", False)
    return {**manage_env, **FAST_WORKERS}


def until(
    condition, what: str = "the condition", timeout: float = 90.0, clusters: Clusters | None = None
) -> None:
    """Wait for `condition()`; fails after `timeout` seconds, naming `what`, with the clusters' logs' tail."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            logs = "".join(p.log.read_text() for p in clusters.started) if clusters else ""  # type: ignore[attr-defined]
            raise AssertionError(f"timed out waiting for {what}\n{logs[-5000:]}")
        time.sleep(0.1)


def job_until(client, job_id, condition, *, worker=None, timeout: float = 90.0) -> dict:
    """Poll a job over the API as a client does (each poll also runs the web side's recovery) until
    condition(body), and return that body. Fails, naming the last body and the worker's log, when the time is up
    or when `worker` (a cluster process with a `log` path) has exited meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/lmkit/v1/jobs/{job_id}").json()
        if condition(body):
            return body
        log = f"\n{worker.log.read_text()}" if worker is not None else ""
        assert worker is None or worker.poll() is None, f"the worker exited; last: {body}{log}"
        assert time.monotonic() < deadline, f"timed out; last: {body}{log}"
        time.sleep(0.2)


def job_ended(body: dict) -> bool:
    """A job that has finished: completed, failed or cancelled (for job_until)."""
    return body["status"] in Job.FINISHED


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


class Clusters:
    """`manage.py worker` processes, each in a process group of its own, with the test's environment."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.started: list[subprocess.Popen] = []

    def start(self, name: str, **extra: str) -> subprocess.Popen:
        log_path = self.log_dir / f"{name}.log"
        with log_path.open("w") as log:  # a file, not a pipe: a chatty worker never blocks on a full pipe
            process = subprocess.Popen(
                [sys.executable, "manage.py", "worker"],
                cwd=ROOT,
                env={**self.env, **extra},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        process.log = log_path  # type: ignore[attr-defined]
        self.started.append(process)
        return process

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        """What a machine or container death does: SIGKILL to every process of the cluster at once."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        deadline = time.monotonic() + 10
        while group_members(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)

    @staticmethod
    def terminate(process: subprocess.Popen, timeout: float = 10.0) -> float:
        """What a supervisor does: SIGTERM to the process group; seconds until every process is gone."""
        started = time.monotonic()
        os.killpg(process.pid, signal.SIGTERM)
        while group_members(process.pid) and time.monotonic() - started < timeout:
            time.sleep(0.05)
        took = time.monotonic() - started
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=1)
        return took

    def close(self) -> None:
        for process in self.started:
            if group_members(process.pid):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A redis-server of the test's own (no persistence, like the machine's): stopped and started again to
    play a broker outage and a restart that loses every queued task."""

    def __init__(self, work_dir: Path) -> None:
        self.binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.port = free_port()
        self.work_dir = work_dir
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.work_dir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # no shutdown save: everything it held is gone, as after a crash
            self.process.wait(timeout=10)
        self.process = None


class Serve:
    """`manage.py serve` (the production command) in a process group of its own, ready when /healthz is 200
    (or, with `healthy=False`, when it answers at all: a server started without a database or a worker)."""

    def __init__(self, env: dict[str, str], log_path: Path, *, processes: int = 2, threads: int = 4) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.port = port
        self.log = log_path
        self.env = {
            **env,
            "DEBUG": "0",
            "PORT": str(port),
            "EVALSITE_WEB_PROCESSES": str(processes),
            "EVALSITE_WEB_THREADS": str(threads),
            "EVALSITE_ACCESS_LOG": "0",
        }
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0, *, healthy: bool = True) -> Serve:
        import httpx

        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "serve"],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200 or not healthy:
                    return self
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"serve did not become healthy:\n{self.log.read_text()}")
            time.sleep(0.2)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def close(self) -> None:
        if self.process is None:
            return
        if group_members(self.process.pid):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


class TcpProxy:
    """A TCP forwarder to a server (PostgreSQL), to play that server going away and coming back: `stop()` closes
    every connection through it and stops listening (clients see their connections drop, then refused), `start()`
    listens again on the same port. `upstream_ports()` are the local ports of its connections to the server
    (the client_port pg_stat_activity shows for them)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self._sockets: list[socket.socket] = []
        self._upstream: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None

    def start(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))  # SO_REUSEADDR: the same port again
        listener.settimeout(0.1)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
                self._upstream.append(upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def upstream_ports(self) -> list[int]:
        with self._lock:
            return [s.getsockname()[1] for s in self._upstream if s.fileno() != -1]

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            sockets, self._sockets, self._upstream = self._sockets, [], []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
