"""The life of a django-q2 worker process: its heartbeat, recovery rounds, and a stop that loses no job.

django-q2 sends `post_spawn` in each worker process it starts; `on_worker_spawn` (connected in
GoldensetConfig.ready) then
- records the process in the Worker table and beats there every EVALSITE_JOB_HEARTBEAT_SECONDS (what /healthz
  and the dashboard read), and runs a recovery round (evalsite.jobs.recovery) every few beats;
- handles SIGTERM: an idle worker exits at once; a busy one lets its job stop at the next checkpoint (the
  progress callback raises JobInterrupted, and the job goes back to the queue), and if the job has not
  stopped EVALSITE_WORKER_STOP_SECONDS later, puts it back in the queue itself and exits. A worker whose
  cluster (its parent) died stops the same way instead of running on unsupervised.
Outside a worker process (the web, the tests' inline jobs) nothing here is active: `stopping()` is False.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from evalsite.jobs import processes
from evalsite.jobs.kinds import ticks
from evalsite.jobs.models import JobStatus, Worker

logger = logging.getLogger(__name__)

_stopping = threading.Event()
_stop_asked_at: float | None = None
_busy = False  # inside job_run (from before its claim to after its last write)
_current: tuple[object, int] | None = None  # (job id, attempt) while a handler runs
_parent: int | None = None


def stopping() -> bool:
    return _stopping.is_set()


@contextlib.contextmanager
def busy() -> Iterator[None]:
    global _busy
    _busy = True
    try:
        yield
    finally:
        _busy = False


def running(job_id, attempt: int | None) -> None:
    global _current
    _current = None if job_id is None or attempt is None else (job_id, attempt)


def request_stop(reason: str) -> None:
    global _stop_asked_at
    if not _stopping.is_set():
        _stop_asked_at = time.monotonic()
        _stopping.set()
        logger.info("worker %s stopping: %s", processes.identity(), reason)


def exit_after_job() -> None:
    """Leave the worker process after a job, when stopping."""
    _leave()


def _on_sigterm(signum, frame) -> None:
    request_stop("SIGTERM")
    if not _busy:
        _leave()  # idle, blocked on django-q2's task queue: leave now


def _leave() -> None:
    """Forget the worker and exit the process at once. Not by SystemExit: the interpreter's shutdown would run
    multiprocessing's finalizers and wait on the beat thread's daemon state, which can hang while that thread is
    inside a database or broker call (an idle cluster once took the whole stop deadline to end)."""
    _forget_worker()
    logging.shutdown()
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def on_worker_spawn(sender=None, proc_name: str = "", **kwargs) -> None:
    """django_q.signals.post_spawn, in each new worker process. django-q2's sync mode (the tests' inline jobs)
    sends it too, from the main process running the task: nothing to do there."""
    global _parent
    if multiprocessing.parent_process() is None:
        return
    _parent = os.getppid()
    signal.signal(signal.SIGTERM, _on_sigterm)
    WorkerBeat().start()


def _forget_worker() -> None:

    with contextlib.suppress(DatabaseError):
        Worker.objects.filter(name=processes.identity()).delete()


class WorkerBeat(threading.Thread):
    """The worker process's own thread: heartbeat, recovery rounds, and enforcing the stop."""

    RECOVERY_EVERY = 3  # beats

    def __init__(self) -> None:
        super().__init__(name="worker-beat", daemon=True)
        self.started_at = timezone.now()

    def run(self) -> None:
        interval = settings.EVALSITE_JOB_HEARTBEAT_SECONDS
        beats = random.randrange(self.RECOVERY_EVERY)  # workers started together recover at different beats
        next_beat = 0.0
        while True:
            if os.getppid() != _parent:
                request_stop("its cluster (parent process) is gone")
            if stopping():
                self._enforce_stop()
            now = time.monotonic()
            if now >= next_beat:
                next_beat = now + interval
                self._beat()
                if not stopping():
                    self._tick()
                beats += 1
                if beats % self.RECOVERY_EVERY == 0 and not stopping():
                    self._recover()
            time.sleep(0.2 if stopping() else min(1.0, interval))

    def _beat(self) -> None:

        current = _current
        try:
            now = timezone.now()
            fields = {"beat_at": now, "job_id": current[0] if current else None}
            if not Worker.objects.filter(name=processes.identity()).update(**fields):
                Worker.objects.create(
                    name=processes.identity(),
                    host=processes.HOST,
                    pid=os.getpid(),
                    started_at=self.started_at,
                    **fields,
                )
        except DatabaseError as exc:
            logger.warning("worker heartbeat failed: %s", exc)
            connection.close()

    def _tick(self) -> None:
        """The registered ticks (evalsite.jobs.kinds.register_tick), each on its own: one failing never stops
        the others or the worker."""
        for name, tick in ticks().items():
            try:
                tick()
            except Exception:
                logger.exception("tick %s failed", name)
                connection.close()

    def _recover(self) -> None:
        from evalsite.jobs.recovery import jobs_recover  # late: evalsite.jobs.services imports both modules

        try:
            jobs_recover(inspect_broker=True)
            Worker.objects.filter(beat_at__lt=timezone.now() - timedelta(days=1)).delete()
        except Exception:  # recovery must never take the worker down
            logger.exception("job recovery round failed")
            connection.close()

    def _enforce_stop(self) -> None:
        current = _current
        if not _busy:
            _forget_worker()
            os._exit(0)
        if current is None or _stop_asked_at is None:
            return
        if time.monotonic() - _stop_asked_at < settings.EVALSITE_WORKER_STOP_SECONDS:
            return
        from evalsite.jobs.services import job_requeue  # late: evalsite.jobs.services imports this module

        job_id, attempt = current
        message = (
            f"The worker was stopped (SIGTERM) and the job did not reach a checkpoint within "
            f"{settings.EVALSITE_WORKER_STOP_SECONDS} s; it goes back to the queue."
        )
        try:
            job_requeue(
                job_id,
                status=JobStatus.RUNNING,
                attempts=attempt,
                event="interrupted",
                message=message,
                counts=False,
            )
        except Exception:
            logger.exception("could not put job %s back in the queue; recovery will", job_id)
        _forget_worker()
        os._exit(0)
