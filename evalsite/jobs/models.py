from __future__ import annotations

import uuid

from django.db import models

# The tables keep the names they had when these models lived in goldenset (goldenset migration 0009).


class JobStatus(models.TextChoices):
    QUEUED = "Queued"
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"
    CANCELLED = "Cancelled"


class JobStage(models.TextChoices):
    """Where a job is in its work (evalsite.jobs.fan_out): its handler's own work, waiting for the child jobs
    it spread its work over (Running, held by no worker), or being gathered from them."""

    OWN = "own"
    CHILDREN = "children"
    GATHER = "gather"


class Job(models.Model):
    FINISHED = (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.CASCADE, related_name="jobs")
    # The one domain name the platform holds, as a lazy reference (never imported): a job may work on one
    # collection, which the dashboard and the launch pages look up by it.
    collection = models.ForeignKey(
        "goldenset.Collection", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # One of the kinds the apps register with their handlers (evalsite.jobs.kinds.register_job_handler).
    kind = models.CharField(max_length=30)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    input = models.JSONField(
        default=dict, blank=True, help_text="What the task needs to run (a validated request)."
    )
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True, help_text='{"code", "message", "details"} when Failed.')
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Durability (evalsite.jobs.services): when its task last went to the broker, which worker process holds
    # it, how often a worker took it (each claim's number fences the writes of an earlier holder), how often it
    # was put back after a failure (bounded by EVALSITE_JOB_MAX_RETRIES), and what happened to it on the way.
    queued_at = models.DateTimeField(null=True, blank=True)
    owner = models.CharField(
        max_length=300, blank=True, default="", help_text="host:pid:start of its worker."
    )
    attempts = models.PositiveIntegerField(default=0, help_text="Times a worker took it.")
    retries = models.PositiveIntegerField(default=0, help_text="Times it was re-queued after a failure.")
    history = models.JSONField(
        default=list, blank=True, help_text='[{"at", "event", "message"}]: re-queues and interruptions.'
    )
    # A job whose handler spread its work (evalsite.jobs.fan_out): its children point at it. Defaults in the
    # database too, so that a process of the previous version (an upgrade under way) still inserts jobs.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    stage = models.CharField(
        max_length=10, choices=JobStage.choices, default=JobStage.OWN, db_default=JobStage.OWN
    )
    position = models.PositiveIntegerField(
        default=0, db_default=0, help_text="A child's place among its parent's children."
    )

    class Meta:
        db_table = "goldenset_job"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "status"], name="job_tenant_status_idx"),
            models.Index(fields=["status", "heartbeat_at"], name="job_status_heartbeat_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.id} ({self.status})"

    @property
    def progress(self) -> float:
        if self.status == JobStatus.COMPLETED:
            return 1.0
        return self.progress_done / self.progress_total if self.progress_total else 0.0


class Worker(models.Model):
    """A django-q2 worker process that is alive, or was: it beats every EVALSITE_JOB_HEARTBEAT_SECONDS
    (evalsite.jobs.worker), and /healthz and the dashboard read the beats' age."""

    name = models.CharField(max_length=300, unique=True, help_text="host:pid:start, as in Job.owner.")
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField(db_index=True)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        db_table = "goldenset_worker"
        ordering = ["-beat_at"]

    def __str__(self) -> str:
        return self.name
