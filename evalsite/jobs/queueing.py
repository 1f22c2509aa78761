"""Putting a job's task in the broker (django-q2), for evalsite.jobs.services and evalsite.jobs.fan_out."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def enqueue(job_id, kind: str) -> None:
    from django_q.tasks import async_task  # imported late: django_q reads Q_CLUSTER at import

    async_task("evalsite.jobs.tasks.run_job", str(job_id), task_name=f"{kind}-{job_id}")


def enqueue_quietly(job_id, kind: str) -> None:
    """Queue a job's task (again: recovery, interruption, a child, a parent to gather); a broker that is away
    leaves it Queued, and recovery queues it once the broker is back."""
    try:
        enqueue(job_id, kind)
    except Exception as exc:
        logger.warning("could not queue job %s (%s: %s); recovery retries", job_id, type(exc).__name__, exc)
