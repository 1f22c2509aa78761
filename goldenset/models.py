from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from goldenset.drift import page_hash
from goldenset.text import DEFAULT_GRADE, canonical_grades, question_hash
from goldenset.vocabulary import golden_fields
from goldenset.vocabulary.grade_scales import DEFAULT_SCALE, SCALES


class Collection(models.Model):
    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.CASCADE, related_name="collections")
    slug = models.CharField(max_length=200, help_text="The collection_id clients send.")
    name = models.CharField(max_length=300, blank=True)
    # Identity beyond this database's primary keys: cached search indexes are named by it, so an index file can
    # never be mistaken for another collection's (another database, a recreated collection).
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # Bumped on every change of documents or pages: search indexes are keyed by (collection, content_version).
    content_version = models.PositiveIntegerField(default=0, editable=False)
    # The scale its relevance grades are given on (goldenset.vocabulary.grade_scales): set from the first graded
    # import, changed by a curator with every stored grade converted (goldenset.services.scales).
    grade_scale = models.CharField(
        max_length=10,
        choices=[(name, name) for name in SCALES],
        default=DEFAULT_SCALE,
        db_default=DEFAULT_SCALE,  # a row written by code that predates the field (a rolling upgrade) gets it
        help_text="The scale relevance grades are given on: binary, 0-2, 0-3 or 0-4.",
    )
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
    # sha256 of the text (goldenset.drift.page_hash): golden entries remember their documents' content by it.
    # save() sets it; a bulk writer calls prepare() (bulk_create and UPDATEs skip save()).
    content_hash = models.CharField(max_length=64, default="", blank=True, editable=False)

    class Meta:
        ordering = ["document", "number"]
        constraints = [models.UniqueConstraint(fields=["document", "number"], name="page_unique_number")]

    def __str__(self) -> str:
        return f"{self.document.external_id}#{self.number}"

    def save(self, *args, **kwargs):
        self.prepare()
        super().save(*args, **kwargs)

    def prepare(self) -> Page:
        self.content_hash = page_hash(self.text)
        return self


class Origin(models.TextChoices):
    MANUAL = golden_fields.MANUAL
    IMPORTED = golden_fields.IMPORTED
    GENERATED = golden_fields.GENERATED


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
        default=dict,
        blank=True,
        help_text="Graded relevance per expected document id (1 when absent); 0 for a document judged not "
        "relevant, expected or not.",
    )
    reference_answer = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    # "|tag1|tag2|": tag filtering that works on SQLite too (JSON containment lookups do not).
    tags_index = models.TextField(editable=False, blank=True, default="")
    answerable = models.BooleanField(default=True)
    origin = models.CharField(max_length=20, choices=Origin.choices, default=Origin.MANUAL)
    reviewed = models.BooleanField(default=False)
    # What its expected documents looked like when a person last looked at it (created it, changed what it
    # expects, or marked it reviewed): {document id: goldenset.drift.document_hash}; drift compares against it.
    reviewed_hashes = models.JSONField(default=dict, blank=True, editable=False)
    reviewed_at = models.DateTimeField(null=True, blank=True, editable=False)
    source_page = models.ForeignKey(Page, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="golden_entries"
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
        """Compute the indexed forms and the grades' one stored form (an expected document's grade 1 left
        out: goldenset.text.canonical_grades); bulk writers call this since bulk_create skips save()."""
        self.grades = canonical_grades(self.grades or {}, self.expected_document_ids or ())
        self.question_hash = question_hash(self.question)
        self.tags_index = "".join(f"|{tag}" for tag in self.tags) + "|" if self.tags else ""

    def grade(self, document_id: str) -> int:
        return int(self.grades.get(document_id, DEFAULT_GRADE))

    def qrels(self) -> dict[str, int]:
        """Every judged document with its grade, as trec_eval reads qrels: the expected ones (1 unless graded)
        and those judged not relevant (0), which count as judged, never as relevant."""
        judged = {d: self.grade(d) for d in self.expected_document_ids}
        for document_id, grade in (self.grades or {}).items():
            judged.setdefault(document_id, int(grade))
        return judged


class RejectedQuestion(models.Model):
    """A generated question a curator rejected (goldenset.services.rejections): generation never writes it into
    this collection again. One row per rejected question; deleting the row (the admin) un-rejects it."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="rejected_questions")
    question = models.TextField()
    # goldenset.text.question_hash, the form duplicate questions are compared on (case, spaces, NFKC folded).
    question_hash = models.CharField(max_length=64, editable=False)
    source_page = models.ForeignKey(Page, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    rejected_by = models.CharField(max_length=300, help_text="The actor whose delete rejected it.")
    rejected_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "-rejected_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "question_hash"], name="rejected_question_unique")
        ]

    def __str__(self) -> str:
        return self.question[:80]

    def save(self, *args, **kwargs):
        self.question_hash = question_hash(self.question)
        super().save(*args, **kwargs)


class GoldenJobKind(models.TextChoices):
    """The jobs goldenset runs (registered with their handlers in GoldensetConfig.ready)."""

    INGEST = "Ingest"
    GENERATE = "Generate"


class GoldenAuditObject(models.TextChoices):
    """What goldenset's writes name in the audit trail (registered in GoldensetConfig.ready)."""

    GOLDEN_ENTRY = "golden-entry"
    COLLECTION = "collection"
    DOCUMENT = "document"


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
