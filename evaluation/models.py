from __future__ import annotations

import uuid
from collections.abc import Sequence

import numpy as np
from django.db import models

from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from evaluation.judgments import labels
from evaluation.targets import kinds
from goldenset.models import Collection, Page


class EvaluationJobKind(models.TextChoices):
    """The jobs evaluation runs (registered with their handlers in EvaluationConfig.ready)."""

    EVALUATE = "Evaluate"
    # one configuration of an Evaluate job of several, scored by any worker (evaluation.retrieval.config_jobs)
    EVALUATE_CONFIG = "EvaluateConfig"
    EVALUATE_ANSWERS = "EvaluateAnswers"
    STUDY = "Study"  # the trials of a study, then its confirmation (evaluation.studies.services)
    # one worker's share of a study's trials, run at once with the others' (evaluation.studies.parallel)
    STUDY_TRIALS = "StudyTrials"
    INDEX_BUILD = "IndexBuild"
    ASSESS = "Assess"  # a pool's documents graded by a chat model


class EvaluationAuditObject(models.TextChoices):
    """What evaluation's writes name in the audit trail (registered in EvaluationConfig.ready)."""

    TARGET = "target"
    THRESHOLD = "threshold", "Judge threshold"
    LABELS = "labels", "Human labels"
    POOL = "pool", "Judgment pool"
    JUDGMENT = "judgment", "Relevance judgment"
    STUDY = "study"
    PRESET = "preset", "Configuration preset"
    SCHEDULE = "schedule"
    ALERT = "alert"


class RunKind(models.TextChoices):
    RETRIEVAL = "retrieval"
    ANSWERS = "answers"


class RunStatus(models.TextChoices):
    COMPLETE = "complete"
    PARTIAL = "partial"  # some questions failed (their errors stored), left out of every mean
    FAILED = "failed"  # more questions failed than max_error_rate allows: no metrics


class TargetKind(models.TextChoices):
    LMKIT = kinds.LMKIT
    ELASTICSEARCH = kinds.ELASTICSEARCH
    HTTP = kinds.HTTP
    RAG_HTTP = kinds.RAG_HTTP
    PYTHON = kinds.PYTHON


class Target(models.Model):
    """An external search or answering system evaluations call (evaluation.targets.callers). Secret header values are
    kept only as one Fernet token (evaluation.targets.secret_box) and are never read back out through the API."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="targets")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=TargetKind.choices)
    base_url = models.CharField(max_length=2000, blank=True)
    headers = models.JSONField(default=dict, blank=True, help_text="Plain headers, shown as they are.")
    secret_headers_sealed = models.TextField(blank=True, help_text="Encrypted; never shown.")
    secret_header_names = models.JSONField(default=list, blank=True)
    timeout_s = models.FloatField(default=30.0)
    concurrency = models.PositiveIntegerField(default=4)
    rate_limit = models.FloatField(
        null=True, blank=True, help_text="Calls per second at most (none: no limit)."
    )
    options = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="target_unique_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class EvaluationRun(models.Model):
    """One configuration scored against a golden set, once; immutable: its results keep the golden set."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="evaluation_runs")
    # For filtering; collection_ids keeps the slugs even after a collection is deleted.
    collections = models.ManyToManyField(Collection, related_name="evaluation_runs", blank=True)
    collection_ids = models.JSONField(default=list)
    batch_id = models.UUIDField(db_index=True)
    kind = models.CharField(max_length=20, choices=RunKind.choices, default=RunKind.RETRIEVAL)
    label = models.CharField(max_length=200)
    config = models.JSONField(default=dict, help_text="The normalized configuration that ran.")
    ks = models.JSONField(default=list)
    metrics = models.JSONField(
        default=dict, help_text='{"recall@10": 0.71, "ndcg@10": 0.52, "mrr": 0.64, ...}'
    )
    metric_methods = models.JSONField(
        default=dict, blank=True, help_text="Metric -> method that produced it."
    )
    mode = models.CharField(
        max_length=20, blank=True, help_text="Answer runs: heuristic, llm-judge or mixed."
    )
    question_count = models.PositiveIntegerField(default=0)
    warnings = models.JSONField(default=list, blank=True)
    golden_fingerprint = models.CharField(max_length=64, blank=True)
    summary = models.JSONField(
        default=dict,
        blank=True,
        help_text="Answer runs: score, excluded counts per metric, refusal both ways, diagnosis counts, usage.",
    )
    # Kept apart from `summary`: lists of runs read summaries, and a breakdown over many tags is large.
    slices = models.JSONField(
        default=dict,
        blank=True,
        help_text='Every metric per slice, computed when the run was written: {"tag": {"faq": {"n": 3, '
        '"ndcg@10": 0.5}}, "origin": {...}, "answerable": {...}} (evaluation.runs.slices.breakdown).',
    )
    index_info = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.COMPLETE)
    duration_ms = models.FloatField(default=0)
    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluation_runs"
    )
    # Who asked for the run, as the audit trail names them; blank for runs made before it was kept.
    created_by = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "-created_at"], name="run_tenant_created_idx"),
            models.Index(fields=["tenant", "label", "-created_at"], name="run_tenant_label_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.kind}, {self.created_at:%Y-%m-%d %H:%M})"


class QuestionResult(models.Model):
    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    position = models.PositiveIntegerField(help_text="Order of the question within the run.")
    # A snapshot of the golden entry as the run read it (no foreign key: deleting the entry changes nothing).
    entry_id = models.UUIDField(db_index=True)
    entry_key = models.CharField(max_length=300, blank=True)
    collection_id = models.CharField(max_length=200)
    question = models.TextField()
    expected = models.JSONField(default=dict, help_text="Expected document id -> grade.")
    # The ranking to depth, in rank order: ids one per line (ids hold no control characters) and scores as
    # float64 bytes; a JSON list of [id, score] pairs cost more to write than the whole search (float repr).
    ranked_ids = models.TextField(blank=True)
    ranked_scores = models.BinaryField(default=b"")
    first_relevant_rank = models.PositiveIntegerField(null=True, blank=True)
    missing_document_ids = models.JSONField(default=list, help_text="Expected documents not retrieved.")
    metrics = models.JSONField(default=dict)
    diagnosis = models.CharField(max_length=20, blank=True)
    answer = models.TextField(blank=True)
    citations = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    reasons = models.JSONField(
        default=list,
        blank=True,
        help_text="Why an answer question failed, each in the words of its evidence (its verdict's reasons). "
        "Answer runs stored before this field kept them at the end of warnings.",
    )
    # Answer runs: each metric's {value, method, detail, excluded, fallback}; `metrics` keeps the values alone.
    judgements = models.JSONField(default=dict, blank=True)
    context = models.JSONField(
        default=list, blank=True, help_text="The numbered passages the answer was written from (a snapshot)."
    )
    answerable = models.BooleanField(default=True)
    tags = models.JSONField(default=list, blank=True, help_text="The entry's tags when the run read it.")
    origin = models.CharField(
        max_length=20, blank=True, help_text="The entry's origin; \"\" for a request's unanswerable question."
    )
    refused = models.BooleanField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True, help_text="The search (or target call) for it.")
    error = models.TextField(
        blank=True, help_text="Why the question could not be scored (left out of means)."
    )
    unjudged = models.JSONField(
        default=dict,
        blank=True,
        help_text='External targets: {"unjudged@10": 2, ...}, ids the collection lacks.',
    )

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "position"], name="result_unique_position")]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.position}"

    @property
    def relevant_ids(self) -> list[str]:
        """The expected documents the run read as relevant, sorted (`expected` also holds those judged not
        relevant, grade 0: judged, never relevant)."""
        return sorted(d for d, grade in self.expected.items() if grade > 0)

    @property
    def ranked(self) -> list[tuple[str, float]]:
        """[(document_id, score), ...] in rank order."""
        if not self.ranked_ids:
            return []
        scores = np.frombuffer(bytes(self.ranked_scores), dtype="<f8").tolist()
        return list(zip(self.ranked_ids.split("\n"), scores, strict=True))

    @staticmethod
    def ranked_fields(pairs: Sequence[tuple[str, float]]) -> dict:
        """The stored form of a ranking, for QuestionResult(**...)."""
        return {
            "ranked_ids": "\n".join(doc for doc, _ in pairs),
            "ranked_scores": np.asarray([score for _, score in pairs], dtype="<f8").tobytes(),
        }


class PageEmbedding(models.Model):
    """A page's vector under one model-backed embedder, computed once and reused by every index build.

    `text_hash` is the sha256 of the text that was embedded: when a page's indexed text changes the vector
    is recomputed. LSI vectors depend on the whole collection and are never stored here."""

    page = models.ForeignKey(Page, on_delete=models.CASCADE, related_name="embeddings")
    embedder = models.CharField(max_length=300, help_text='e.g. "endpoint:<model>" or "minilm".')
    text_hash = models.CharField(max_length=64)
    vector = models.BinaryField(help_text="Little-endian float32, unit length.")
    dims = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["page", "embedder"], name="page_embedding_unique_embedder")
        ]

    def __str__(self) -> str:
        return f"page {self.page_id} / {self.embedder} ({self.dims} dims)"


class LabelLevel(models.TextChoices):
    QUESTION = labels.QUESTION
    STATEMENT = labels.STATEMENT


class HumanLabel(models.Model):
    """One rater's verdict on one judged item (evaluation.judgments.labels): a question's metric, or one statement of an
    answer. The answer is a stored run's (run) or imported with the passages it was judged against."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="human_labels")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="human_labels")
    # Tied to the golden entry; a snapshot of its key and question keeps the label readable if it goes.
    entry = models.ForeignKey(
        "goldenset.GoldenEntry", null=True, on_delete=models.SET_NULL, related_name="human_labels"
    )
    entry_key = models.CharField(max_length=300, blank=True)
    question = models.TextField()
    run = models.ForeignKey(
        EvaluationRun, null=True, blank=True, on_delete=models.CASCADE, related_name="labels"
    )
    answer = models.TextField(blank=True)
    passages = models.JSONField(
        default=list, blank=True, help_text="[{document_id, title, text}] (imported)."
    )
    metric = models.CharField(max_length=40)
    level = models.CharField(max_length=20, choices=LabelLevel.choices)
    statement = models.TextField(blank=True)
    rater = models.CharField(max_length=100)
    value = models.FloatField(help_text="1 pass / supported, 0.5 partially, 0 fail, or the score given.")
    passed = models.BooleanField()
    verdict = models.CharField(max_length=40)
    item_key = models.CharField(max_length=64, help_text="The item labelled, whoever labelled it.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection", "item_key", "rater"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "item_key", "rater"], name="label_unique_rater_item"
            )
        ]
        indexes = [models.Index(fields=["collection", "metric"], name="label_collection_metric_idx")]

    def __str__(self) -> str:
        return f"{self.rater}: {self.metric} {self.verdict}"


class JudgeThreshold(models.Model):
    """A pass threshold calibrated against human labels, applied to a collection's answer evaluations judged
    by `judge` ("heuristic" or the judge model); `source` records the calibration it came from."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="judge_thresholds")
    judge = models.CharField(max_length=300)
    metric = models.CharField(max_length=40)
    value = models.FloatField()
    source = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection", "judge", "metric"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "judge", "metric"], name="threshold_unique_metric")
        ]

    def __str__(self) -> str:
        return f"{self.collection} {self.judge} {self.metric} >= {self.value:g}"


class IndexManifest(models.Model):
    """A search index version published to the database (evaluation.retrieval.index_store): which files make it, and which
    parts it has. Every machine that serves fetches the files it lacks into its own index directory, so a
    machine without a worker (or whose worker did not build it) serves every collection's current index."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="index_manifests")
    key = models.CharField(max_length=200, unique=True, help_text="The index folder's name.")
    family = models.CharField(max_length=200, help_text="The key without its version: engine and embedder.")
    content_version = models.PositiveBigIntegerField()
    parts = models.JSONField(default=list)
    files = models.JSONField(default=list, help_text="[[name, sha256, size], ...], index.json last.")
    # HMAC-SHA256 of the rest under a key derived from SECRET_KEY: a row without it is refused (index_store).
    signature = models.CharField(max_length=64, blank=True, default="")
    published_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["family", "content_version"], name="index_manifest_family")]

    def __str__(self) -> str:
        return self.key


class IndexFile(models.Model):
    """One chunk of one published index file, by content digest (a version's arrays never change; its
    description and parts list are rewritten when a part is added, and each revision has a digest of its own)."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="index_files")
    key = models.CharField(max_length=200)
    name = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)
    chunk = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "name", "digest", "chunk"], name="index_file_chunk_unique")
        ]

    def __str__(self) -> str:
        return f"{self.key}/{self.name}#{self.chunk}"


# The models of other modules, registered with this app and named from here as from the rest:
from evaluation.judgment_models import (  # noqa: E402, F401
    PEOPLE,
    JudgmentPool,
    PoolApplication,
    PoolAssignment,
    PoolItem,
    RelevanceJudgment,
)
from evaluation.study_models import ConfigPreset, Study  # noqa: E402, F401
from evaluation.watch_models import (  # noqa: E402, F401
    Alert,
    AlertState,
    Delivery,
    DeliveryState,
    Schedule,
    ScheduleRun,
    WatchJobKind,
)
