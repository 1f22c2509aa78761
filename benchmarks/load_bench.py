"""Concurrent load on the server as a user runs it (the concurrency issue's figures): `--clients` simulated users
for `--seconds` on a mix of golden-set pages, /search (FullText and Hybrid) and runs pages of the ClapNQ demo,
on SQLite and on PostgreSQL + Redis, then 30 simultaneous first Hybrid searches on a fresh collection.

    .venv/bin/python benchmarks/load_bench.py [--backend sqlite|postgres|both] [--clients 50] [--seconds 60]
        [--rounds R] [--baseline DIR] [--server serve|runserver|both] [--processes P] [--threads T] [--quick]

Per configuration (a backend, a server mode, this tree's code or --baseline's): a fresh temporary data directory
(for PostgreSQL also a fresh database evalsite_load_<pid>[_<n>] and an empty Redis database), `manage.py
migrate`, `collectstatic` and `load_demo` (whose login and API key are read from the data directory, where it
keeps them), then the server started as a user starts it, DEBUG off, on a free port, in its own process group:
`manage.py serve` (gunicorn gthread and a worker cluster under the supervisor; --processes / --threads set
EVALSITE_WEB_PROCESSES / EVALSITE_WEB_THREADS) or, for the before/after comparison, `manage.py runserver
--noreload` beside `manage.py worker`. Every configuration's server is started before the first load; then the
loads take turns, `--rounds` of them on each (round 1 in order, round 2 in reverse, ...), the other servers idle
meanwhile: the machine is shared, and what else runs on it changes from one minute to the next, so
configurations are compared side by side in one run, never across runs or one after the other.
`--baseline DIR` runs every configuration a second time on the code in DIR (another commit's tree, e.g.
`git archive <commit> | tar -x -C DIR`; the same interpreter and packages): a before/after in one run.

Nothing is warmed up beyond what a user's first requests do: one API call fetches the golden questions and
the run ids, each simulated user logs in once through /accounts/login/ (CSRF token, session cookie; LOGINS_AT_ONCE
at a time), then all of them start together. Each user is closed-loop (the next request as soon as the last one answered, no think
time) on a keep-alive connection of its own (httpx.AsyncClient, one per user, all in one asyncio loop), and
picks each request at random by the weights of MIX. The first request of each kind (the first searches load or
build the index) is reported separately and counted in the distribution too. gunicorn binds a connection to
the web process that accepted it, so the report gives the connections each process held when the load began
and each user's mean latency, fastest to slowest.

The load generator shares the machine's cores with the server: its own CPU time (getrusage) is reported beside
the server's, the database's (the backends of its own database and the server's background processes, not other
databases' on a shared server), the other configurations' idle servers', and the whole machine's, with the
server's CPU per request answered; the load average before and after the loads. The server is stopped with
SIGTERM to its process group; how long it took to be gone, process tree included, is reported. Everything
(processes, temporary directories, databases, Redis keys) is removed at the end, also on failure or Ctrl-C.
Exit status 0 when every target holds on every backend (this tree's code), 1 when one does not.

`--quick` runs the same steps at a tiny size, in well under a minute: a demo of QUICK_QUESTIONS answerable and as
many unanswerable ClapNQ questions (imported with `import_beir` before `load_demo`, which then evaluates those
instead of all 600), 3 users for 3 s who each begin with one request of every kind, 2 web processes, 3 first
searches on a fresh collection of 30 documents. The latency and throughput targets are printed, not held (too
few requests on a shared machine); every other target is: no error, no non-2xx answer, every kind answered, no
process left.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import re
import resource
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from bench_django import free_port

ROOT = Path(__file__).resolve().parent.parent
DEMO_CORPUS = ROOT / "demo" / "clapnq" / "corpus.jsonl"
COLLECTION = "clapnq"
API = "/lmkit/v1"
PAGE_SIZE = 50  # golden entries per page, in the API (its default page size) and on the dashboard
MIX: dict[str, int] = {  # request kind: weight (percent)
    "search FullText": 25,
    "search Hybrid": 15,
    "API golden-set page": 15,
    "dashboard golden-set page": 15,
    "dashboard runs": 10,
    "dashboard run detail": 10,
    "API runs": 10,
}
GOLDEN_KINDS = ("API golden-set page", "dashboard golden-set page")
TARGET_P95_MS = 300.0
QUICK_QUESTIONS = 15  # --quick: answerable questions in the demo, and as many unanswerable ones
TARGET_RPS = 4 * 15.5  # 4x the runserver throughput the issue measured
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
LOGINS_AT_ONCE = 4  # simulated users logging in at the same time, before the load
QUIET_CORES = 0.2  # --wait-quiet waits for the machine (the server idle) to keep fewer cores busy than this

# Set by the run itself: what the caller's environment says of these is dropped.
SERVER_CONTROLLED = {
    "DATABASE_URL", "EVALSITE_REDIS_URL", "EVALSITE_INDEX_DIR", "EVALSITE_DATA_DIR", "EVALSITE_BIND", "PORT",
    "SECRET_KEY", "SECRET_KEY_FILE", "DEBUG", "ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE",
}  # fmt: skip


# --- the world the simulated users see --------------------------------------------------------------------


@dataclass
class World:
    base: str
    api_key: str
    password: str
    questions: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    golden_pages: int = 1

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}


def request_for(kind: str, world: World, rng: random.Random) -> tuple[str, str, dict[str, Any] | None]:
    """(method, path, JSON body) of one request of this kind."""
    if kind.startswith("search "):
        body = {"collection_id": COLLECTION, "query": rng.choice(world.questions), "search_type": kind[7:]}
        return "POST", f"{API}/search", body
    if kind == "API golden-set page":
        return (
            "GET",
            f"{API}/search/golden-set?collection_id={COLLECTION}&page={rng.randint(1, world.golden_pages)}",
            None,
        )
    if kind == "dashboard golden-set page":
        return "GET", f"/collections/{COLLECTION}/?page={rng.randint(1, world.golden_pages)}", None
    if kind == "dashboard runs":
        return "GET", "/runs/", None
    if kind == "dashboard run detail":
        return "GET", f"/runs/{rng.choice(world.run_ids)}/", None
    if kind == "API runs":
        return "GET", f"{API}/search/evaluate/runs?collection_id={COLLECTION}", None
    raise ValueError(f"unknown request kind {kind!r}")


@dataclass
class Sample:
    kind: str
    started: float  # seconds since the load began
    ms: float
    status: int = 0  # 0: no response (a dropped connection or a timeout, named in `failure`)
    failure: str = ""
    server_ms: float | None = None  # a search's own `took_ms`
    index_waits: int = 0  # 503 index-building answers before this one (the index was being built by a job)
    user: int = -1  # the simulated user (its keep-alive connection) that sent it


async def timed(
    client: httpx.AsyncClient, kind: str, t0: float, method: str, path: str, body: Any = None, **kwargs: Any
) -> Sample:
    started = time.perf_counter()
    try:
        response = await client.request(method, path, json=body, **kwargs)
    except httpx.TransportError as exc:  # refused, reset, closed without an answer, timed out
        return Sample(kind, started - t0, (time.perf_counter() - started) * 1000, failure=type(exc).__name__)
    sample = Sample(kind, started - t0, (time.perf_counter() - started) * 1000, response.status_code)
    if path.endswith("/search") and response.status_code == 200:
        sample.server_ms = response.json().get("took_ms")
    return sample


async def until_indexed(
    client: httpx.AsyncClient, kind: str, t0: float, method: str, path: str, body: Any = None, **kwargs: Any
) -> Sample:
    """A search that may find its index still being built by a job (503 index-building): asked again every
    second (sooner than its Retry-After, to time the wait finely) until answered otherwise; the sample spans
    the whole wait and counts the 503s."""
    started = time.perf_counter()
    waits = 0
    while True:
        sample = await timed(client, kind, t0, method, path, body, **kwargs)
        if sample.status != 503 or time.perf_counter() - started > INDEX_WAIT_SECONDS:
            break
        waits += 1
        await asyncio.sleep(1.0)
    sample.started, sample.ms = started - t0, (time.perf_counter() - started) * 1000
    sample.index_waits = waits
    return sample


INDEX_WAIT_SECONDS = 120


async def log_in(client: httpx.AsyncClient, world: World) -> float:
    """Log in as a browser does (the form's CSRF token, then the session cookie); milliseconds it took."""
    started = time.perf_counter()
    await client.get("/accounts/login/")
    response = await client.post(
        "/accounts/login/",
        data={
            "username": "demo",
            "password": world.password,
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
        },
        headers={"Referer": f"{world.base}/accounts/login/"},
    )
    if response.status_code != 302 or "sessionid" not in client.cookies:
        raise RuntimeError(f"login failed: HTTP {response.status_code}")
    return (time.perf_counter() - started) * 1000


async def simulated_user(
    client: httpx.AsyncClient,
    world: World,
    seed: int,
    t0: float,
    deadline: float,
    samples: list[Sample],
    every_kind_first: bool = False,
) -> None:
    rng = random.Random(seed)
    kinds, weights = list(MIX), list(MIX.values())
    # --quick: one request of every kind first (each user in another order), so that every kind is exercised.
    first = kinds[seed % len(kinds) :] + kinds[: seed % len(kinds)] if every_kind_first else []
    while first or time.perf_counter() < deadline:
        kind = first.pop(0) if first else rng.choices(kinds, weights)[0]
        method, path, body = request_for(kind, world, rng)
        headers = world.auth if path.startswith(API) else None
        sample = await timed(client, kind, t0, method, path, body, headers=headers)
        sample.user = seed
        samples.append(sample)


def new_client(world: World, timeout: float) -> httpx.AsyncClient:
    # One connection, kept alive: a browser tab or an SDK client. Redirects are not followed (a dashboard
    # page answering 302 to the login page is a failure, not a page).
    return httpx.AsyncClient(
        base_url=world.base,
        timeout=timeout,
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
    )


# --- CPU accounting ---------------------------------------------------------------------------------------


def process_table() -> dict[int, tuple[int, str, float, str]]:
    """pid -> (parent pid, state, CPU seconds so far, reaped children included; name) of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            # Its own CPU and that of its children it has reaped: the PostgreSQL server's per-connection
            # backends come and go, and their time lands on the postmaster.
            cpu = sum(int(v) for v in fields[11:15]) / CLOCK_TICKS
            table[int(entry)] = (int(fields[1]), fields[0], cpu, stat[stat.index("(") + 1 : stat.rindex(")")])
    return table


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def machine_jiffies() -> tuple[int, int, int]:
    """(busy, stolen, total) jiffies of all cores since boot; stolen: the hypervisor ran someone else."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, steal = values[3] + values[4], values[7]  # idle + iowait; steal
    return sum(values) - idle - steal, steal, sum(values)


@dataclass
class CpuSnapshot:
    at: float
    machine: tuple[int, int, int]
    client: float
    by_pid: dict[int, tuple[str, float]]  # pid -> (role, CPU seconds); other processes' role: "other: name"


def cpu_snapshot(roles: dict[int, str], database_pids: Callable[[], dict[int, str]]) -> CpuSnapshot:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    table = process_table()
    known = {**roles, **database_pids(), os.getpid(): "load generator"}
    by_pid = {pid: (known.get(pid, f"other: {name}"), cpu) for pid, (_, _, cpu, name) in table.items()}
    return CpuSnapshot(time.perf_counter(), machine_jiffies(), usage.ru_utime + usage.ru_stime, by_pid)


def busy_cores(before: tuple[int, int, int], after: tuple[int, int, int], column: int = 0) -> float:
    """Cores busy (or stolen, column 1) on average between two readings of machine_jiffies()."""
    return (after[column] - before[column]) / max(1, after[2] - before[2]) * (os.cpu_count() or 1)


def server_cpu(rows: list[tuple[str, float]]) -> float:
    """CPU seconds of the server's processes and its database (Redis included) among cpu_report's rows."""
    return sum(seconds for who, seconds in rows if who.startswith(SERVER_ROLES))


SERVER_ROLES = ("supervisor", "web", "worker cluster", "database", "redis")


def cpu_report(before: CpuSnapshot, after: CpuSnapshot) -> list[tuple[str, float]]:
    """(who, CPU seconds) over the interval: each server role, the database, the load generator, the machine."""
    spent: dict[str, float] = {}
    others: dict[int, tuple[str, float]] = {}
    for pid, (role, seconds) in after.by_pid.items():
        used = seconds - before.by_pid.get(pid, (role, 0.0))[1]
        if role.startswith("other: "):
            others[pid] = (role, used)
        elif role != "load generator":  # getrusage counts it
            spent[role] = spent.get(role, 0.0) + used
    client = after.client - before.client
    machine = busy_cores(before.machine, after.machine) * (after.at - before.at)
    stolen = busy_cores(before.machine, after.machine, column=1) * (after.at - before.at)
    busiest = [(f"{role} (pid {pid})", used) for pid, (role, used) in others.items() if used >= 0.5]
    busiest = sorted(busiest, key=lambda item: -item[1])[:3]
    accounted = client + sum(spent.values()) + sum(used for _, used in busiest)
    return [
        *sorted(spent.items()),
        ("load generator (this script)", client),
        *busiest,
        # Per-process times are sampled per tick and may include stolen time: the rest can dip below zero.
        ("anything else (other processes, the kernel; +- sampling error)", machine - accounted),
        (f"whole machine ({os.cpu_count()} cores)", machine),
        ("stolen by the hypervisor (the cores ran another machine)", stolen),
    ]


DATABASE_ROLE = "database (its backends and the server's background processes)"


def database_processes(database: str | None) -> Callable[[], dict[int, str]]:
    """The PostgreSQL processes that work for this run (named PostgreSQL database; None: SQLite, none), found by
    their process titles: the backends connected to its database and the server's background processes
    (checkpointer, writers), not the backends of other databases on a shared server, nor the postmaster, whose
    reaped children's time is everyone's. Redis is counted whole (one server, its databases not told apart)."""
    ours = re.compile(rf"\b{re.escape(database)}\b") if database else None
    backend_of_another = re.compile(r"\d+\.\d+\.\d+\.\d+\(\d+\)|\[local\]|\(\d+\)")

    def find() -> dict[int, str]:
        found: dict[int, str] = {}
        if ours is None:
            return found
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    name = Path(f"/proc/{entry}/comm").read_text().strip()
                    if name == "redis-server":
                        found[int(entry)] = "redis (the whole server)"
                    elif name == "postgres":
                        title = command_line(int(entry))
                        if not title.startswith("postgres: "):
                            continue  # the postmaster
                        another = backend_of_another.search(title) or "autovacuum worker" in title
                        if ours.search(title) or not another:
                            found[int(entry)] = DATABASE_ROLE
        return found

    return find


# --- the server -------------------------------------------------------------------------------------------


@dataclass
class Stopped:
    seconds: float
    killed: list[int]  # still alive after the wait, SIGKILLed
    exited_before: list[int]  # exit codes of server roots that were gone before the stop (a crash)


class Server:
    """`manage.py serve`, or runserver beside a worker, each root in a process group of its own."""

    def __init__(self, mode: str, env: dict[str, str], log_path: Path, root: Path = ROOT) -> None:
        self.root = root  # the code it runs
        self.mode = mode
        self.env = env
        self.log_path = log_path
        self.roots: list[subprocess.Popen[bytes]] = []
        self.stopped: Stopped | None = None

    def start(self, bind: str) -> None:
        manage = [sys.executable, "manage.py"]
        commands = (
            [[*manage, "serve"]]
            if self.mode == "serve"
            else [[*manage, "runserver", bind, "--noreload"], [*manage, "worker"]]
        )
        with self.log_path.open("ab") as log:
            for argv in commands:
                self.roots.append(
                    subprocess.Popen(
                        argv,
                        cwd=self.root,
                        env=self.env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )

    def wait_ready(self, base: str, timeout: float = 120.0) -> float:
        started = time.perf_counter()
        while time.perf_counter() - started < timeout:
            for root in self.roots:
                if root.poll() is not None:
                    raise RuntimeError(f"the server exited (code {root.returncode}):\n{self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    return time.perf_counter() - started
            time.sleep(0.1)
        raise RuntimeError(f"no answer on {base}/healthz after {timeout:.0f} s:\n{self.log_tail()}")

    def roles(self) -> dict[int, str]:
        """Every live process of the server, by role: supervisor, web, worker cluster."""
        table = process_table()
        children: dict[int, list[int]] = {}
        for pid, (parent, state, _, _) in table.items():
            if state != "Z":
                children.setdefault(parent, []).append(pid)

        def tree(pid: int) -> list[int]:
            found, frontier = [pid], [pid]
            while frontier:
                frontier = [c for p in frontier for c in children.get(p, [])]
                found += frontier
            return found

        roles: dict[int, str] = {}
        if self.mode == "serve" and self.roots:
            roles[self.roots[0].pid] = "supervisor"
            for child in children.get(self.roots[0].pid, []):
                if "gunicorn" not in command_line(child):
                    roles.update(dict.fromkeys(tree(child), "worker cluster"))
                    continue
                roles[child] = "web: gunicorn arbiter"
                for worker in children.get(child, []):  # one line each: is the load spread over them?
                    roles.update(dict.fromkeys(tree(worker), f"web: gunicorn worker pid {worker}"))
        else:
            for root, role in zip(self.roots, ("web (runserver)", "worker cluster"), strict=False):
                roles.update(dict.fromkeys(tree(root.pid), role))
        return {pid: role for pid, role in roles.items() if pid in table}

    def stop(self, timeout: float = 30.0) -> Stopped:
        """SIGTERM to each root's process group; wait until every process of the server is gone (SIGKILL what
        is left after `timeout`). Idempotent."""
        if self.stopped is not None:
            return self.stopped
        exited_before = [root.returncode for root in self.roots if root.poll() is not None]
        processes = set(self.roles()) | {root.pid for root in self.roots}
        started = time.perf_counter()
        for root in self.roots:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(root.pid, signal.SIGTERM)
        alive = processes
        while alive and time.perf_counter() - started < timeout:
            time.sleep(0.02)
            for root in self.roots:
                root.poll()  # reap: a dead root must not be taken for a live one
            table = process_table()
            alive = {pid for pid in processes if pid in table and table[pid][1] != "Z"}
        seconds = time.perf_counter() - started
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for root in self.roots:
            with contextlib.suppress(subprocess.TimeoutExpired):
                root.wait(timeout=5)
        self.stopped = Stopped(seconds, sorted(alive), exited_before)
        return self.stopped

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


# --- fresh data: directory, database, Redis -----------------------------------------------------------------


@contextlib.contextmanager
def postgres_database(server_url: str, number: int = 0) -> Iterator[str]:
    """A new database on the server, dropped (connections and all) afterwards; `number` tells apart the
    databases of one run."""
    import psycopg
    from psycopg import sql

    name = f"evalsite_load_{os.getpid()}" + (f"_{number}" if number else "")
    statement = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with psycopg.connect(f"{server_url}/postgres", autocommit=True) as connection:
        connection.execute(statement)
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield f"{server_url}/{name}"
    finally:
        with psycopg.connect(f"{server_url}/postgres", autocommit=True) as connection:
            connection.execute(statement)


@contextlib.contextmanager
def redis_database(server_url: str, taken: set[str] | frozenset[str] = frozenset()) -> Iterator[str]:
    """An empty Redis database (12 down to 1: 13-15 are CI's parallel test processes', 0 everyone's default) that
    this run has not taken yet, emptied afterwards."""
    import redis

    for number in range(12, 0, -1):
        if f"{server_url}/{number}" in taken:
            continue
        client = redis.Redis.from_url(f"{server_url}/{number}")
        if client.dbsize() == 0:
            break
        client.close()
    else:
        raise RuntimeError(f"no empty Redis database among 1..12 on {server_url}")
    try:
        yield f"{server_url}/{number}"
    finally:
        client.flushdb()
        client.close()


def manage(env: dict[str, str], *argv: str, root: Path = ROOT) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *argv], cwd=root, env=env, capture_output=True, text=True
    )
    if result.returncode:
        raise RuntimeError(
            f"manage.py {' '.join(argv)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    return result.stdout


def server_environment(data_dir: Path, bind: str, args: argparse.Namespace) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SERVER_CONTROLLED}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "evalsite.settings",
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(40),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "EVALSITE_DATA_DIR": str(data_dir),
            "EVALSITE_BIND": bind,
            # the drills measure the server, not the per-key limits (a few keys call far past them)
            "EVALSITE_API_RATE": os.environ.get("EVALSITE_API_RATE", "1000000"),
            "EVALSITE_API_COSTLY_RATE": os.environ.get("EVALSITE_API_COSTLY_RATE", "1000000"),
        }
    )
    if args.processes:
        env["EVALSITE_WEB_PROCESSES"] = str(args.processes)
    if args.threads:
        env["EVALSITE_WEB_THREADS"] = str(args.threads)
    return env


# --- statistics and tables ----------------------------------------------------------------------------------


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest rank: the smallest value with at least q of the values at or below it."""
    if not sorted_values:
        return math.nan
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def ms(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.0f}"


def statuses(samples: list[Sample]) -> str:
    counts = Counter(str(s.status) for s in samples if s.status and not 200 <= s.status < 300)
    return ", ".join(f"{code}: {n}" for code, n in sorted(counts.items())) or "-"


def failures(samples: list[Sample]) -> str:
    counts = Counter(s.failure for s in samples if not s.status)
    return ", ".join(f"{name}: {n}" for name, n in sorted(counts.items())) or "0"


@dataclass
class Row:
    name: str
    samples: list[Sample]

    @property
    def latencies(self) -> list[float]:
        return sorted(s.ms for s in self.samples if s.status)

    @property
    def server_errors(self) -> int:
        return sum(1 for s in self.samples if s.status >= 500)

    @property
    def dropped(self) -> int:
        return sum(1 for s in self.samples if not s.status)

    def p(self, q: float) -> float:
        return percentile(self.latencies, q)

    @property
    def mean(self) -> float:
        latencies = self.latencies
        return sum(latencies) / len(latencies) if latencies else math.nan


def load_table(rows: list[Row], elapsed: float) -> str:
    lines = [
        "| request | share | count | non-2xx by status | 5xx | dropped / timeouts | mean ms | p50 ms | p95 ms "
        "| p99 ms | max ms | first ms | server p50 / p95 ms | req/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        first = min(row.samples, key=lambda s: s.started) if row.samples else None
        server = sorted(s.server_ms for s in row.samples if s.server_ms is not None)
        share = f"{MIX[row.name]}%" if row.name in MIX else "100%"
        lines.append(
            f"| {row.name} | {share} | {len(row.samples)} | {statuses(row.samples)} | {row.server_errors} "
            f"| {failures(row.samples)} | {ms(row.mean)} | {ms(row.p(0.5))} | {ms(row.p(0.95))} | {ms(row.p(0.99))} "
            f"| {ms(row.p(1.0))} | {ms(first.ms if first else None)} "
            f"| {f'{ms(percentile(server, 0.5))} / {ms(percentile(server, 0.95))}' if server else '-'} "
            f"| {len(row.samples) / elapsed if elapsed > 0 else math.nan:.1f} |"
        )
    return "\n".join(lines)


# --- one backend ------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    backend: str
    targets: list[tuple[str, str, bool]]
    server: str = "serve"
    throughput: float = 0.0
    name: str = ""
    baseline: bool = False  # ran --baseline's code


async def fetch_world(world: World) -> None:
    """What a client would fetch once: the golden questions and the run ids (API)."""
    async with httpx.AsyncClient(base_url=world.base, timeout=60, headers=world.auth) as client:
        golden = await client.get(
            f"{API}/search/golden-set", params={"collection_id": COLLECTION, "page_size": 1000}
        )
        golden.raise_for_status()
        entries = golden.json()
        world.questions = [e["question"] for e in entries["results"]]
        world.golden_pages = max(1, math.ceil(entries["count"] / PAGE_SIZE))
        runs = await client.get(f"{API}/search/evaluate/runs", params={"collection_id": COLLECTION})
        runs.raise_for_status()
        world.run_ids = [r["run_id"] for r in runs.json()["results"]]
    if not world.questions or not world.run_ids:
        raise RuntimeError("the demo has no golden questions or no runs")


@dataclass
class LoadResult:
    samples: list[Sample]
    elapsed: float  # seconds from the start until the last answer
    logins: list[float]  # milliseconds, sorted
    idle_cores: float  # cores busy on average in the 2 s before the load, the server idle (pooled: the mean)
    cpu: list[tuple[str, float]]  # (who, CPU seconds) during the load
    rounds: int = 1  # loads pooled into this one
    # Keep-alive connections each web process held when the load began (gunicorn binds a connection to the
    # process that accepted it: its requests queue behind that process's threads alone), most first.
    connections: list[tuple[int, ...]] = field(default_factory=list)  # one tuple per round


def connections_by_process(server: Server, port: int) -> tuple[int, ...]:
    """Established connections to `port` that each web process of the server holds (from /proc/net/tcp and
    each process's socket descriptors), most first; [] when there is a single web process."""
    inodes: dict[str, int] = {}
    for name in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
                fields = line.split()
                if (
                    int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01"
                ):  # local port; ESTABLISHED
                    inodes[fields[9]] = inodes.get(fields[9], 0) + 1
    counts = []
    for pid, role in server.roles().items():
        if not role.startswith("web: gunicorn worker"):
            continue
        held = 0
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        held += inodes.get(target[8:-1], 0)
        counts.append(held)
    return tuple(sorted(counts, reverse=True)) if len(counts) > 1 else ()


def user_means(samples: list[Sample]) -> list[float]:
    """Each simulated user's mean latency (ms), sorted: how evenly the server served its connections."""
    by_user: dict[int, list[float]] = {}
    for sample in samples:
        if sample.status and sample.user >= 0:
            by_user.setdefault(sample.user, []).append(sample.ms)
    return sorted(sum(values) / len(values) for values in by_user.values())


async def machine_at_rest(wait: float) -> float:
    """Cores busy over 2 s with the server idle (anything else running, another test run say, shows here);
    measured again for up to `wait` seconds until under QUIET_CORES."""
    deadline = time.perf_counter() + wait
    while True:
        start = machine_jiffies()
        await asyncio.sleep(2)
        cores = busy_cores(start, machine_jiffies())
        if cores < QUIET_CORES or time.perf_counter() >= deadline:
            return cores


async def run_load(
    world: World,
    args: argparse.Namespace,
    server: Server,
    database: Callable[[], dict[int, str]],
    idle: Callable[[], dict[int, str]] = dict,
) -> LoadResult:
    """One load on `server`; `idle`: the processes of the run's other servers (idle meanwhile), by role."""
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(new_client(world, args.timeout)) for _ in range(args.clients)
        ]
        # A few at a time: each login hashes the password (PBKDF2, most of a second of CPU here); 50 at once
        # queued behind the server's threads past the request timeout on a busy machine.
        gate = asyncio.Semaphore(LOGINS_AT_ONCE)

        async def gated_login(client: httpx.AsyncClient) -> float:
            async with gate:
                return await log_in(client, world)

        logins = sorted(await asyncio.gather(*(gated_login(c) for c in clients)))
        idle_cores = await machine_at_rest(args.wait_quiet)
        connections = [connections_by_process(server, int(world.base.rsplit(":", 1)[1]))]
        samples: list[Sample] = []
        roles = {**idle(), **server.roles()}
        before = cpu_snapshot(roles, database)
        seen: dict[int, tuple[str, float]] = {}
        sampler = asyncio.create_task(last_seen_cpu(roles, database, seen))
        t0 = time.perf_counter()
        await asyncio.gather(
            *(
                simulated_user(client, world, seed, t0, t0 + args.seconds, samples, args.quick)
                for seed, client in enumerate(clients)
            )
        )
        elapsed = time.perf_counter() - t0
        sampler.cancel()
        after = cpu_snapshot({**idle(), **server.roles()}, database)
        # A process that ended during the load (a database connection past its CONN_MAX_AGE, a restarted
        # worker) keeps the CPU it was last seen with.
        after.by_pid = {**seen, **after.by_pid}
    return LoadResult(
        samples, elapsed, logins, idle_cores, cpu_report(before, after), connections=connections
    )


async def last_seen_cpu(
    roles: dict[int, str], database: Callable[[], dict[int, str]], seen: dict[int, tuple[str, float]]
) -> None:
    """Every second until cancelled: each process's CPU seconds so far, by pid, into `seen`."""
    while True:
        seen.update(cpu_snapshot(roles, database).by_pid)
        await asyncio.sleep(1.0)


async def fresh_first_searches(world: World, args: argparse.Namespace) -> list[Sample]:
    """A new collection of `--fresh-documents` ClapNQ passages, then `--fresh-searches` Hybrid searches sent at
    once (their connections opened beforehand), before any other search on it. No request builds an index: the
    first ones may answer 503 index-building while the worker's job builds it, and ask again."""
    slug = f"fresh-{os.getpid()}"
    with DEMO_CORPUS.open() as corpus:
        rows = [json.loads(line) for line, _ in zip(corpus, range(args.fresh_documents), strict=False)]
    documents = [{"id": r["_id"], "title": r.get("title", ""), "text": r["text"]} for r in rows]
    async with httpx.AsyncClient(base_url=world.base, timeout=120, headers=world.auth) as client:
        created = await client.post(f"{API}/collections", json={"collection_id": slug, "name": "Fresh"})
        created.raise_for_status()
        added = await client.post(f"{API}/collections/{slug}/documents", json={"documents": documents})
        added.raise_for_status()
    rng = random.Random(1)
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(new_client(world, args.timeout))
            for _ in range(args.fresh_searches)
        ]
        # The connections open first, so that the searches go at once.
        await asyncio.gather(*(c.get("/healthz") for c in clients))
        t0 = time.perf_counter()
        return list(
            await asyncio.gather(
                *(
                    until_indexed(
                        client, "fresh Hybrid", t0, "POST", f"{API}/search",
                        {"collection_id": slug, "query": rng.choice(world.questions), "search_type": "Hybrid"},
                        headers=world.auth,
                    )
                    for client in clients
                )
            )
        )  # fmt: skip


def quick_demo(folder: Path) -> Path:
    """--quick: a BEIR folder of the demo's first QUICK_QUESTIONS answerable questions with their passages, as
    many unanswerable ones, and the first 30 other passages."""
    demo = DEMO_CORPUS.parent
    queries = [json.loads(line) for line in (demo / "queries.jsonl").open()]
    qrels = [line.rstrip("\n").split("\t") for line in (demo / "qrels.tsv").open()][1:]
    answerable = [q for q in queries if q.get("answerable", True)][:QUICK_QUESTIONS]
    unanswerable = [q for q in queries if not q.get("answerable", True)][:QUICK_QUESTIONS]
    ids = {q["_id"] for q in answerable}
    kept_qrels = [row for row in qrels if row[0] in ids]
    wanted = {row[1] for row in kept_qrels}
    corpus, others = [], 0
    for line in DEMO_CORPUS.open():
        passage = json.loads(line)
        if passage["_id"] in wanted or others < 30:
            others += passage["_id"] not in wanted
            corpus.append(passage)
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(p) + "\n" for p in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in answerable + unanswerable))
    (folder / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in kept_qrels)
    )
    return folder


def server_log_findings(log: Path) -> str:
    text = log.read_text(errors="replace")
    tracebacks = text.count("Traceback (most recent call last)")
    messages = Counter(re.findall(r"^(\w*(?:Error|Exception)\b[^\n]{0,120})", text, flags=re.MULTILINE))
    found = f"server log: {tracebacks} traceback(s)"
    if messages:
        found += "; most frequent: " + "; ".join(f"{m} (x{n})" for m, n in messages.most_common(3))
    return found


@dataclass
class Config:
    """One server to measure: a backend and a server mode, its data and world, and its loads (one per round)."""

    backend: str
    args: argparse.Namespace  # with args.server this configuration's own mode
    number: int  # its place among the run's configurations (names its PostgreSQL database)
    name: str = ""
    server: Server | None = None
    world: World | None = None
    database: str | None = None  # the PostgreSQL database's name; None on SQLite
    loads: list[LoadResult] = field(default_factory=list)
    root: Path = ROOT  # the code it runs: this tree's, or --baseline's
    env: dict[str, str] = field(default_factory=dict)  # set for its server and commands, over the run's


def start(config: Config, stack: contextlib.ExitStack, redis_taken: set[str]) -> None:
    """A fresh data directory (and database), the demo loaded, the server started and answering, the world
    fetched. Everything is undone by `stack`."""
    backend, args = config.backend, config.args
    database = "PostgreSQL + Redis" if backend == "postgres" else "SQLite, ORM broker"
    print(f"\n## {config.name}: {database}, {args.server}\n")
    data_dir = Path(tempfile.mkdtemp(prefix=f"evalsite-load-{backend}-"))
    stack.callback(shutil.rmtree, data_dir, ignore_errors=True)
    port = free_port()
    env = {**server_environment(data_dir, f"127.0.0.1:{port}", args), **config.env}
    if backend == "postgres":
        env["DATABASE_URL"] = stack.enter_context(postgres_database(args.postgres_url, config.number))
        config.database = env["DATABASE_URL"].rsplit("/", 1)[1]
        env["EVALSITE_REDIS_URL"] = stack.enter_context(redis_database(args.redis_url, redis_taken))
        redis_taken.add(env["EVALSITE_REDIS_URL"])
    print(
        f"data directory {data_dir}; database {env.get('DATABASE_URL', 'SQLite in the data directory')}; "
        f"broker {env.get('EVALSITE_REDIS_URL', 'the database (ORM)')}"
    )
    started = time.perf_counter()
    root = config.root
    manage(env, "migrate", "--noinput", root=root)
    manage(env, "collectstatic", "--noinput", "-v0", root=root)
    if args.quick:  # load_demo finds the collection there and evaluates these questions only
        folder = quick_demo(data_dir / "quick-demo")
        manage(env, "import_beir", str(folder), "--cluster", "demo", "--tenant", "demo",
               "--collection", COLLECTION, "--name", "ClapNQ", root=root)  # fmt: skip
    manage(env, "load_demo", root=root)
    world = World(
        base=f"http://127.0.0.1:{port}",
        api_key=(data_dir / "demo_api_key").read_text().strip(),
        password=(data_dir / "demo_password").read_text().strip(),
    )
    print(f"migrate + collectstatic + load_demo: {time.perf_counter() - started:.1f} s")

    server = Server(args.server, env, data_dir / "server.log", root)
    if args.keep_log:  # after the stop, before the directory goes
        stack.callback(
            shutil.copy,
            server.log_path,
            Path(args.keep_log)
            / f"server-{backend}-{args.server}{'-baseline' if config.root != ROOT else ''}.log",
        )
    stack.callback(server.stop)  # on failure or Ctrl-C too; a no-op after the measured stop
    server.start(f"127.0.0.1:{port}")
    with logged_on_failure(server):
        ready = server.wait_ready(world.base)
        banner = [line for line in server.log_tail(200).splitlines() if "evalsite serve:" in line]
        print(f"server ready in {ready:.1f} s: {banner[0] if banner else args.server}")
        roles = Counter(server.roles().values())
        print("server processes: " + ", ".join(f"{role} x{n}" for role, n in sorted(roles.items())))
        asyncio.run(fetch_world(world))
    config.server, config.world = server, world


@contextlib.contextmanager
def logged_on_failure(server: Server) -> Iterator[None]:
    try:
        yield
    except Exception:
        print(f"\nthe server's log, last lines:\n{server.log_tail()}", file=sys.stderr)
        raise


def load_once(config: Config, turn: str, configs: list[Config]) -> None:
    """One round of the load on this configuration's server, the others' idle."""
    assert config.server is not None and config.world is not None

    def idle() -> dict[int, str]:
        return {
            pid: f"idle meanwhile: {other.name}'s server (all its processes)"
            for other in configs
            if other is not config and other.server is not None
            for pid in other.server.roles()
        }

    print(
        f"\n{turn}: {config.name}, {config.args.clients} users x {config.args.seconds:.0f} s ...", flush=True
    )
    with logged_on_failure(config.server):
        load = asyncio.run(
            run_load(config.world, config.args, config.server, database_processes(config.database), idle)
        )
    config.loads.append(load)
    print(f"  {round_line(load)}\n  {spread_line(load)}", flush=True)


def finish(config: Config) -> Outcome:
    """The fresh collection's first searches, the stop, and the report of every round's load."""
    assert config.server is not None and config.world is not None
    with logged_on_failure(config.server):
        try:
            fresh = asyncio.run(fresh_first_searches(config.world, config.args))
        except httpx.HTTPError as exc:  # creating the collection failed: reported, the load's figures kept
            fresh = [Sample("fresh Hybrid", 0.0, 0.0, failure=f"setup failed ({type(exc).__name__}: {exc})")]
    stopped = config.server.stop()
    findings = server_log_findings(config.server.log_path)
    print(
        f"\n## {config.name}: the load ({len(config.loads)} round(s) pooled), the fresh collection, the stop"
    )
    outcome = report(config.args, pooled(config.loads), fresh, stopped, findings, config.backend)
    outcome.name, outcome.baseline = config.name, config.root != ROOT
    return outcome


def pooled(loads: list[LoadResult]) -> LoadResult:
    """Several rounds' loads as one: their samples, their time, their CPU added up."""
    if len(loads) == 1:
        return loads[0]
    cpu: dict[str, float] = {}
    for load in loads:
        for who, seconds in load.cpu:
            cpu[who] = cpu.get(who, 0.0) + seconds
    return LoadResult(
        samples=[s for load in loads for s in load.samples],
        elapsed=sum(load.elapsed for load in loads),
        logins=sorted(t for load in loads for t in load.logins),
        idle_cores=sum(load.idle_cores for load in loads) / len(loads),
        cpu=list(cpu.items()),
        rounds=len(loads),
        connections=[held for load in loads for held in load.connections],
    )


def cpu_of(load: LoadResult, prefix: str) -> float:
    return sum(seconds for who, seconds in load.cpu if who.startswith(prefix))


def round_line(load: LoadResult) -> str:
    overall = Row("all", load.samples)
    server = server_cpu(load.cpu)
    return (
        f"{len(load.samples) / load.elapsed:.1f} requests/s, p50 {ms(overall.p(0.5))} ms, p95 {ms(overall.p(0.95))} "
        f"ms, {overall.server_errors} 5xx, {overall.dropped} dropped; server CPU {server:.1f} s "
        f"({server / max(1, len(load.samples)) * 1000:.1f} ms a request); machine "
        f"{cpu_of(load, 'whole machine') / load.elapsed:.2f} cores busy, of which other processes "
        f"{others_cpu(load) / load.elapsed:.2f}"
    )


def held_text(load: LoadResult) -> str:
    """The connections each web process held, e.g. 22/14/8/6 (each round's, separated by ;)."""
    return "; ".join("/".join(map(str, held)) for held in load.connections if held) or "-"


def user_spread(load: LoadResult) -> str:
    means = user_means(load.samples)
    return " / ".join(ms(v) for v in (means[0], percentile(means, 0.5), means[-1])) if means else "-"


def spread_line(load: LoadResult) -> str:
    """How evenly the server served its users: the keep-alive connections each web process held, and each
    user's mean latency (a user on a process holding many connections waits behind all of theirs)."""
    means = user_means(load.samples)
    held = (
        f"keep-alive connections per web process when the load began: {held_text(load)}; "
        if any(load.connections)
        else ""
    )
    if not means:
        return held + "no user answered"
    return (
        f"{held}each user's mean latency: fastest {ms(means[0])} ms, median {ms(percentile(means, 0.5))} ms, "
        f"slowest {ms(means[-1])} ms"
    )


def others_cpu(load: LoadResult) -> float:
    """CPU seconds of everything on the machine but the server (and its database) and the load generator."""
    return cpu_of(load, "whole machine") - server_cpu(load.cpu) - cpu_of(load, "load generator")


def side_by_side(configs: list[Config], order: list[tuple[int, Config]]) -> str:
    """Per-round figures of every configuration, in the order the rounds ran."""
    columns = [(f"{config.name}, round {number + 1}", config.loads[number]) for number, config in order]
    lines = [
        "| p50 / p95 ms | " + " | ".join(name for name, _ in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for kind in [*MIX, "all"]:
        cells = []
        for _, load in columns:
            row = Row(kind, [s for s in load.samples if kind == "all" or s.kind == kind])
            cells.append(f"{ms(row.p(0.5))} / {ms(row.p(0.95))}")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    figures: list[tuple[str, Callable[[LoadResult], str]]] = [
        ("requests/s", lambda load: f"{len(load.samples) / load.elapsed:.1f}"),
        (
            "5xx, dropped",
            lambda load: f"{Row('all', load.samples).server_errors}, {Row('all', load.samples).dropped}",
        ),
        (
            "server + database CPU ms a request",
            lambda load: f"{server_cpu(load.cpu) / max(1, len(load.samples)) * 1000:.1f}",
        ),
        ("server + database cores busy", lambda load: f"{server_cpu(load.cpu) / load.elapsed:.2f}"),
        ("load generator cores busy", lambda load: f"{cpu_of(load, 'load generator') / load.elapsed:.2f}"),
        (
            "other processes' cores busy (the shared machine)",
            lambda load: f"{others_cpu(load) / load.elapsed:.2f}",
        ),
        ("machine cores busy before the load (server idle)", lambda load: f"{load.idle_cores:.2f}"),
        ("keep-alive connections per web process", held_text),
        ("users' mean latency ms: fastest / median / slowest", user_spread),
    ]
    for name, figure in figures:
        lines.append(f"| {name} | " + " | ".join(figure(load) for _, load in columns) + " |")
    return "\n".join(lines)


def report(
    args: argparse.Namespace,
    load: LoadResult,
    fresh: list[Sample],
    stopped: Stopped,
    findings: str,
    backend: str,
) -> Outcome:
    rows = [Row(kind, [s for s in load.samples if s.kind == kind]) for kind in MIX]
    overall = Row("all", load.samples)
    throughput = len(load.samples) / load.elapsed
    print(
        f"\n{args.clients} users logged in (one POST /accounts/login/ each, before the clock): "
        f"p50 {ms(percentile(load.logins, 0.5))} ms, max {ms(load.logins[-1])} ms\n"
        f"\n### Load: {args.clients} closed-loop users x {args.seconds:.0f} s"
        + (f" x {load.rounds} rounds, pooled" if load.rounds > 1 else "")
        + f" ({load.elapsed:.1f} s until the last answer)\n"
    )
    print(load_table([*rows, overall], load.elapsed))
    print(f"\n{spread_line(load)}")
    print(
        "\n### CPU during the load (the load generator shares the cores with the server)\n\n"
        "| who | CPU s | cores busy on average |\n|---|---|---|\n"
        f"| machine in the 2 s before the load (server idle){'; the mean of the rounds' if load.rounds > 1 else ''} "
        f"| - | {load.idle_cores:.2f} |"
    )
    for who, seconds in load.cpu:
        print(f"| {who} | {seconds:.1f} | {seconds / load.elapsed:.2f} |")
    print(
        f"\n### {len(fresh)} simultaneous first Hybrid searches on a fresh collection "
        f"of {args.fresh_documents} ClapNQ documents\n"
    )
    print(load_table([Row("fresh Hybrid", fresh)], max(s.started + s.ms / 1000 for s in fresh)))
    waited = [s for s in fresh if s.index_waits]
    print(
        f"\n{len(waited)} of {len(fresh)} answered 503 index-building first (their index was being built by the "
        f"worker; asked again every second), up to {max((s.index_waits for s in fresh), default=0)} times; "
        "the latency above spans the wait"
    )
    for failure in sorted({s.failure for s in fresh if s.failure.startswith("setup")}):
        print(f"\n{failure}")
    print(
        "\nserver stop (SIGTERM to its process group, until every process of it is gone): "
        f"{stopped.seconds:.2f} s; "
        + (f"SIGKILLed {stopped.killed}" if stopped.killed else "no process left")
    )
    print(findings)

    fulltext = rows[list(MIX).index("search FullText")]
    fresh_errors = sum(1 for s in fresh if s.status != 200)
    p95 = f"p95 < {TARGET_P95_MS:.0f} ms"
    # A dashboard page answering 302 to the login page, or a 404, is a failure too, not a page.
    other = sum(1 for s in load.samples if s.status and not 200 <= s.status < 300 and s.status < 500)
    unanswered = [row.name for row in rows if not any(200 <= s.status < 300 for s in row.samples)]
    speed = [
        (f"/search FullText {p95}", f"{ms(fulltext.p(0.95))} ms", fulltext.p(0.95) < TARGET_P95_MS),
        *(
            (f"{row.name} {p95}", f"{ms(row.p(0.95))} ms", row.p(0.95) < TARGET_P95_MS)
            for row in rows
            if row.name in GOLDEN_KINDS
        ),
        (f"throughput >= {TARGET_RPS:.0f} req/s", f"{throughput:.1f} req/s", throughput >= TARGET_RPS),
    ]
    targets = [
        ("0 server errors (5xx)", str(overall.server_errors), overall.server_errors == 0),
        ("0 dropped connections / timeouts", str(overall.dropped), overall.dropped == 0),
        ("0 other non-2xx answers (4xx, redirects)", str(other), other == 0),
        ("every request kind answered 2xx", ", ".join(unanswered) or "all", not unanswered),
        *([] if args.quick else speed),
        (
            f"{len(fresh)} first Hybrid searches on a fresh collection: 0 errors",
            str(fresh_errors),
            not fresh_errors,
        ),
        (
            "server up until the stop",
            f"exit codes {stopped.exited_before}" if stopped.exited_before else "up",
            not stopped.exited_before,
        ),
        ("no process left after the stop", str(len(stopped.killed)), not stopped.killed),
    ]
    print(f"\n### Targets ({backend})\n\n| target | measured | holds |\n|---|---|---|")
    for name, value, holds in targets:
        print(f"| {name} | {value} | {'yes' if holds else '**no**'} |")
    for name, value, holds in speed if args.quick else []:
        print(f"| {name} | {value} | {'yes' if holds else 'no'} (not held in --quick) |")
    return Outcome(backend, targets, args.server, throughput)


def code_version() -> str:
    """The commit measured, and whether the working tree differs from it (the server runs the working tree)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git)"
    return f"commit {commit}" + (
        f", {len(changed)} tracked file(s) modified in the working tree" if changed else ""
    )


def header(args: argparse.Namespace) -> str:
    """The command line and the settings the run uses, as the report's first lines."""
    if args.server in ("serve", "both"):
        processes = args.processes or os.environ.get(
            "EVALSITE_WEB_PROCESSES", "2 per core, at most 8 (default)"
        )
        threads = args.threads or os.environ.get("EVALSITE_WEB_THREADS", "2 (default)")
        server = (
            f"manage.py serve (gunicorn gthread, {processes} processes x {threads} threads; 1 worker cluster)"
        )
    if args.server in ("runserver", "both"):
        runserver = "manage.py runserver --noreload (a thread per connection) beside manage.py worker"
        server = runserver if args.server == "runserver" else f"{server}, then {runserver}"
    passed = sorted(
        f"{k}={v}"
        for k, v in os.environ.items()
        if k.startswith(("EVALSITE_", "DATABASE_CONN", "GUNICORN_")) and k not in SERVER_CONTROLLED
    )
    return "\n".join(
        [
            f"# evalsite load benchmark\n\n    {shlex.join(sys.orig_argv)}\n",
            f"- code: {code_version()}",
            f"- server: {server}, DEBUG off",
            f"- settings from the environment: {', '.join(passed) or 'none (the defaults)'}",
            f"- backend: {args.backend}; {args.clients} users, {args.seconds:.0f} s, request timeout {args.timeout:.0f} s",
            f"- {max(1, args.rounds)} round(s); every server started first, then the loads taking turns"
            + (f"; beside this tree, the code in {args.baseline} (baseline)" if args.baseline else ""),
            f"- mix: {', '.join(f'{kind} {weight}%' for kind, weight in MIX.items())}",
            f"- machine: {os.cpu_count()} cores, shared by the server, its database and this load generator (one "
            "asyncio loop, httpx): see the CPU tables",
            "- no warm-up beyond a user's own first requests: one API call for the golden questions and the run ids, "
            "one login per user; the first searches load the index load_demo saved (first ms: the first request of "
            "each kind)",
        ]
    )


def uptime() -> str:
    """The load average, as `uptime` prints it: how busy the shared machine was."""
    try:
        one, five, fifteen = Path("/proc/loadavg").read_text().split()[:3]
    except (OSError, ValueError):
        return "load average unknown"
    return f"load average {one}, {five}, {fifteen}"


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends the run as Ctrl-C does: through every cleanup."""
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--server",
        choices=["serve", "runserver", "both"],
        default="serve",
        help="both: serve, then runserver, on each backend, and the throughput of one against the other",
    )
    parser.add_argument(
        "--processes", type=int, help="EVALSITE_WEB_PROCESSES for serve (its default: 2 per core, at most 8)"
    )
    parser.add_argument("--threads", type=int, help="EVALSITE_WEB_THREADS for serve (its default: 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a request counts as lost")
    parser.add_argument("--fresh-documents", type=int, default=300)
    parser.add_argument("--fresh-searches", type=int, default=30)
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each load, wait up to this long for the rest of the machine to be idle (a shared machine)",
    )
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        help="also run every configuration on the code in DIR (another commit's tree, e.g. `git archive <commit> "
        "| tar -x -C DIR`), taking turns with this tree's: a before/after in one run",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="loads on each configuration, taking turns (ABBA...); every server is started before the first",
    )
    parser.add_argument("--postgres-url", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379")
    parser.add_argument("--keep-log", metavar="DIR", help="copy each server's log (access log included) here")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the same steps at a tiny size (a small demo, 3 users for 3 s, 2 web processes); speed not held",
    )
    args = parser.parse_args()
    if args.quick:
        args.clients, args.seconds, args.fresh_documents, args.fresh_searches = 3, 3.0, 30, 3
        args.processes = args.processes or 2

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored (`&`)
    print(header(args))
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    servers = ["serve", "runserver"] if args.server == "both" else [args.server]
    roots = [ROOT, Path(args.baseline).resolve()] if args.baseline else [ROOT]
    configs = [
        Config(backend, argparse.Namespace(**{**vars(args), "server": server}), number, root=root)
        for number, (backend, server, root) in enumerate(
            (b, s, r) for b in backends for s in servers for r in roots
        )
    ]
    for config in configs:
        config.name = config.backend if len(servers) == 1 else f"{config.backend} {config.args.server}"
        if args.baseline:
            config.name += ", baseline" if config.root != ROOT else ", this tree"
    # Every server is up before the first load, and the loads take turns (round 1 in order, round 2 in reverse,
    # ...): a busy spell of the shared machine falls on every configuration, not on whichever ran then.
    order = [
        (number, config)
        for number in range(max(1, args.rounds))
        for config in (configs if number % 2 == 0 else configs[::-1])
    ]
    try:
        with contextlib.ExitStack() as stack:
            redis_taken: set[str] = set()
            for config in configs:
                start(config, stack, redis_taken)
            print(f"\n## The loads, taking turns ({uptime()})")
            for turn, (number, config) in enumerate(order):
                load_once(config, f"turn {turn + 1} of {len(order)} (round {number + 1})", configs)
            print(f"\nafter the loads: {uptime()}")
            outcomes = [finish(config) for config in configs]
    except KeyboardInterrupt:
        print("\ninterrupted: what the run started is stopped and removed", file=sys.stderr)
        sys.exit(130)
    if len(order) > 1:
        print(
            "\n## Side by side, in the order the loads ran (CPU: the server's processes and its database's, per "
            "request answered; other processes: the rest of the shared machine)\n"
        )
        print(side_by_side(configs, order))
    if len(outcomes) > 1:
        names = [o.name for o in outcomes]
        print("\n## Summary\n\n| target | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(outcomes))
        for number, (name, _, _) in enumerate(outcomes[0].targets):
            cells = [
                f"{o.targets[number][1]} ({'yes' if o.targets[number][2] else '**no**'})" for o in outcomes
            ]
            print(f"| {name} | " + " | ".join(cells) + " |")
    if len(servers) > 1:
        print()
        for backend in backends:
            by_server = {o.server: o.throughput for o in outcomes if o.backend == backend and not o.baseline}
            ratio = by_server["serve"] / by_server["runserver"] if by_server["runserver"] else float("inf")
            print(
                f"{backend}: serve {by_server['serve']:.1f} req/s, runserver {by_server['runserver']:.1f} req/s: "
                f"{ratio:.1f}x"
            )
    ours = [o for o in outcomes if not o.baseline]
    served = [o for o in ours if o.server == "serve"] or ours
    sys.exit(0 if all(holds for o in served for _, _, holds in o.targets) else 1)


if __name__ == "__main__":
    main()
