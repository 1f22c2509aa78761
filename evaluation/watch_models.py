"""The models of quality watched over time (evaluation.watch): schedules of evaluations, each tick they ran for,
the alerts their gates fire, and every notification of an alert with each attempt to send it. Imported by
evaluation.models, so Django registers them with the app."""

from __future__ import annotations

import uuid

from django.db import models

from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from goldenset.models import Collection


class WatchJobKind(models.TextChoices):
    """The job a schedule's tick queues (registered with its handler in EvaluationConfig.ready)."""

    SCHEDULED = "Scheduled"


class AlertState(models.TextChoices):
    FIRING = "firing"
    RESOLVED = "resolved"


class DeliveryState(models.TextChoices):
    PENDING = "pending"  # not sent yet, or to be tried again at next_attempt_at
    SENT = "sent"
    FAILED = "failed"  # every attempt failed: given up


class Schedule(models.Model):
    """An evaluation run on a cadence against one collection's golden set, with a gate and where to tell."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="schedules")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="schedules")
    name = models.CharField(max_length=100)
    configs = models.JSONField(help_text="Configurations as /search/evaluate takes them (presets, targets).")
    ks = models.JSONField(default=list)
    subset = models.JSONField(
        default=dict, blank=True, help_text="The golden entries asked (tags, origin...)."
    )
    cron = models.CharField(max_length=200, blank=True)
    every_minutes = models.PositiveIntegerField(null=True, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    gate = models.JSONField(help_text='{"metric", "min", "max_drop", "check_drop"}')
    channels = models.JSONField(
        default=list, blank=True, help_text='[{"kind": "webhook", "url"} | {"kind": "email", "to"}]'
    )
    remind_after_minutes = models.PositiveIntegerField(default=24 * 60)
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_by = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="schedule_unique_name")]

    def __str__(self) -> str:
        return f"schedule {self.name} of {self.collection_id}"


class ScheduleRun(models.Model):
    """One tick of a schedule: the job that evaluated it, the batch of runs it stored, the gate's verdict. One row
    per (schedule, tick), so a tick two workers claim at once runs once."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="ticks")
    tick_at = models.DateTimeField(help_text="The tick it ran for (the time a manual run was asked).")
    manual = models.BooleanField(default=False)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    batch_id = models.UUIDField(null=True, blank=True, db_index=True)
    passed = models.BooleanField(
        null=True, blank=True, help_text="The gate's verdict; null until it is known."
    )
    verdict = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-tick_at"]
        constraints = [
            models.UniqueConstraint(fields=["schedule", "tick_at"], name="schedule_run_once_per_tick")
        ]

    def __str__(self) -> str:
        return f"{self.schedule} at {self.tick_at:%Y-%m-%d %H:%M}"


class Alert(models.Model):
    """A schedule's gate failing: firing until a later run of it passes (resolved), told once when it fires (a
    reminder after remind_after_minutes while nobody acknowledged it) and once when it resolves."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="alerts")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="alerts")
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="alerts")
    state = models.CharField(max_length=20, choices=AlertState.choices, default=AlertState.FIRING)
    reasons = models.JSONField(default=list, help_text="[{reason, message}]: why the gate failed.")
    fired_by = models.ForeignKey(ScheduleRun, on_delete=models.CASCADE, related_name="+")
    resolved_by = models.ForeignKey(
        ScheduleRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    fired_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.CharField(max_length=300, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    reminded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-fired_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["schedule"], condition=models.Q(state="firing"), name="alert_one_firing_per_schedule"
            )
        ]

    def __str__(self) -> str:
        return f"{self.schedule}: {self.state}"


class Delivery(models.Model):
    """One notification of an alert on one channel (its firing, a reminder, its resolution), with every attempt
    to send it; a failed attempt is tried again later, with backoff, up to a bound."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=20, help_text="firing, reminder or resolved")
    channel = models.JSONField()
    state = models.CharField(max_length=20, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.JSONField(default=list, blank=True, help_text="[{at, ok, status, error, ms}]")
    next_attempt_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.alert} {self.event} -> {self.channel.get('kind')}"
