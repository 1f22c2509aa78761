"""Jobs: a slow call answers 202 with a job id; a django-q2 worker runs it and writes status and progress.

Apps register a handler per job kind (evaluation registers its own in AppConfig.ready), so this base app
never imports the apps above it. A handler takes the Job and a progress callback and returns the result
dict; it raises EvalsiteError for a failure the user should read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction
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


def _finish(job: Job, status: str, *, result=None, error=None) -> None:
    fields: dict[str, Any] = {
        "status": status,
        "finished_at": timezone.now(),
        "result": result,
        "error": error,
    }
    if status == JobStatus.COMPLETED:
        fields["progress_done"] = F("progress_total")
    # Only a Running job is finished here: a job cancelled meanwhile stays Cancelled.
    Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(**fields)
