"""Spreading a job's work over every worker: a parent job and its children.

A handler returns a FanOut (evalsite.jobs.kinds) instead of its result. Then, in one transaction fenced by the
run's attempt (a job cancelled or taken over meanwhile spreads nothing):
- a child job is created per Child (Queued; the parent's tenant and collection; `parent` and `position` say
  whose and which), its task queued once the transaction commits: any worker of any machine takes it, and it
  runs, is recovered, retried and cancelled as any job;
- the parent stays Running in stage `children`, held by no worker: it has no heartbeat, and recovery leaves it
  to its children. Its progress is the sum of its children's (`progress_sum`, after each child's checkpoint).
When a child ends (`children_ended`: after its run, a re-queue given up, a cancel; and in every recovery round,
for an end a worker missed by dying right after it), the parent follows:
- every child Completed: the parent goes back to the queue in stage `gather`; the worker that takes it runs the
  kind's `gather` with the children, and the parent ends as any job (Completed with the gather's result,
  Failed, back in the queue if that worker dies: a gather must be safe to run twice);
- a child Failed (its retries spent, or its handler's error): the parent fails with that child's error (its
  details name the child), and the other children are cancelled;
- a child Cancelled: the parent is cancelled, and the other children with it.
Cancelling the parent cancels its unfinished children (evalsite.jobs.services.job_cancel); each sees it at its
next checkpoint. Every change of the parent is a conditional update of its row: children ending at once act once.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from evalsite.jobs.kinds import FanOut
from evalsite.jobs.models import Job, JobStage, JobStatus, Worker
from evalsite.jobs.queueing import enqueue_quietly

UNFINISHED = (JobStatus.QUEUED, JobStatus.RUNNING)


def spread(job: Job, attempt: int, fan: FanOut) -> bool:
    """Create `job`'s children and park it (see the module's doc); False when this run no longer holds it."""
    if not fan.children:
        raise ValueError(f"job {job.pk} ({job.kind}) spread its work over no child")
    now = timezone.now()
    with transaction.atomic():
        held = Job.objects.select_for_update().filter(pk=job.pk, status=JobStatus.RUNNING, attempts=attempt)
        if held.values_list("pk", flat=True).first() is None:
            return False
        children = Job.objects.bulk_create(
            Job(
                tenant_id=job.tenant_id,
                collection_id=job.collection_id,
                kind=child.kind,
                input=child.input,
                parent_id=job.pk,
                position=position,
                progress_total=child.total,
                queued_at=now,
            )
            for position, child in enumerate(fan.children)
        )
        held.update(
            stage=JobStage.CHILDREN,
            owner="",
            heartbeat_at=None,
            progress_done=0,
            progress_total=sum(child.total for child in fan.children),
        )
        queued = [(child.pk, child.kind) for child in children]

        def enqueue_children() -> None:
            for pk, kind in queued:
                enqueue_quietly(pk, kind)

        transaction.on_commit(enqueue_children)
    return True


def children_of(job: Job) -> list[Job]:
    """A parent's children, in the order its FanOut listed them."""
    return list(Job.objects.filter(parent_id=job.pk).order_by("position"))


def progress_sum(parent_id) -> None:
    """A parked parent's progress: the sum of its children's."""
    sums = Job.objects.filter(parent_id=parent_id).aggregate(
        done=Sum("progress_done"), total=Sum("progress_total")
    )
    Job.objects.filter(pk=parent_id, status=JobStatus.RUNNING, stage=JobStage.CHILDREN).update(
        progress_done=sums["done"] or 0, progress_total=sums["total"] or 0
    )


def cancel_children(parent_id) -> int:
    """Cancel a parent's unfinished children (each sees it at its next checkpoint)."""
    return Job.objects.filter(parent_id=parent_id, status__in=UNFINISHED).update(
        status=JobStatus.CANCELLED, finished_at=timezone.now()
    )


def children_ended(parent_id) -> str | None:
    """A child of `parent_id` ended: the parent follows (see the module's doc). Returns the parent's new status,
    or None when it does not change (children still at work, or the parent already moved on)."""
    children = list(
        Job.objects.filter(parent_id=parent_id).order_by("position").values_list("pk", "status", "error")
    )
    parked = Job.objects.filter(pk=parent_id, status=JobStatus.RUNNING, stage=JobStage.CHILDREN)
    now = timezone.now()
    failed = next(((pk, error) for pk, status, error in children if status == JobStatus.FAILED), None)
    if failed is not None:
        pk, error = failed
        error = dict(error or {"code": "internal-error", "message": "A child job failed.", "details": {}})
        error["details"] = {**(error.get("details") or {}), "child_job_id": str(pk)}
        if parked.update(status=JobStatus.FAILED, finished_at=now, error=error):
            cancel_children(parent_id)
            return JobStatus.FAILED
        return None
    if any(status == JobStatus.CANCELLED for _, status, _ in children):
        if parked.update(status=JobStatus.CANCELLED, finished_at=now):
            cancel_children(parent_id)
            return JobStatus.CANCELLED
        return None
    if any(status in UNFINISHED for _, status, _ in children):
        progress_sum(parent_id)
        return None
    progress_sum(parent_id)
    with transaction.atomic():
        if not parked.update(status=JobStatus.QUEUED, stage=JobStage.GATHER, queued_at=now):
            return None
        kind = Job.objects.filter(pk=parent_id).values_list("kind", flat=True).get()
        transaction.on_commit(lambda: enqueue_quietly(parent_id, kind))
    return JobStatus.QUEUED


def parents_to_follow(jobs) -> list:
    """Parked parents none of whose children is unfinished (for recovery: an end no worker followed)."""
    parked = jobs.filter(status=JobStatus.RUNNING, stage=JobStage.CHILDREN)
    busy = Job.objects.filter(parent_id__isnull=False, status__in=UNFINISHED).values("parent_id")
    return list(parked.exclude(pk__in=busy).values_list("pk", flat=True))


def workers_alive() -> int:
    """How many worker processes beat within EVALSITE_JOB_STALE_SECONDS (on every machine): how many parts a
    job's work usefully spreads over."""
    since = timezone.now() - timedelta(seconds=settings.EVALSITE_JOB_STALE_SECONDS)
    return Worker.objects.filter(beat_at__gte=since).count()
