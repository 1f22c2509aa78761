from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from evalsite.errors import ERROR_CODES
from goldenset.api.fields import (
    PageTextField,
    StringListField,
    TemporalField,
    collection_id_field,
    document_id_field,
    expected_documents_field,
    key_field,
    question_field,
    reference_answer_field,
    tags_field,
)
from goldenset.formats import FORMATS
from goldenset.models import Origin


class TenantIn(serializers.Serializer):
    cluster_id = serializers.CharField(required=False, allow_blank=True)
    tenant_id = serializers.CharField(required=False, allow_blank=True)


# --- collections -------------------------------------------------------------------------------------------


class CollectionIn(TenantIn):
    collection_id = collection_id_field()
    name = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")


class CollectionOut(serializers.Serializer):
    collection_id = serializers.CharField(source="slug")
    name = serializers.CharField()
    cluster_id = serializers.CharField(source="tenant.cluster.slug")
    tenant_id = serializers.CharField(source="tenant.slug")
    content_version = serializers.IntegerField()
    grade_scale = serializers.CharField(
        help_text="The scale its relevance grades are given on: binary, 0-2, 0-3, 0-4."
    )
    document_count = serializers.IntegerField(required=False)
    golden_entry_count = serializers.IntegerField(required=False)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


# --- documents ---------------------------------------------------------------------------------------------


class DocumentIn(serializers.Serializer):
    id = document_id_field()
    title = serializers.CharField(allow_blank=True, required=False, default="")
    text = serializers.CharField(allow_blank=True, required=False, trim_whitespace=False)
    pages = serializers.ListField(child=PageTextField(), required=False)
    source = serializers.CharField(allow_blank=True, required=False, default="")  # type: ignore[assignment]
    metadata = serializers.DictField(required=False, default=dict)
    valid_from = TemporalField(required=False, allow_null=True, default=None)
    valid_until = TemporalField(end_of_day=True, required=False, allow_null=True, default=None)
    supersedes = StringListField(required=False)
    last_verified = TemporalField(required=False, allow_null=True, default=None)

    def validate(self, attrs):
        if "text" in attrs and "pages" in attrs:
            raise serializers.ValidationError('Send either "text" or "pages", not both.')
        if (
            attrs.get("valid_from")
            and attrs.get("valid_until")
            and attrs["valid_until"] < attrs["valid_from"]
        ):
            raise serializers.ValidationError({"valid_until": "valid_until is before valid_from."})
        return attrs


class DocumentsIn(TenantIn):
    documents = DocumentIn(many=True, allow_empty=False)


class DocumentUploadIn(TenantIn):
    file = serializers.ListField(child=serializers.FileField(allow_empty_file=True), allow_empty=False)


class PageOut(serializers.Serializer):
    number = serializers.IntegerField()
    text = serializers.CharField()


class DocumentOut(serializers.Serializer):
    id = serializers.CharField(source="external_id")
    title = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    metadata = serializers.DictField()
    valid_from = TemporalField(allow_null=True)
    valid_until = TemporalField(allow_null=True)
    supersedes = serializers.ListField(child=serializers.CharField())
    last_verified = TemporalField(allow_null=True)
    page_count = serializers.IntegerField(required=False)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class DocumentDetailOut(DocumentOut):
    pages = PageOut(many=True)


# --- golden set --------------------------------------------------------------------------------------------


class GoldenEntryIn(serializers.Serializer):
    question = question_field()
    expected_document_ids = expected_documents_field(required=False)
    reference_answer = reference_answer_field(allow_null=True, required=False, default="")
    key = key_field(allow_blank=True, required=False, default="")
    tags = tags_field(required=False)
    answerable = serializers.BooleanField(required=False, default=True)
    grades = serializers.DictField(
        child=serializers.IntegerField(min_value=0, max_value=1000), required=False, default=dict
    )

    def validate_reference_answer(self, value):
        return value or ""


class GoldenSetAddIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    entries = serializers.ListField(child=serializers.DictField(), allow_empty=False)


class GoldenEntryPatchIn(serializers.Serializer):
    question = question_field(required=False)
    expected_document_ids = expected_documents_field(required=False)
    reference_answer = reference_answer_field(required=False)
    key = key_field(allow_blank=True, required=False)
    tags = tags_field(required=False)
    answerable = serializers.BooleanField(required=False)
    reviewed = serializers.BooleanField(required=False)
    grades = serializers.DictField(
        child=serializers.IntegerField(min_value=0, max_value=1000), required=False
    )


class GoldenSetGenerateIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    count = serializers.IntegerField(
        min_value=1,
        help_text="Questions wanted (a number or a numeric string); at most EVALSITE_GENERATE_MAX_COUNT.",
    )
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=300,
        help_text='The chat model; default EVALSITE_LLM_MODEL. "template" (or no endpoint configured): the offline '
        "template writer.",
    )
    seed = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=2**63 - 1,
        help_text="Sampling seed (a number or a numeric string); chosen and reported when absent.",
    )


class GenerateAcceptedOut(serializers.Serializer):
    job_id = serializers.UUIDField()
    status = serializers.CharField()
    seed = serializers.IntegerField()
    model = serializers.CharField()
    backend = serializers.CharField()


class GoldenSetFilterIn(TenantIn):
    collection_id = serializers.CharField(required=False, allow_blank=True)
    tag = serializers.CharField(required=False, allow_blank=True)
    origin = serializers.ChoiceField(choices=Origin.choices, required=False)
    reviewed = serializers.BooleanField(required=False, allow_null=True, default=None)
    answerable = serializers.BooleanField(required=False, allow_null=True, default=None)
    text = serializers.CharField(required=False, allow_blank=True)


class GoldenUploadIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    file = serializers.FileField(allow_empty_file=True)  # an empty file is the domain's empty-file error
    format = serializers.ChoiceField(
        choices=list(FORMATS), required=False, help_text="Default: detected from the file's name and content."
    )
    qrels = serializers.FileField(required=False, help_text="format trec: the qrels file beside the topics.")
    create_documents = serializers.BooleanField(
        required=False, default=False, help_text="Create reference passages matching no page as documents."
    )
    dry_run = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Count what would be created, updated, unchanged; write nothing.",
    )


class GoldenEntryOut(serializers.Serializer):
    id = serializers.UUIDField()
    key = serializers.CharField()
    collection_id = serializers.CharField(source="collection.slug")
    question = serializers.CharField()
    expected_document_ids = serializers.ListField(child=serializers.CharField())
    grades = serializers.DictField(child=serializers.IntegerField())
    reference_answer = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    answerable = serializers.BooleanField()
    origin = serializers.CharField()
    reviewed = serializers.BooleanField()
    source_page_id = serializers.IntegerField(allow_null=True)
    job_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


# --- jobs --------------------------------------------------------------------------------------------------


class JobOut(serializers.Serializer):
    job_id = serializers.UUIDField(source="id")
    kind = serializers.CharField()
    status = serializers.CharField()
    progress = serializers.FloatField()
    progress_done = serializers.IntegerField()
    progress_total = serializers.IntegerField()
    collection_id = serializers.CharField(source="collection.slug", allow_null=True, default=None)
    result = serializers.JSONField(allow_null=True)
    error = serializers.JSONField(allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    attempts = serializers.IntegerField(help_text="Times a worker took the job.")
    history = serializers.JSONField(
        help_text='What happened on the way: [{"at", "event", "message"}], events worker-lost, task-lost, '
        "database-error, interrupted."
    )
    parent_id = serializers.UUIDField(
        allow_null=True,
        help_text="The job whose work this one is a part of (a child job: one configuration of an evaluation, "
        "one worker's share of a study's trials), or null.",
    )


class IngestResultOut(serializers.Serializer):
    """What services.documents_upsert returns."""

    received = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    pages_written = serializers.IntegerField()
    pages_deleted = serializers.IntegerField()


class JobAcceptedOut(serializers.Serializer):
    job_id = serializers.UUIDField()
    status = serializers.CharField()


class GoldenImportOut(serializers.Serializer):
    records = serializers.IntegerField()
    created = serializers.IntegerField(help_text="New entries.")
    updated = serializers.IntegerField(help_text="Existing entries the file changed.")
    unchanged = serializers.IntegerField(help_text="Existing entries that already said what the file says.")


class GoldenPreviewRowOut(serializers.Serializer):
    """One entry of a previewed file as the import will store it."""

    where = serializers.CharField(help_text="Where the file holds it: `line 2`, `record 0`.")
    action = serializers.ChoiceField(choices=["create", "update", "unchanged"])
    key = serializers.CharField(
        help_text="The stored entry's key ('' for none): an updated entry keeps its own."
    )
    question = serializers.CharField()
    expected_document_ids = serializers.ListField(child=serializers.CharField())
    reference_answer = serializers.CharField(allow_blank=True)
    tags = serializers.ListField(child=serializers.CharField())
    answerable = serializers.BooleanField()


class GoldenUploadOut(GoldenImportOut):
    format = serializers.ChoiceField(choices=list(FORMATS))
    documents_created = serializers.IntegerField(help_text="Reference passages created as documents.")
    warnings = serializers.ListField(child=serializers.CharField())
    dry_run = serializers.BooleanField(required=False, help_text="Present (true) when nothing was written.")
    rows = GoldenPreviewRowOut(
        many=True,
        required=False,
        help_text="With dry_run: the file's first entries (up to 5) as they will be stored.",
    )


class GoldenAddOut(serializers.Serializer):
    added = serializers.IntegerField()
    entries = GoldenEntryOut(many=True)


class GoldenFileRecordOut(serializers.Serializer):
    """One record of an okfsmith golden.json (goldenset.golden_files.dump_golden)."""

    id = serializers.CharField(required=False, help_text="The entry's key; absent when it has none.")
    question = serializers.CharField()
    expected_answer = serializers.CharField()
    must_cite = serializers.ListField(child=serializers.CharField())
    tags = serializers.ListField(child=serializers.CharField())
    answerable = serializers.BooleanField(required=False, help_text="Present (false) only when unanswerable.")


# The other formats of the export, as a client that parses them reads them (JSON and YAML are parsed by clients
# and by schema checkers alike: a string schema for them would be wrong).


class DeepEvalMetadataOut(serializers.Serializer):
    key = serializers.CharField(required=False, help_text="The entry's key; absent when it has none.")
    expected_document_ids = serializers.ListField(child=serializers.CharField())
    grades = serializers.DictField(child=serializers.IntegerField(), required=False)
    tags = serializers.ListField(child=serializers.CharField())
    answerable = serializers.BooleanField()


class DeepEvalRecordOut(serializers.Serializer):
    """One golden of a DeepEval dataset file (format deepeval)."""

    input = serializers.CharField()
    expected_output = serializers.CharField(allow_blank=True)
    # `context` is a serializer's own attribute: declared below.
    additional_metadata = DeepEvalMetadataOut()

    def get_fields(self):
        fields = super().get_fields()
        fields["context"] = serializers.ListField(
            child=serializers.CharField(), required=False, help_text="Reference passages, by text."
        )
        return fields


class PromptfooVarsOut(serializers.Serializer):
    question = serializers.CharField()


class PromptfooAssertOut(serializers.Serializer):
    type = serializers.ChoiceField(choices=["factuality"])
    value = serializers.CharField(help_text="The reference answer.")


class PromptfooMetadataOut(serializers.Serializer):
    expected_document_ids = serializers.ListField(child=serializers.CharField())
    grades = serializers.DictField(child=serializers.IntegerField(), required=False)
    tags = serializers.ListField(child=serializers.CharField())
    answerable = serializers.BooleanField()


class PromptfooTestOut(serializers.Serializer):
    """One test of a promptfoo test file (format promptfoo, YAML)."""

    description = serializers.CharField(required=False, help_text="The entry's key; absent when it has none.")
    vars = PromptfooVarsOut()
    # `assert` is a Python keyword: declared below.
    metadata = PromptfooMetadataOut()

    def get_fields(self):
        fields = super().get_fields()
        fields["assert"] = PromptfooAssertOut(
            many=True, required=False, help_text="Absent without an answer."
        )
        return fields


# --- errors ------------------------------------------------------------------------------------------------


class ErrorBodyOut(serializers.Serializer):
    code = serializers.CharField(help_text="Stable: clients branch on it, never on the message.")
    message = serializers.CharField()
    details = serializers.DictField(help_text="The offending field, record or line.")


class ErrorOut(serializers.Serializer):
    """The one error envelope of every API call."""

    error = ErrorBodyOut()


def describe_errors(codes) -> str:
    """An error response's description: each code it can carry with its meaning (evalsite.errors)."""
    return "\n".join(f"- `{code}`: {ERROR_CODES[code][1]}" for code in codes)


def error_responses(*codes: str) -> dict[int, OpenApiResponse]:
    """OpenAPI responses for the error codes only this operation answers, each under its status with the
    envelope. The errors every operation shares (401, 400, 404, 413, 415, 503 database-unavailable) are added
    to every operation by evalsite.api.schema.AutoSchema."""
    statuses: dict[int, list[str]] = {}
    for code in codes:
        statuses.setdefault(ERROR_CODES[code][0], []).append(code)
    return {
        status: OpenApiResponse(ErrorOut, description=describe_errors(listed))
        for status, listed in sorted(statuses.items())
    }
