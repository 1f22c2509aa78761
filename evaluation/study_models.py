"""The models of studies (evaluation.studies): a study and its trials, and the named configuration presets a study's
winner is saved as. Imported by evaluation.models, so Django registers them with the app."""

from __future__ import annotations

import uuid

from django.db import models

from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from goldenset.models import Collection


class Study(models.Model):
    """A search for the best configuration of one collection: its request, its trials as they end, the best of
    them on the tuning part, and the confirmation of that best against the baseline on the part no trial saw.
    Its state is its job's (Queued, Running, Completed, Failed, Cancelled)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="studies")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="studies")
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="studies")
    request = models.JSONField(help_text="The study as asked, validated (evaluation.studies.request).")
    metric = models.CharField(max_length=20)
    split = models.JSONField(
        default=dict,
        blank=True,
        help_text='{"tuning": n, "confirmation": n}: how many questions each part holds.',
    )
    trials = models.JSONField(default=list, blank=True, help_text="Every trial as it ended, in order.")
    evaluations = models.PositiveIntegerField(default=0, help_text="Question scorings the trials paid for.")
    best = models.JSONField(null=True, blank=True, help_text='{"number", "config", "values", "tuning_value"}')
    confirmation = models.JSONField(null=True, blank=True)
    created_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.JSONField(
        null=True,
        blank=True,
        help_text="Why a study run in place (manage.py study) failed; a job's is the job's.",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tenant", "-created_at"], name="study_tenant_created_idx")]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return f"study {self.pk} of {self.collection_id} ({self.metric})"


class ConfigPreset(models.Model):
    """A named configuration (a study's winner, saved): launchers, the CI gate and later studies take it by name."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="config_presets")
    name = models.CharField(max_length=100)
    config = models.JSONField(help_text="A configuration as /search/evaluate takes it.")
    study = models.ForeignKey(Study, null=True, blank=True, on_delete=models.SET_NULL, related_name="presets")
    created_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="preset_unique_name")]

    def __str__(self) -> str:
        return self.name
