"""`manage.py serve`: evalsite in production: gunicorn (threads) and worker clusters under one supervisor.

It first collects the static files when they changed since the last collection (evalsite.static_files).

The supervisor starts the web server (gunicorn's gthread workers: processes for the cores, threads for
requests that wait on the database or a model) and EVALSITE_WORKER_CLUSTERS `manage.py worker` clusters, each
in a process group of its own; it restarts a child that dies (with a growing pause, and gives up on one that
cannot start at all), and on SIGTERM or SIGINT stops them all: SIGTERM to each group, SIGKILL to what is left
after --stop-timeout seconds (9 by default, inside the 10 s a container stop allows), then a last recovery
round so that no job is left Running. A child learns of the supervisor's death (PR_SET_PDEATHSIG), so even a
SIGKILL of the supervisor leaves no orphan serving on.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evalsite.jobs.services import jobs_recover
from evalsite.static_files import collect_static

PR_SET_PDEATHSIG = 1
FAST_EXIT_SECONDS = 5.0  # a child that exits this soon after its start failed to start
GIVE_UP_AFTER = 3  # failed starts in a row


def _die_with_parent() -> None:
    """In the child, before exec: receive SIGTERM when the supervisor dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Child:
    def __init__(self, name: str, argv: list[str]) -> None:
        self.name = name
        self.argv = argv
        self.process: subprocess.Popen | None = None
        self.started_at = 0.0
        self.failed_starts = 0
        self.restart_at: float | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, start_new_session=True, preexec_fn=_die_with_parent)
        self.started_at = time.monotonic()
        self.restart_at = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal_group(self, signum: int) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signum)

    def group_alive(self) -> bool:
        if self.process is None:
            return False
        self.process.poll()  # reap the leader, so a dead leader is not taken for a live group member
        try:
            os.killpg(self.process.pid, 0)
        except ProcessLookupError:
            return False
        return self.process.returncode is None or _group_has_live_members(self.process.pid)


def _group_has_live_members(pgid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    stat = handle.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


class Command(BaseCommand):
    help = (
        "Runs evalsite for production: gunicorn with threads and worker clusters under one supervisor that "
        "restarts what dies and stops everything cleanly on SIGTERM (see docs/operations.md, Running in production)."
    )
    operator_only = "the operator's: runs the server"

    def add_arguments(self, parser) -> None:
        parser.add_argument("--bind", default=None, help="address:port (EVALSITE_BIND; 127.0.0.1:$PORT)")
        parser.add_argument(
            "--web-processes", type=int, default=None, help="EVALSITE_WEB_PROCESSES (2 per core, at most 8)"
        )
        parser.add_argument(
            "--threads", type=int, default=None, help="per web process; EVALSITE_WEB_THREADS (2)"
        )
        parser.add_argument(
            "--worker-clusters",
            type=int,
            default=None,
            help="manage.py worker processes; EVALSITE_WORKER_CLUSTERS (1)",
        )
        parser.add_argument(
            "--stop-timeout", type=float, default=9.0, help="seconds before SIGKILL on stop (9)"
        )

    def handle(self, *args, **options) -> None:
        bind = options["bind"] or settings.EVALSITE_BIND
        processes = options["web_processes"] or settings.EVALSITE_WEB_PROCESSES
        threads = options["threads"] or settings.EVALSITE_WEB_THREADS
        clusters = (
            settings.EVALSITE_WORKER_CLUSTERS
            if options["worker_clusters"] is None
            else options["worker_clusters"]
        )
        if min(processes, threads) < 1 or clusters < 0:
            raise CommandError(
                "--web-processes and --threads must be at least 1, --worker-clusters at least 0"
            )
        # The web processes learn how many they are (each counts its share of a key's API budget without Redis).
        os.environ["EVALSITE_WEB_PROCESSES"] = str(processes)
        web = [
            sys.executable, "-m", "gunicorn", "evalsite.wsgi:application",
            "--bind", bind,
            "--worker-class", "evalsite.gunicorn_worker.ThreadWorker",  # gthread, stopping cleanly
            "--workers", str(processes),
            "--threads", str(threads),
            "--timeout", str(settings.EVALSITE_REQUEST_TIMEOUT),
            "--graceful-timeout", str(max(1, int(options["stop_timeout"]) - 1)),
            # Longer than clients' and proxies' own idle limits (httpx 5 s, browsers, nginx 75 s), so the client
            # side closes an idle connection first: a server closing it as a request arrives drops that request.
            "--keep-alive", "90",
            # gunicorn's largest request line (its default is 4094 bytes, which 450 CJK characters of a golden-set
            # text filter pass, percent-encoded); a longer one is its 414, documented on every operation.
            "--limit-request-line", "8190",
            "--preload",
            "--config", "python:evalsite.gunicorn_hooks",  # warms the indexes before the processes fork
            "--forwarded-allow-ips", settings.EVALSITE_FORWARDED_ALLOW_IPS,
            "--no-control-socket",
        ]  # fmt: skip
        if settings.EVALSITE_ACCESS_LOG:
            web += ["--access-logfile", "-"]
        manage = [sys.executable, os.path.join(settings.BASE_DIR, "manage.py")]
        children = [Child("web", web)] + [
            Child(f"worker-{i + 1}", [*manage, "worker"]) for i in range(clusters)
        ]

        stop_reason: list[str] = []

        def on_signal(signum, frame) -> None:
            stop_reason.append(signal.Signals(signum).name)

        # The pages name the static files by their hashed names (the manifest): collected before anything serves.
        if collect_static():
            self.stderr.write(f"evalsite serve: static files collected into {settings.STATIC_ROOT}")
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        for child in children:
            child.start()
        self.stderr.write(
            f"evalsite serve: http://{bind}/ ({processes} web processes x {threads} threads, "
            f"{clusters} worker cluster(s) of {settings.Q_CLUSTER['workers']}); SIGTERM or Ctrl-C stops"
        )
        code = self._supervise(children, stop_reason)
        self._stop(children, options["stop_timeout"], stop_reason[0] if stop_reason else "a child failed")
        if code:
            sys.exit(code)

    def _supervise(self, children: list[Child], stop_reason: list[str]) -> int:
        while not stop_reason:
            now = time.monotonic()
            for child in children:
                if child.alive():
                    continue
                if child.restart_at is None:  # it just exited: note it, schedule a restart
                    code = child.process.returncode if child.process else None
                    quick = now - child.started_at < FAST_EXIT_SECONDS
                    child.failed_starts = child.failed_starts + 1 if quick else 0
                    if child.failed_starts >= GIVE_UP_AFTER:
                        self.stderr.write(
                            f"evalsite serve: {child.name} failed to start {GIVE_UP_AFTER} times in a row (exit "
                            f"code {code}; see its output above); stopping"
                        )
                        return 1
                    pause = min(30.0, 2.0**child.failed_starts)
                    self.stderr.write(
                        f"evalsite serve: {child.name} exited (code {code}); restarting in {pause:.0f} s"
                    )
                    child.restart_at = now + pause
                elif now >= child.restart_at:
                    child.start()
            time.sleep(0.2)
        return 0

    def _stop(self, children: list[Child], timeout: float, reason: str) -> None:
        self.stderr.write(f"evalsite serve: {reason}; stopping")
        for child in children:
            child.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while any(c.group_alive() for c in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        for child in children:
            if child.group_alive():
                self.stderr.write(f"evalsite serve: {child.name} did not stop in {timeout:.0f} s; killing it")
                child.signal_group(signal.SIGKILL)
        for child in children:
            if child.process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.process.wait(timeout=2)
        self._recover_jobs()

    def _recover_jobs(self) -> None:
        """Jobs whose worker on this host is gone (killed above) go back to the queue now, not when their
        heartbeat goes stale."""
        try:
            jobs_recover()
        except Exception as exc:  # the database may be what is down; the workers' recovery does it later
            self.stderr.write(f"evalsite serve: job recovery at stop failed: {type(exc).__name__}: {exc}")
