"""django-q2 brokers that lose no task a worker took: every task taken is leased, not removed.

django-q2's Redis broker pops a task off the list (BLPOP): a cluster killed with tasks taken but not finished
(running, or prefetched into its local queue) loses them for good. Its ORM broker locks a taken row for
`retry` seconds, which must exceed the task timeout (an hour here), so a dead cluster's tasks come back an
hour later. Both are replaced by leases:

- LeasedRedis moves a task atomically from the queue to a list of the process that took it (BLMOVE), beside
  a key that says the process lives (a TTL of EVALSITE_TASK_LEASE_SECONDS, renewed by a thread); the monitor
  removes the task from that list when django-q2 acknowledges it. Any live cluster moves the lists of dead
  takers back to the head of the queue.
- LeasedOrm locks a taken row for EVALSITE_TASK_LEASE_SECONDS and renews the lock of the rows it holds while
  it lives; a dead taker's rows unlock and are taken again.

A task is thus delivered at least once, sometimes twice (a taker that stalls past its lease): the job runner
claims a job with a conditional update, so a second delivery does nothing (evalsite.jobs.services.job_run).
`job_ids_in_broker` lists the jobs whose task the broker holds (queued or leased): a Queued job with none lost
its task (a broker restarted without persistence) and is re-queued by evalsite.jobs.recovery.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.brokers.orm import ORM
from django_q.brokers.redis_broker import Redis
from django_q.signing import BadSignature, SignedPackage

from evalsite.jobs import processes

logger = logging.getLogger(__name__)

TASK_FUNCTION = "evalsite.jobs.tasks.run_job"


def read_task(payload) -> dict | None:
    """A queued task's package, or None when this deployment cannot read it (signed with another key)."""
    try:
        return SignedPackage.loads(payload)
    except (BadSignature, TypeError, ValueError):
        return None


class _Renewer(threading.Thread):
    """Renews a taking process's leases every third of the lease, for as long as the process lives."""

    def __init__(self, renew) -> None:
        super().__init__(name="task-lease-renewer", daemon=True)
        self.renew = renew

    def run(self) -> None:
        interval = max(1.0, settings.EVALSITE_TASK_LEASE_SECONDS / 3)
        while True:
            time.sleep(interval)
            try:
                self.renew()
            except Exception:  # a broker or database away for a moment: the next round tries again
                logger.warning("renewing task leases failed", exc_info=True)


class _LeaseState:
    """A leasing broker's own state, set up when it is made and again when django-q2 unpickles it in a worker."""

    def __init__(self, list_key: str | None = None):
        super().__init__(list_key)  # type: ignore[call-arg]
        self._setup()

    def __setstate__(self, state):
        super().__setstate__(state)  # type: ignore[misc]
        self._setup()

    def _setup(self) -> None:
        """Each leasing broker sets up its own state here (LeasedRedis: its key prefix; LeasedOrm: its leases)."""

    def _readable(self, tasks):
        """The taken tasks this deployment can read. One it cannot (signed with another SECRET_KEY: a queue
        another deployment filled, or one left from before the key changed) can never run here: it is dropped
        with a one-line warning, rather than handed to django-q2's pusher, which would log a traceback and fail
        it all the same. A job whose task was dropped is put back in the queue by recovery (task-lost)."""
        kept = []
        for ack, payload in tasks or ():
            if read_task(payload) is None:
                logger.warning("dropped a task this deployment cannot read (signed with another SECRET_KEY?)")
                self.fail(ack)  # type: ignore[attr-defined]
                continue
            kept.append((ack, payload))
        return kept or None


class LeasedRedis(_LeaseState, Redis):
    def _setup(self) -> None:
        self._prefix = self.list_key.removesuffix(":q")
        self._renewer_pid: int | None = None

    # --- keys ----------------------------------------------------------------------------------------------

    def _lease_key(self, taker: str) -> str:
        return f"{self._prefix}:lease:{taker}"

    def _alive_key(self, taker: str) -> str:
        return f"{self._prefix}:alive:{taker}"

    # --- taking and acknowledging --------------------------------------------------------------------------

    def dequeue(self):
        taker = processes.identity()
        self._ensure_renewer(taker)
        task = self.connection.blmove(self.list_key, self._lease_key(taker), 1, "LEFT", "RIGHT")
        if task:
            return self._readable([((self._lease_key(taker), task), task)])
        return None

    def acknowledge(self, task_id):
        if task_id:
            key, payload = task_id
            self.connection.lrem(key, 1, payload)

    def fail(self, task_id):
        self.acknowledge(task_id)

    def lock_size(self) -> int:
        return sum(self.connection.llen(key) for key in self._lease_keys())

    def _ensure_renewer(self, taker: str) -> None:
        """The first take of a process marks it alive (before anything is leased) and starts its renewer."""
        if self._renewer_pid == os.getpid():
            return
        self._mark_alive(taker)
        self._renewer_pid = os.getpid()

        def renew() -> None:
            self._mark_alive(taker)
            self.recover_dead_leases()

        _Renewer(renew).start()

    def _mark_alive(self, taker: str) -> None:
        self.connection.set(self._alive_key(taker), "1", ex=settings.EVALSITE_TASK_LEASE_SECONDS)

    # --- recovery ------------------------------------------------------------------------------------------

    def _lease_keys(self) -> list[str]:
        return [key.decode() for key in self.connection.scan_iter(match=f"{self._prefix}:lease:*", count=500)]

    def recover_dead_leases(self) -> int:
        """Move the tasks of takers that stopped renewing back to the head of the queue; how many moved."""
        moved = 0
        for key in self._lease_keys():
            taker = key.split(":lease:", 1)[1]
            if self.connection.exists(self._alive_key(taker)):
                continue
            while self.connection.lmove(key, self.list_key, "RIGHT", "LEFT") is not None:
                moved += 1
        if moved:
            logger.warning("returned %d task(s) of stopped workers to the queue", moved)
        return moved

    def payloads(self) -> list[bytes]:
        """Every task the broker holds: queued, and leased to live or dead takers."""
        found = list(self.connection.lrange(self.list_key, 0, -1))
        for key in self._lease_keys():
            found.extend(self.connection.lrange(key, 0, -1))
        return found


class LeasedOrm(_LeaseState, ORM):
    def _setup(self) -> None:
        self._held: set[int] = set()
        self._held_lock = threading.Lock()
        self._renewer_pid: int | None = None

    def _lease_end(self):
        return timezone.now() + timedelta(seconds=settings.EVALSITE_TASK_LEASE_SECONDS)

    def timeout(self, task):  # django-q2 calls this for the lock of a task it takes
        return self._lease_end()

    def dequeue(self):
        if self._renewer_pid != os.getpid():
            self._held, self._held_lock = set(), threading.Lock()
            self._renewer_pid = os.getpid()
            _Renewer(self._renew).start()
        tasks = self._readable(super().dequeue())
        if tasks:
            with self._held_lock:
                self._held.update(pk for pk, _payload in tasks)
        return tasks

    def _renew(self) -> None:
        close_old_connections()
        with self._held_lock:
            held = set(self._held)
        if not held:
            return
        rows = self.get_connection().filter(pk__in=held)
        rows.update(lock=self._lease_end())
        still = set(rows.values_list("pk", flat=True))
        with self._held_lock:
            self._held -= held - still  # acknowledged (deleted) since

    def recover_dead_leases(self) -> int:
        return 0  # an expired lock needs no move: the next dequeue takes the row

    def payloads(self) -> list[str]:
        return list(self.get_connection().filter(key=self.list_key).values_list("payload", flat=True))


def job_ids_in_broker(broker=None) -> set[str]:
    """The jobs whose run_job task the broker holds, queued or leased (unreadable packages are skipped)."""
    broker = broker or get_broker()
    found = set()
    for payload in broker.payloads():
        task = read_task(payload)
        if task is None:
            continue
        if task.get("func") == TASK_FUNCTION and task.get("args"):
            found.add(str(task["args"][0]))
    return found
