from __future__ import annotations

import hashlib
import json
import secrets
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from goldenset.text import question_hash


class Cluster(models.Model):
    slug = models.CharField(max_length=100, unique=True, help_text="The cluster_id clients send.")
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Tenant(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="tenants")
    slug = models.CharField(max_length=100, help_text="The tenant_id clients send.")
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["cluster__slug", "slug"]
        constraints = [models.UniqueConstraint(fields=["cluster", "slug"], name="tenant_unique_per_cluster")]

    def __str__(self) -> str:
        return f"{self.cluster.slug}/{self.slug}"


def hash_api_key(secret: str) -> str:
    # The secret is 256 random bits, so a plain SHA-256 is safe and keeps per-request lookup O(1).
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKey(models.Model):
    PREFIX_LENGTH = 12

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(
        max_length=PREFIX_LENGTH, editable=False, help_text="Shown to identify the key."
    )
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'})"

    @staticmethod
    def new_secret() -> str:
        return "esk_" + secrets.token_urlsafe(32)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Membership(models.Model):
    """A dashboard user's access to a tenant (superusers see every tenant)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant}"


class Collection(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="collections")
    slug = models.CharField(max_length=200, help_text="The collection_id clients send.")
    name = models.CharField(max_length=300, blank=True)
    # Identity beyond this database's primary keys: cached search indexes are named by it, so an index file can
    # never be mistaken for another collection's (another database, a recreated collection).
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # Bumped on every change of documents or pages: search indexes are keyed by (collection, content_version).
    content_version = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "slug"], name="collection_unique_per_tenant")
        ]

    def __str__(self) -> str:
        return self.slug


class Document(models.Model):
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents")
    external_id = models.CharField(max_length=300, help_text="The document id clients send.")
    title = models.TextField(blank=True)
    source = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Inclusive; a date-only value is stored as the end of that day (UTC).",
    )
    supersedes = models.JSONField(default=list, blank=True, help_text="External ids this document replaces.")
    last_verified = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["collection", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "external_id"], name="document_unique_per_collection"
            )
        ]

    def __str__(self) -> str:
        return self.external_id


class Page(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="pages")
    number = models.PositiveIntegerField(help_text="1-based position within the document.")
    text = models.TextField()

    class Meta:
        ordering = ["document", "number"]
        constraints = [models.UniqueConstraint(fields=["document", "number"], name="page_unique_number")]

    def __str__(self) -> str:
        return f"{self.document.external_id}#{self.number}"


class Origin(models.TextChoices):
    MANUAL = "Manual"
    IMPORTED = "Imported"
    GENERATED = "Generated"


class GoldenEntry(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="golden_entries")
    key = models.CharField(
        max_length=300,
        blank=True,
        default="",
        help_text="Optional client id, unique per collection (a query id).",
    )
    question = models.TextField()
    # sha256 of the case- and space-folded question (goldenset.text.question_hash): duplicates of an
    # existing question are refused on it. A hash, not the folded text: a unique index on text fails on
    # PostgreSQL for a long question (btree rows are limited to ~2.7 kB).
    question_hash = models.CharField(max_length=64, editable=False)
    expected_document_ids = models.JSONField(default=list, blank=True)
    grades = models.JSONField(
        default=dict, blank=True, help_text="Graded relevance per expected document id (1 when absent)."
    )
    reference_answer = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    # "|tag1|tag2|": tag filtering that works on SQLite too (JSON containment lookups do not).
    tags_index = models.TextField(editable=False, blank=True, default="")
    answerable = models.BooleanField(default=True)
    origin = models.CharField(max_length=20, choices=Origin.choices, default=Origin.MANUAL)
    reviewed = models.BooleanField(default=False)
    source_page = models.ForeignKey(Page, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    job = models.ForeignKey(
        "Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="golden_entries"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "golden entry"
        verbose_name_plural = "golden entries"
        ordering = ["collection", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "key"], condition=~Q(key=""), name="golden_key_unique_per_collection"
            ),
            models.UniqueConstraint(fields=["collection", "question_hash"], name="golden_question_unique"),
        ]
        indexes = [models.Index(fields=["collection", "origin", "reviewed"], name="golden_filter_idx")]

    def __str__(self) -> str:
        return self.question[:80]

    def save(self, *args, **kwargs):
        self.prepare()
        super().save(*args, **kwargs)

    def prepare(self) -> None:
        """Compute the indexed forms; bulk writers call this since bulk_create skips save()."""
        self.question_hash = question_hash(self.question)
        self.tags_index = "".join(f"|{tag}" for tag in self.tags) + "|" if self.tags else ""

    def grade(self, document_id: str) -> int:
        return int(self.grades.get(document_id, 1))


class JobKind(models.TextChoices):
    INGEST = "Ingest"
    GENERATE = "Generate"
    EVALUATE = "Evaluate"
    EVALUATE_ANSWERS = "EvaluateAnswers"
    INDEX_BUILD = "IndexBuild"


class JobStatus(models.TextChoices):
    QUEUED = "Queued"
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"
    CANCELLED = "Cancelled"


class Job(models.Model):
    FINISHED = (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="jobs")
    collection = models.ForeignKey(
        Collection, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(max_length=30, choices=JobKind.choices)
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
    # Durability (goldenset.jobs): when its task last went to the broker, which worker process holds it, how
    # often a worker took it (each claim's number fences the writes of an earlier holder), how often it was
    # put back after a failure (bounded by EVALSITE_JOB_MAX_RETRIES), and what happened to it on the way.
    queued_at = models.DateTimeField(null=True, blank=True)
    owner = models.CharField(
        max_length=300, blank=True, default="", help_text="host:pid:start of its worker."
    )
    attempts = models.PositiveIntegerField(default=0, help_text="Times a worker took it.")
    retries = models.PositiveIntegerField(default=0, help_text="Times it was re-queued after a failure.")
    history = models.JSONField(
        default=list, blank=True, help_text='[{"at", "event", "message"}]: re-queues and interruptions.'
    )

    class Meta:
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
    (goldenset.jobs.worker), and /healthz and the dashboard read the beats' age."""

    name = models.CharField(max_length=300, unique=True, help_text="host:pid:start, as in Job.owner.")
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField(db_index=True)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-beat_at"]

    def __str__(self) -> str:
        return self.name


class AuditAction(models.TextChoices):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    INGEST = "ingest", "ingest (documents added or replaced)"
    REVOKE = "revoke"
    LAUNCH = "launch", "launch (a job queued)"


class AuditObject(models.TextChoices):
    GOLDEN_ENTRY = "golden-entry"
    COLLECTION = "collection"
    DOCUMENT = "document"
    API_KEY = "api-key", "API key"
    JOB = "job"


class AuditEvent(models.Model):
    """Who changed what, when: one row per write, written by the service that makes the write, in its
    transaction (goldenset.services.audit), so a write that fails leaves no event and no write goes unrecorded.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="audit_events")
    # The collection by slug (kept after it is deleted) and by uid (a collection renamed, or deleted and
    # created again under the same slug, is told apart); empty for writes outside a collection (API keys).
    collection_slug = models.CharField(max_length=200, blank=True, default="")
    collection_uid = models.UUIDField(null=True, blank=True)
    object_type = models.CharField(
        max_length=50, choices=AuditObject.choices, default=AuditObject.GOLDEN_ENTRY
    )
    object_id = models.CharField(
        max_length=300,
        db_index=True,
        help_text="The entry or job id, the collection slug, the document id, the API key's prefix.",
    )
    action = models.CharField(max_length=20, choices=AuditAction.choices)
    actor = models.CharField(
        max_length=300,
        help_text='"user:<username>" (dashboard, admin), "api-key:<prefix>" (API), "command:<name>" '
        '(management commands), "job" (a job that recorded no actor).',
    )
    changes = models.JSONField(
        default=dict,
        blank=True,
        help_text="Field -> [before, after] on update; a snapshot on create and delete; counts on ingest.",
    )
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "collection_uid", "-at"], name="audit_collection_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.object_type} {self.object_id}"

    def summary(self, length: int = 120) -> str:
        """One line for tables: the fields an update changed, else what the snapshot or counts say."""
        changes = self.changes if isinstance(self.changes, dict) else {}
        if self.action == AuditAction.UPDATE:
            return "; ".join(
                f"{name}: {_short(pair[0], 60)} → {_short(pair[1], 60)}"
                if isinstance(pair, list) and len(pair) == 2
                else f"{name}: {_short(pair, 60)}"
                for name, pair in changes.items()
            )
        if self.action == AuditAction.INGEST:
            counts = ("received", "created", "updated", "unchanged")
            text = ", ".join(f"{changes[k]} {k}" for k in counts if k in changes)
            return _short(f"{text} ({changes['source']})" if changes.get("source") else text, length)
        for name in ("question", "title", "name", "kind"):
            if changes.get(name):
                return _short(changes[name], length)
        return ""


def _short(value: object, length: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= length else text[: length - 1] + "…"


class LLMCall(models.Model):
    """The call cache of the chat client (goldenset.llm_cache): one successful answer per
    (model, messages, parameters), so a re-run of a generation or a judgement costs nothing and reads the same."""

    key = models.CharField(max_length=64, unique=True, help_text="sha256 of model, messages and parameters.")
    model = models.CharField(max_length=300)
    text = models.TextField()
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    finish_reason = models.CharField(max_length=50, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = "LLM call"

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"


class StagedUpload(models.Model):
    """A file the dashboard previewed and holds until its import (goldenset.services.uploads): in the database,
    so that the import reads it whichever machine serves the next request."""

    token = models.CharField(max_length=32, unique=True)
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="staged_uploads")
    name = models.CharField(max_length=300, blank=True)
    options = models.JSONField(
        default=dict, help_text="What the import needs besides the bytes (format, ...)."
    )
    data = models.BinaryField()
    qrels = models.BinaryField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.token})"
