"""The models of relevance judging (evaluation.judgments): pools of documents nobody judged, their items and
who was given each, the judgments people and machines give, and a pool's grades written into the golden set.
Imported by evaluation.models, so Django registers them with the app (and the rest names them from there)."""

from __future__ import annotations

import uuid

from django.db import models

from evalsite.tenancy.models import Tenant
from evaluation.judgments import grades
from goldenset.models import Collection


class JudgmentPool(models.Model):
    """The documents a set of runs of one collection found that nobody had judged, to depth `depth`, in the order
    a rater should judge them (evaluation.judgments.pooling); each is given to `raters_per_item` raters."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="judgment_pools")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="judgment_pools")
    runs = models.ManyToManyField("evaluation.EvaluationRun", related_name="pools")
    depth = models.PositiveSmallIntegerField()
    raters_per_item = models.PositiveSmallIntegerField(default=1)
    subset = models.JSONField(
        default=dict, blank=True, help_text="The subset fields the questions came from."
    )
    judged_already = models.PositiveIntegerField(
        default=0, help_text="Documents within the depth that had a judgment when the pool was made."
    )
    adaptive = models.BooleanField(
        default=True,
        help_text="Items are given in MaxMean's order as judgments come in (evaluation.judgments.pooling."
        "AdaptiveOrder); False: in the fixed order of their positions.",
    )
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.collection} pool of {self.created_at:%Y-%m-%d %H:%M} (depth {self.depth})"


class PoolItem(models.Model):
    """One document of a pool, for one question, at its place in the pool's order."""

    pool = models.ForeignKey(JudgmentPool, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField(help_text="Its place in the pool's order, from 0.")
    entry = models.ForeignKey("goldenset.GoldenEntry", on_delete=models.CASCADE, related_name="+")
    document_id = models.CharField(max_length=300)
    priority = models.FloatField(help_text="The sum of 1 / rank over the runs that rank it within the depth.")
    run_count = models.PositiveSmallIntegerField()
    best_rank = models.PositiveIntegerField()
    ranks = models.JSONField(
        default=list,
        blank=True,
        help_text="[[run index, rank], ...]: each pooled run that ranks it, in the pool.",
    )

    class Meta:
        ordering = ["pool", "position"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "position"], name="pool_item_position_unique"),
            models.UniqueConstraint(fields=["pool", "entry", "document_id"], name="pool_item_unique"),
        ]

    def __str__(self) -> str:
        return f"#{self.position} {self.document_id}"


class PoolAssignment(models.Model):
    """An item given to a rater: never twice to the same one, to no more raters than the pool asks for."""

    item = models.ForeignKey(PoolItem, on_delete=models.CASCADE, related_name="assignments")
    rater = models.CharField(max_length=grades.RATER_MAX_LENGTH)
    assigned_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "rater"], name="pool_assignment_unique")]

    def __str__(self) -> str:
        return f"{self.rater}: {self.item}"


class RelevanceJudgment(models.Model):
    """One rater's grade of one document for one golden entry (evaluation.judgments.grades), on its collection's
    scale, or null when the rater could not judge it. A rater's new judgment of a pair replaces the old one
    (audited)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="relevance_judgments")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="relevance_judgments")
    entry = models.ForeignKey(
        "goldenset.GoldenEntry", on_delete=models.CASCADE, related_name="relevance_judgments"
    )
    document_id = models.CharField(max_length=300)
    grade = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="On the collection's scale (0-1 to 0-4); null: cannot judge."
    )
    rater = models.CharField(max_length=grades.RATER_MAX_LENGTH)
    note = models.TextField(blank=True)
    detail = models.JSONField(
        default=dict, blank=True, help_text="A machine assessor's prompt version and hash, and its samples."
    )
    pool = models.ForeignKey(
        JudgmentPool, null=True, blank=True, on_delete=models.SET_NULL, related_name="judgments"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection", "entry", "document_id", "rater"]
        constraints = [
            models.UniqueConstraint(
                fields=["entry", "document_id", "rater"], name="judgment_unique_rater_pair"
            ),
            models.CheckConstraint(
                condition=models.Q(grade__isnull=True) | models.Q(grade__lte=grades.HIGHEST_GRADE),
                name="judgment_grade_in_range",
            ),
        ]
        indexes = [models.Index(fields=["collection", "rater"], name="judgment_collection_rater_idx")]

    def __str__(self) -> str:
        return f"{self.rater}: {self.document_id} {self.grade}"


PEOPLE = "people"  # the source of a PoolApplication that wrote the people's combined grades


class PoolApplication(models.Model):
    """A pool's combined grades written into the golden set (evaluation.judgments.apply): what each entry held
    before and after, so that it can be taken back while nobody has changed those entries since."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    pool = models.ForeignKey(JudgmentPool, on_delete=models.CASCADE, related_name="applications")
    source = models.CharField(
        max_length=grades.RATER_MAX_LENGTH, help_text='"people" (their combined grades), or a machine rater.'
    )
    judgments = models.PositiveIntegerField(help_text="The documents whose grade was written.")
    source_detail = models.JSONField(
        default=list,
        blank=True,
        help_text="A machine source's versions as its judgments record them ([{prompt_version, prompt_sha256}, "
        "{version}, {model}...]); [] for people.",
    )
    changes = models.JSONField(
        default=list,
        help_text="[{entry_id, before: {expected_document_ids, grades}, after: {...}}, ...], one per entry.",
    )
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    reverted_by = models.CharField(max_length=200, blank=True)
    reverted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.pool}: {self.judgments} judgments applied by {self.created_by}"
