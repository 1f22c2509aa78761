"""`manage.py worker`: django-q2's qcluster, with a stop that finishes within seconds and loses no job.

django-q2's own SIGTERM handler sets a multiprocessing Event its sentinel process waits on. When the whole
process group gets the signal (a supervisor, a container stop, `kill -- -PGID`), the sentinel dies of it
while waiting, and Event.set() then blocks forever on the dead waiter: the parent hangs until SIGKILL. Here
the parent instead passes SIGTERM to every process of the cluster (each worker puts its running job back in
the queue, evalsite.jobs.worker), waits for them to exit (EVALSITE_WORKER_STOP_SECONDS plus a margin),
SIGKILLs what is left, and exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from django.conf import settings
from django_q.management.commands.qcluster import Command as QClusterCommand


def _process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process, from /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            table[int(entry.name)] = (int(fields[1]), fields[0])
    return table


def descendants(pid: int) -> list[int]:
    """Every live (not zombie) process below `pid`."""
    children: dict[int, list[int]] = {}
    for child, (parent, state) in _process_table().items():
        if state != "Z":
            children.setdefault(parent, []).append(child)
    found, frontier = [], [pid]
    while frontier:
        frontier = [child for parent in frontier for child in children.get(parent, [])]
        found += frontier
    return found


def _still_alive(pids: list[int]) -> list[int]:
    """Those of `pids` still running: a process whose parent died is re-parented, so it is followed by pid."""
    while True:  # reap our own exited children (the sentinel), or they stay zombies
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    table = _process_table()
    return [pid for pid in pids if pid in table and table[pid][1] != "Z"]


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def wait_for_the_database(write) -> None:
    """Return once the database answers; meanwhile say so every try (1, 2, 4 ... 10 s apart).

    A cluster cannot start without the database (django-q2's broker and the heartbeats read it), and a worker
    that exits at once, three times in a row, makes `manage.py serve` stop everything, its web server too,
    which would then answer nothing at all instead of 503 database-unavailable. So a worker started while the
    database is down waits for it. Only a database that cannot be reached is waited for
    (evalsite.unavailable); any other database error (no such table: not migrated) fails the start."""
    # Late: the command module is listed (manage.py help) before the database is configured for use.
    from django.db import DatabaseError, connection

    from evalsite.unavailable import database_unavailable

    pause = 1.0
    while True:
        try:
            connection.ensure_connection()
            connection.close()  # the cluster's processes are forked from this one: none may inherit it
            return
        except DatabaseError as exc:
            if not database_unavailable(exc):
                raise
            write(
                f"evalsite worker {os.getpid()}: the database cannot be reached ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())}); trying again in {pause:.0f} s"
            )
            connection.close()
        time.sleep(pause)
        pause = min(pause * 2, 10.0)


class Command(QClusterCommand):
    help = "Starts a worker cluster (django-q2's qcluster) that stops cleanly on SIGTERM or Ctrl-C."
    operator_only = "the operator's: runs a worker"

    def handle(self, *args, **options):
        from django_q.cluster import Cluster  # late: django_q reads Q_CLUSTER when it is imported

        stopping = False

        def shutdown(reason: str, code: int) -> None:
            nonlocal stopping
            if stopping:
                return
            stopping = True
            sys.stderr.write(f"evalsite worker {os.getpid()}: {reason}; stopping\n")
            cluster = descendants(os.getpid())
            _signal_all(cluster, signal.SIGTERM)
            deadline = time.monotonic() + settings.EVALSITE_WORKER_STOP_SECONDS + 3
            while (left := _still_alive(cluster)) and time.monotonic() < deadline:
                time.sleep(0.05)
            _signal_all(left, signal.SIGKILL)
            sys.stderr.flush()
            os._exit(code)  # not via atexit, which would join the cluster's processes again

        def on_signal(signum, frame) -> None:
            shutdown(signal.Signals(signum).name, 0)

        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        # Until the cluster exists, SIGTERM or Ctrl-C simply ends the wait.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
        signal.signal(signal.SIGINT, lambda signum, frame: sys.exit(0))
        wait_for_the_database(lambda line: (sys.stderr.write(line + "\n"), sys.stderr.flush()))
        q = Cluster()  # installs django-q2's handlers, which ours replace
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        q.start()
        if options.get("run_once", False):
            shutdown("--run-once", 0)
        while q.sentinel.is_alive():
            time.sleep(0.5)
        shutdown("the cluster's sentinel exited unexpectedly", 1)
