"""POST /search/evaluate/question: one question under up to three configurations, side by side (the query
workbench's REST face; the work is evaluation.workbench.question's)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation import configs as config_parser
from evaluation.api.views import read_strictly
from evaluation.presets import with_presets
from evaluation.request_fields import parse_bool, parse_ks
from evaluation.retrieval.read_path import available_rerankers
from evaluation.workbench.question import (
    MAX_COLUMNS,
    MAX_QUESTION_CHARS,
    asked_entry,
    asked_query,
    question_columns,
)
from goldenset.api.base import TenantAPIView
from goldenset.api.serializers import TenantIn, error_responses
from goldenset.selectors import collection_get


class WorkbenchQuestionIn(TenantIn):
    collection_id = serializers.CharField()
    entry_id = serializers.CharField(
        required=False, allow_null=True, max_length=300, help_text="A golden entry's key or id."
    )
    question = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=MAX_QUESTION_CHARS,
        help_text="A query that is not in the golden set (results, no metrics); instead of entry_id.",
    )
    configs = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text=f"As /search/evaluate's (presets allowed), at most {MAX_COLUMNS}; default one FullText.",
    )
    ks = serializers.JSONField(required=False, allow_null=True, help_text="As /search/evaluate's.")
    explain = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="true: each built-in result says why it scores what it does.",
    )


class WorkbenchResultOut(serializers.Serializer):
    document_id = serializers.CharField()
    title = serializers.CharField(allow_null=True, help_text="null: an id the collection does not hold.")
    rank = serializers.IntegerField()
    score = serializers.FloatField(allow_null=True, help_text="null: a target that gives no scores.")
    grade = serializers.IntegerField(allow_null=True, help_text="The golden set's grade; null: unjudged.")
    pending_grade = serializers.IntegerField(
        allow_null=True, help_text="People's grade not yet applied to the golden set."
    )
    in_collection = serializers.BooleanField()
    page_number = serializers.IntegerField(allow_null=True)
    snippet = serializers.CharField(allow_blank=True)
    ranks_elsewhere = serializers.DictField(
        child=serializers.IntegerField(allow_null=True),
        help_text="Its rank in each other column (null: absent).",
    )
    explain = serializers.DictField(
        required=False, help_text="With explain: true, for built-in configurations."
    )


class WorkbenchColumnOut(serializers.Serializer):
    label = serializers.CharField()  # type: ignore[assignment]
    config = serializers.DictField()
    depth = serializers.IntegerField()
    took_ms = serializers.FloatField()
    error = serializers.CharField(allow_blank=True, help_text="A target's failed call; no results then.")
    results = WorkbenchResultOut(many=True)
    metrics = serializers.DictField(
        child=serializers.FloatField(), allow_null=True, help_text="Against the golden set; null: not scored."
    )
    metrics_with_pending = serializers.DictField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="With people's judgments not yet applied; null when there are none.",
    )
    warnings = serializers.ListField(child=serializers.CharField())


class WorkbenchQuestionOut(serializers.Serializer):
    collection_id = serializers.CharField()
    entry_id = serializers.CharField(allow_null=True)
    entry_key = serializers.CharField(allow_blank=True)
    question = serializers.CharField()
    ks = serializers.ListField(child=serializers.IntegerField())
    scored = serializers.BooleanField(help_text="A golden question with an expected document: metrics given.")
    pending_judgments = serializers.IntegerField()
    configs = WorkbenchColumnOut(many=True)
    index = serializers.DictField()


class EvaluateQuestionApi(TenantAPIView):
    required_permissions = needs(POST=Perm.VIEW)

    @extend_schema(
        request=WorkbenchQuestionIn,
        responses={
            200: WorkbenchQuestionOut,
            **error_responses("index-building", "index-not-shared", "embeddings-unavailable"),
        },
        summary="Evaluates one question under up to three configurations, side by side.",
    )
    def post(self, request):
        data = read_strictly(WorkbenchQuestionIn, request.data)
        tenant = self.tenant(data)
        collection = collection_get(tenant=tenant, collection_id=data["collection_id"])
        if bool(data.get("entry_id")) == bool(data.get("question")):
            raise EvalsiteError(
                "validation-error",
                "entry_id: give a golden entry's key or id, or a question, not both.",
                details={"field": "entry_id"},
            )
        asked = (
            asked_entry(collection, data["entry_id"])
            if data.get("entry_id")
            else asked_query(data["question"])
        )
        raw = with_presets(tenant, data.get("configs"))
        configs = config_parser.parse_configs(raw, available_rerankers())
        explain = parse_bool(data["explain"], "explain") if data.get("explain") is not None else False
        result = question_columns(
            tenant=tenant, collection=collection, asked=asked, configs=configs, ks=parse_ks(data.get("ks")),
            explain=explain,
        )  # fmt: skip
        return Response(result)
