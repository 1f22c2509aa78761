"""Jobs: a slow call answers 202 with a job id; a django-q2 worker runs it and writes status and progress.

Apps register a handler per job kind (evaluation registers its own in AppConfig.ready), so this base app
never imports the apps above it. A handler takes the Job and a progress callback and returns the result
dict; it raises EvalsiteError for a failure the user should read.

While a handler runs, a thread beats the job's heartbeat every EVALSITE_JOB_HEARTBEAT_SECONDS. A Running job
whose heartbeat is older than EVALSITE_JOB_STALE_SECONDS lost its worker (killed, out of memory, machine
gone): `jobs_fail_stale` marks it Failed with the code "job-stale", and it runs wherever jobs are read, so no
job stays Running forever.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import F
from django.utils import timezone

from goldenset.errors import EvalsiteError
from goldenset.models import Collection, Job, JobStatus, Tenant

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
Handler = Callable[[Job, Progress], dict[str, Any]]
_HANDLERS: dict[str, Handler] = {}


def register_job_handler(kind: str, handler: Handler) -> None:
    _HANDLERS[kind] = handler


def job_create(
    *, tenant: Tenant, kind: str, input: dict[str, Any], collection: Collection | None = None
) -> Job:
    """Create a Queued job and enqueue it once the surrounding transaction commits."""
    from django_q.tasks import async_task  # imported late: django_q reads Q_CLUSTER at import

    job = Job.objects.create(tenant=tenant, kind=kind, input=input, collection=collection)
    transaction.on_commit(
        lambda: async_task("goldenset.tasks.run_job", str(job.pk), task_name=f"{kind}-{job.pk}")
    )
    return job


def job_progress(job_id, done: int, total: int) -> None:
    Job.objects.filter(pk=job_id).update(
        progress_done=done, progress_total=total, heartbeat_at=timezone.now()
    )


def job_cancelled(job_id) -> bool:
    """Whether the job was cancelled meanwhile (handlers ask between units of work)."""
    return Job.objects.filter(pk=job_id, status=JobStatus.CANCELLED).exists()


def jobs_fail_stale(*, tenant: Tenant | None = None) -> int:
    """Mark Running jobs whose worker stopped beating as Failed; returns how many."""
    cutoff = timezone.now() - timedelta(seconds=settings.EVALSITE_JOB_STALE_SECONDS)
    stale = Job.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=cutoff)
    if tenant is not None:
        stale = stale.filter(tenant=tenant)
    count = 0
    for job in stale.only("pk", "heartbeat_at", "kind"):
        message = (
            f"The worker running this job stopped (no heartbeat since "
            f"{job.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC); what it committed before is kept."
        )
        if job.kind == "Generate":
            message += " Run it again with the same seed to continue where it stopped."
        # Conditional: a job that finished or beat meanwhile is left alone.
        count += Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, heartbeat_at__lt=cutoff).update(
            status=JobStatus.FAILED,
            finished_at=timezone.now(),
            error={"code": "job-stale", "message": message, "details": {}},
        )
    if count:
        logger.warning("marked %d stale job(s) Failed", count)
    return count


def job_cancel(*, job: Job) -> bool:
    """Cancel a job that has not finished; a running handler sees it at its next progress check."""
    updated = Job.objects.filter(pk=job.pk, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).update(
        status=JobStatus.CANCELLED, finished_at=timezone.now()
    )
    job.refresh_from_db()
    return bool(updated)


def job_run(job_id: str) -> None:
    """Claim a Queued job (a conditional update, so two workers never run it twice), run it, record the end."""
    now = timezone.now()
    claimed = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING, started_at=now, heartbeat_at=now
    )
    if not claimed:
        logger.info("job %s was not Queued (cancelled or taken); skipping", job_id)
        return
    job = Job.objects.get(pk=job_id)
    handler = _HANDLERS.get(job.kind)
    heartbeat = _Heartbeat(job.pk)
    heartbeat.start()
    try:
        if handler is None:
            raise EvalsiteError("job-kind-unknown", f"No handler for job kind {job.kind}.")
        result = handler(job, lambda done, total: job_progress(job.pk, done, total))
    except EvalsiteError as exc:
        _finish(job, JobStatus.FAILED, error=exc.as_dict())
    except Exception as exc:  # a bug in a handler must still end the job, readably
        logger.exception("job %s (%s) crashed", job_id, job.kind)
        _finish(
            job,
            JobStatus.FAILED,
            error={"code": "internal-error", "message": f"{type(exc).__name__}: {exc}", "details": {}},
        )
    else:
        _finish(job, JobStatus.COMPLETED, result=result)
    finally:
        heartbeat.stop()


def _finish(job: Job, status: str, *, result=None, error=None) -> None:
    fields: dict[str, Any] = {
        "status": status,
        "finished_at": timezone.now(),
        "result": result,
        "error": error,
    }
    if status == JobStatus.COMPLETED:
        fields["progress_done"] = F("progress_total")
    # Only a Running job is finished here: a job cancelled meanwhile stays Cancelled, and keeps what its handler
    # reports about the work done before it stopped (a generation's counts so far).
    finished = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(**fields)
    if not finished and result is not None:
        Job.objects.filter(pk=job.pk, status=JobStatus.CANCELLED, result__isnull=True).update(result=result)


class _Heartbeat(threading.Thread):
    """Beats a Running job's heartbeat while its handler works, even through one long call."""

    def __init__(self, job_id) -> None:
        super().__init__(name=f"heartbeat-{job_id}", daemon=True)
        self.job_id = job_id
        self._stop_event = threading.Event()

    def run(self) -> None:
        interval = settings.EVALSITE_JOB_HEARTBEAT_SECONDS
        try:
            while not self._stop_event.wait(interval):
                try:
                    Job.objects.filter(pk=self.job_id, status=JobStatus.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                except Exception:  # a busy database: the next beat tries again
                    logger.warning("heartbeat of job %s failed", self.job_id, exc_info=True)
                    close_old_connections()
        finally:
            connection.close()  # this thread's own connection

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)
