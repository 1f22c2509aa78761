"""Jobs: a slow call answers 202 with a job id; a django-q2 worker runs it and writes status and progress.

The apps register their kinds of job, each with its handler, in AppConfig.ready (register_job_handler), so
the platform never imports the apps above it. A handler takes the Job and a progress callback and returns the result
dict; it raises EvalsiteError for a failure the user should read.

No job stays Queued or Running without a live owner:
- a worker claims a Queued job with a conditional update that counts the attempt, so a task delivered twice
  runs the job once; every later write of that run (progress, heartbeat, the end) is fenced by the attempt,
  so a worker presumed dead that wakes up again cannot overwrite its successor's work (JobLost);
- a thread beats the job's heartbeat while its handler works; evalsite.jobs.recovery puts a job whose worker
  died (no heartbeat, or its process gone) or whose task the broker lost back in the queue, at most
  EVALSITE_JOB_MAX_RETRIES times, then fails it with a code of its own (job-stale, job-lost);
- the brokers lease the tasks a worker takes (evalsite.jobs.brokers), so a killed worker loses none;
- a broker that is down when a job is created: the job is failed at once and the call answers 503
  broker-unavailable;
- a worker that loses its database connection closes it, records the error in the job and retries the write;
- a worker told to stop (SIGTERM) interrupts its job at the next checkpoint and puts it back in the queue
  (evalsite.jobs.worker), so it is never left Running.

A handler may spread its work over child jobs, gathered when the last one ends (evalsite.jobs.fan_out).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone

from evalsite.audit.models import AuditAction, PlatformAuditObject
from evalsite.audit.services import AuditedCollection, audit_record
from evalsite.errors import EvalsiteError
from evalsite.jobs import fan_out, processes, worker
from evalsite.jobs.kinds import FanOut, job_kind
from evalsite.jobs.models import Job, JobStage, JobStatus
from evalsite.jobs.queueing import enqueue as _enqueue
from evalsite.jobs.queueing import enqueue_quietly as _enqueue_quietly
from evalsite.jobs.recovery import jobs_recover
from evalsite.tenancy.models import Tenant

logger = logging.getLogger(__name__)

# How long a worker keeps retrying a write the database refused (its connection cut, a failover).
DB_RETRY_SECONDS = 60.0
# The Retry-After of broker-unavailable: the same as the web's database-unavailable (evalsite.unavailable).
BROKER_RETRY_AFTER_SECONDS = 5


class JobInterrupted(BaseException):  # noqa: N818  (not an error: the worker is stopping)
    """The worker is stopping: the job goes back to the queue. A BaseException, so no handler's `except
    Exception` swallows it."""


class JobLost(BaseException):  # noqa: N818
    """Another worker holds the job now (this one was presumed dead): stop without writing anything."""


# --- creating and queueing --------------------------------------------------------------------------------


def job_create(
    *,
    tenant: Tenant,
    kind: str,
    input: dict[str, Any],
    collection: AuditedCollection | None = None,
    actor: str | None = None,
    now: bool = False,
) -> Job:
    """Create a Queued job and put its task in the broker once the surrounding transaction commits (`now`: at
    once, for a job that reads only what is already committed, such as an index build asked by a search).

    With an actor, the launch goes into the audit trail (in the caller's transaction, or one of its own).
    A broker that refuses the task fails the job at once and raises EvalsiteError broker-unavailable (503):
    the caller's request fails instead of leaving a job that no worker will ever see."""
    if job_kind(kind) is None:
        raise ValueError(f"job kind {kind!r} is not registered (evalsite.jobs.kinds.register_job_handler)")
    with transaction.atomic():
        job = Job.objects.create(
            tenant=tenant,
            kind=kind,
            input=input,
            collection_id=collection.pk if collection is not None else None,
            queued_at=timezone.now(),
        )
        if actor is not None:
            audit_record(
                tenant=tenant,
                collection=collection,
                action=AuditAction.LAUNCH,
                object_type=PlatformAuditObject.JOB,
                object_id=job.pk,
                actor=actor,
                changes={"kind": kind},
            )
    if now:
        _enqueue_or_fail(job)
    else:
        transaction.on_commit(lambda: _enqueue_or_fail(job))
    return job


def _enqueue_or_fail(job: Job) -> None:
    try:
        _enqueue(job.pk, job.kind)
    except Exception as exc:  # redis.ConnectionError, OSError, a database error of the ORM broker
        logger.error("could not queue job %s: %s: %s", job.pk, type(exc).__name__, exc)
        message = "The task queue (broker) is unreachable; the job was not started. Try again shortly."
        error = {"code": "broker-unavailable", "message": message, "details": {"reason": type(exc).__name__}}
        Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED).update(
            status=JobStatus.FAILED, finished_at=timezone.now(), error=error
        )
        job.status, job.error = JobStatus.FAILED, error
        raise EvalsiteError(
            "broker-unavailable",
            message,
            details={"job_id": str(job.pk)},
            status=503,
            retry_after=BROKER_RETRY_AFTER_SECONDS,
        ) from None


def job_requeue(
    job_id, *, status: str, event: str, message: str, counts: bool, attempts: int | None = None
) -> str | None:
    """Put a job that is in `status` (and at `attempts`, when given) back in the queue, noting why.

    `counts`: the re-queue follows a failure (a dead worker, a lost task, a database error) and counts
    against EVALSITE_JOB_MAX_RETRIES; past it the job is Failed with the code `event` names. Returns the
    job's new status, or None when it was no longer in that state (another worker or recovery was first)."""
    with transaction.atomic():
        rows = Job.objects.select_for_update().filter(pk=job_id, status=status)
        if attempts is not None:
            rows = rows.filter(attempts=attempts)
        job = rows.first()
        if job is None:
            return None
        now = timezone.now()
        job.history = [*job.history, {"at": now.isoformat(), "event": event, "message": message}]
        fields = ["status", "history", "owner", "heartbeat_at"]
        job.owner, job.heartbeat_at = "", None
        if counts and job.retries >= settings.EVALSITE_JOB_MAX_RETRIES:
            job.status, job.finished_at = JobStatus.FAILED, now
            job.error = {
                "code": _GIVE_UP_CODES.get(event, event),
                "message": f"{message} It was re-queued {job.retries} time(s) already; giving up.",
                "details": {"attempts": job.attempts, "retries": job.retries},
            }
            fields += ["finished_at", "error"]
        else:
            job.status, job.queued_at = JobStatus.QUEUED, now
            job.retries += 1 if counts else 0
            fields += ["queued_at", "retries"]
            transaction.on_commit(lambda: _enqueue_quietly(job.pk, job.kind))
        job.save(update_fields=fields)
    logger.warning("job %s (%s): %s -> %s: %s", job.pk, job.kind, event, job.status, message)
    if job.status == JobStatus.FAILED and job.parent_id is not None:
        fan_out.children_ended(job.parent_id)
    return job.status


_GIVE_UP_CODES = {"worker-lost": "job-stale", "task-lost": "job-lost"}


# --- reading and cancelling -------------------------------------------------------------------------------


def job_cancelled(job_id) -> bool:
    """Whether the job was cancelled meanwhile (handlers ask between units of work)."""
    return Job.objects.filter(pk=job_id, status=JobStatus.CANCELLED).exists()


def job_cancel(*, job: Job) -> bool:
    """Cancel a job that has not finished; a running handler sees it at its next progress check. A parent's
    unfinished children are cancelled with it; a child's parent is cancelled with it (evalsite.jobs.fan_out)."""
    updated = Job.objects.filter(pk=job.pk, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).update(
        status=JobStatus.CANCELLED, finished_at=timezone.now()
    )
    if updated:
        fan_out.cancel_children(job.pk)
        if job.parent_id is not None:
            fan_out.children_ended(job.parent_id)
    job.refresh_from_db()
    return bool(updated)


# --- running ------------------------------------------------------------------------------------------------


class _Lease:
    """One run of a job: the attempt that fences its writes, its progress callback and its heartbeat."""

    def __init__(self, job_id, attempt: int, parent_id=None) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self.parent_id = parent_id

    def rows(self):
        return Job.objects.filter(pk=self.job_id, status=JobStatus.RUNNING, attempts=self.attempt)

    def progress(self, done: int, total: int) -> None:
        """The handlers' checkpoint: records progress, and stops the run when the worker is stopping
        (JobInterrupted) or the job is no longer this run's (JobLost; a cancel is the handler's to see)."""
        if worker.stopping():
            raise JobInterrupted
        updated = self.rows().update(progress_done=done, progress_total=total, heartbeat_at=timezone.now())
        if not updated and not Job.objects.filter(pk=self.job_id, status=JobStatus.CANCELLED).exists():
            raise JobLost
        if self.parent_id is not None:
            fan_out.progress_sum(self.parent_id)


def job_run(job_id: str) -> None:
    """Claim a Queued job (a conditional update, so a task delivered twice runs it once), run it, record the
    end: Completed, Failed with a reason, or back in the queue when the worker stops or loses its database."""
    with worker.busy():
        if worker.stopping():  # a task taken as the worker stops: back to the broker, for the next worker
            kind = (
                Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).values_list("kind", flat=True).first()
            )
            if kind is not None:
                _enqueue_quietly(job_id, kind)
            return
        now = timezone.now()
        claimed = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
            status=JobStatus.RUNNING,
            started_at=now,
            heartbeat_at=now,
            owner=processes.identity(),
            attempts=F("attempts") + 1,
        )
        if not claimed:
            logger.info("job %s was not Queued (finished, cancelled or taken); skipping", job_id)
            return
        job = Job.objects.get(pk=job_id)
        lease = _Lease(job.pk, job.attempts, job.parent_id)
        worker.running(job.pk, job.attempts)
        heartbeat = _Heartbeat(lease)
        heartbeat.start()
        try:
            outcome = _run_handler(job, lease)
        finally:
            heartbeat.stop()
            worker.running(None, None)
        _with_db_retry(outcome, f"the end of job {job.pk}")
        if job.parent_id is not None:
            _with_db_retry(lambda: fan_out.children_ended(job.parent_id), f"the parent of job {job.pk}")
    if worker.stopping():
        worker.exit_after_job()


def _run_handler(job: Job, lease: _Lease) -> Callable[[], Any]:
    """Run the handler (or, for a parent whose children all completed, its kind's gather: evalsite.jobs.fan_out);
    returns the write that records how it ended (done with retries by the caller)."""
    try:
        result = _call(job, lease)
        if isinstance(result, FanOut):
            spread = result
            return lambda: fan_out.spread(job, lease.attempt, spread)
    except JobInterrupted:
        message = "The worker was stopped (SIGTERM) while running this job; it goes back to the queue."
        return lambda: job_requeue(
            job.pk, status=JobStatus.RUNNING, attempts=lease.attempt, event="interrupted", message=message,
            counts=False,
        )  # fmt: skip
    except JobLost:
        logger.warning("job %s was taken over by another worker; this run stops without writing", job.pk)
        return lambda: None
    except EvalsiteError as exc:
        failure = exc.as_dict()  # bound now: Python unbinds `exc` when the except clause ends
        return lambda: _finish(lease, JobStatus.FAILED, error=failure)
    except (OperationalError, InterfaceError) as exc:
        connection.close()  # a cut or failed-over connection: the next query opens a new one
        logger.error("job %s lost its database connection: %s", job.pk, exc)
        message = f"The worker lost its database connection: {type(exc).__name__}: {exc}".strip()
        return lambda: job_requeue(
            job.pk, status=JobStatus.RUNNING, attempts=lease.attempt, event="database-error", message=message,
            counts=True,
        )  # fmt: skip
    except Exception as exc:  # a bug in a handler must still end the job, readably
        logger.exception("job %s (%s) crashed", job.pk, job.kind)
        error = {"code": "internal-error", "message": f"{type(exc).__name__}: {exc}", "details": {}}
        return lambda: _finish(lease, JobStatus.FAILED, error=error)
    return lambda: _finish(lease, JobStatus.COMPLETED, result=result)


def _call(job: Job, lease: _Lease) -> dict[str, Any] | FanOut:
    """The kind's handler, or its gather for a parent whose children all completed."""
    kind = job_kind(job.kind)
    if kind is None:
        raise EvalsiteError("job-kind-unknown", f"No handler for job kind {job.kind}.")
    if job.stage == JobStage.GATHER and kind.gather is not None:
        return kind.gather(job, fan_out.children_of(job), lease.progress)
    result = kind.handler(job, lease.progress)
    if isinstance(result, FanOut) and (kind.gather is None or job.stage != JobStage.OWN):
        raise ValueError(f"job kind {job.kind} spread its work but has no gather, or spread it twice")
    return result


def _with_db_retry(write: Callable[[], Any], what: str) -> None:
    """Do a write, retrying for DB_RETRY_SECONDS while the database refuses it (each try on a new connection)."""
    deadline = time.monotonic() + DB_RETRY_SECONDS
    delay = 0.5
    while True:
        try:
            write()
            return
        except (OperationalError, InterfaceError) as exc:
            connection.close()
            if time.monotonic() > deadline:
                logger.error("gave up writing %s after %.0f s: %s", what, DB_RETRY_SECONDS, exc)
                return
            logger.warning("writing %s failed (%s); retrying in %.1f s", what, exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def _finish(lease: _Lease, status: str, *, result=None, error=None) -> None:
    fields: dict[str, Any] = {
        "status": status,
        "finished_at": timezone.now(),
        "result": result,
        "error": error,
    }
    if status == JobStatus.COMPLETED:
        fields["progress_done"] = F("progress_total")
    # Only this run of a Running job is finished here: a job cancelled meanwhile stays Cancelled, and keeps
    # what its handler reports about the work done before it stopped (a generation's counts so far).
    finished = lease.rows().update(**fields)
    if not finished and result is not None:
        Job.objects.filter(pk=lease.job_id, status=JobStatus.CANCELLED, result__isnull=True).update(
            result=result
        )


class _Heartbeat(threading.Thread):
    """Beats a Running job's heartbeat while its handler works, even through one long call."""

    def __init__(self, lease: _Lease) -> None:
        super().__init__(name=f"heartbeat-{lease.job_id}", daemon=True)
        self.lease = lease
        self._stop_event = threading.Event()

    def run(self) -> None:
        interval = settings.EVALSITE_JOB_HEARTBEAT_SECONDS
        try:
            while not self._stop_event.wait(interval):
                try:
                    self.lease.rows().update(heartbeat_at=timezone.now())
                except DatabaseError as exc:  # busy or cut: the next beat tries on a new connection
                    logger.warning("heartbeat of job %s failed: %s", self.lease.job_id, exc)
                    connection.close()
        finally:
            connection.close()  # this thread's own connection

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


__all__ = [
    "JobInterrupted",
    "JobLost",
    "job_cancel",
    "job_cancelled",
    "job_create",
    "job_requeue",
    "job_run",
    "jobs_recover",
]
