"""Recovery: jobs whose owner is gone go back to the queue (or fail with a reason once retried enough).

Run by every worker every few heartbeats (with the broker inspected), and by every read of jobs (API and
dashboard; the Running part only, which needs no broker):
- a Running job whose heartbeat is older than EVALSITE_JOB_STALE_SECONDS, or whose worker process on this host
  is gone, lost its worker: re-queued (event worker-lost), or Failed job-stale after EVALSITE_JOB_MAX_RETRIES;
- a parent waiting for its children (evalsite.jobs.fan_out) has no heartbeat and is left to them; one whose
  children all ended without it following (their worker died right after) follows them now;
- a Queued job whose task is in no broker queue and no lease (a broker restarted without persistence, a task
  acknowledged by a worker that died before it ran it) lost its task: re-queued (event task-lost), or Failed
  job-lost. Skipped while the broker is unreachable, so an outage uses up no retries.
Every change is a conditional update of the row (evalsite.jobs.services.job_requeue): recoveries running at once in
several processes act once.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from evalsite.jobs import fan_out, processes
from evalsite.jobs.kinds import job_kind
from evalsite.jobs.models import Job, JobStage, JobStatus
from evalsite.tenancy.models import Tenant

logger = logging.getLogger(__name__)


def jobs_recover(*, tenant: Tenant | None = None, inspect_broker: bool = False) -> dict[str, int]:
    """One recovery round; returns how many jobs were re-queued and failed."""
    from evalsite.jobs.services import job_requeue  # late: evalsite.jobs.services imports this module

    counts = {"requeued": 0, "failed": 0}

    def note(status: str | None) -> None:
        if status == JobStatus.QUEUED:
            counts["requeued"] += 1
        elif status == JobStatus.FAILED:
            counts["failed"] += 1

    now = timezone.now()
    jobs = Job.objects.all() if tenant is None else Job.objects.filter(tenant=tenant)
    stale_before = now - timedelta(seconds=settings.EVALSITE_JOB_STALE_SECONDS)
    running = (
        jobs.filter(status=JobStatus.RUNNING)
        .exclude(stage=JobStage.CHILDREN)
        .annotate(last_sign=Coalesce("heartbeat_at", "started_at", "created_at"))
        .filter(Q(last_sign__lt=stale_before) | Q(owner__startswith=f"{processes.HOST}:"))
    )
    for job_id, kind, owner, last, attempts in running.values_list(
        "pk", "kind", "owner", "last_sign", "attempts"
    ):
        if owner and processes.alive_here(owner) is False:
            why = f"Its worker ({owner}) is gone."
        elif last < stale_before:
            why = f"Its worker ({owner or 'unknown'}) stopped beating (no heartbeat since {last:%Y-%m-%d %H:%M:%S} UTC)."
        else:
            continue
        message = f"{why} What it committed before is kept."
        registered = job_kind(kind)
        if registered is not None and registered.resumes:
            message += " The next run continues where it stopped."
        note(
            job_requeue(
                job_id,
                status=JobStatus.RUNNING,
                attempts=attempts,
                event="worker-lost",
                message=message,
                counts=True,
            )
        )
    for parent_id in fan_out.parents_to_follow(jobs):
        note(fan_out.children_ended(parent_id))
    if inspect_broker and not _inline():
        _recover_lost_tasks(jobs, now, note)
    if any(counts.values()):
        logger.warning("job recovery: %(requeued)d re-queued, %(failed)d failed", counts)
    return counts


def _inline() -> bool:
    """django-q2's sync mode (tests): tasks run inside the call that queues them; no broker holds any."""
    from django_q.conf import Conf  # late: django_q reads Q_CLUSTER when it is imported

    return bool(Conf.SYNC)


def _recover_lost_tasks(jobs, now, note) -> None:
    from django_q.brokers import get_broker  # late: as above

    from evalsite.jobs.brokers import job_ids_in_broker  # late: it imports django_q
    from evalsite.jobs.services import job_requeue  # late: evalsite.jobs.services imports this module

    grace = now - timedelta(seconds=settings.EVALSITE_TASK_LEASE_SECONDS)
    waiting = list(
        jobs.filter(status=JobStatus.QUEUED)
        .filter(Q(queued_at__lt=grace) | Q(queued_at__isnull=True, created_at__lt=grace))
        .values_list("pk", flat=True)
    )
    if not waiting:
        return
    broker = get_broker()
    try:
        broker.recover_dead_leases()
        held = job_ids_in_broker(broker)
    except Exception as exc:  # the broker is away: its tasks may be fine, and nothing can be queued anyway
        logger.warning(
            "job recovery: broker unreachable (%s: %s); lost tasks are checked later", type(exc).__name__, exc
        )
        return
    for job_id in waiting:
        if str(job_id) in held:
            continue
        message = (
            "Its task was in no broker queue and held by no worker (a broker restart loses queued tasks)."
        )
        note(job_requeue(job_id, status=JobStatus.QUEUED, event="task-lost", message=message, counts=True))
