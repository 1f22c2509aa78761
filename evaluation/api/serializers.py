from __future__ import annotations

from rest_framework import serializers

from goldenset.api.serializers import TenantIn


class SearchIn(TenantIn):
    collection_id = serializers.CharField(required=False, allow_blank=True)
    collection_ids = serializers.ListField(child=serializers.CharField(), required=False)
    query = serializers.CharField(max_length=10_000)
    # null means the default, as in a configuration of /search/evaluate
    search_type = serializers.CharField(required=False, allow_null=True)
    fusion = serializers.CharField(required=False, allow_null=True)
    rerank = serializers.JSONField(required=False, allow_null=True)
    bm25_variant = serializers.CharField(required=False, allow_null=True)
    top_k = serializers.JSONField(required=False, allow_null=True)
    as_of = serializers.JSONField(required=False, allow_null=True)
    include_superseded = serializers.JSONField(required=False, allow_null=True)
    fulltext_weight = serializers.JSONField(required=False, allow_null=True)


class EvaluateIn(TenantIn):
    collection_id = serializers.CharField(required=False, allow_blank=True)
    collection_ids = serializers.ListField(child=serializers.CharField(), required=False)
    ks = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text='Numbers or numeric strings, e.g. [1, 5, 10] or ["10"]; default [1, 5, 10].',
    )
    configs = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="[{label, search_type: FullText|Vector|Hybrid, fusion: Rrf|Weighted, rerank, bm25_variant, "
        "top_k, as_of, include_superseded}]",
    )


class RunOut(serializers.Serializer):
    run_id = serializers.UUIDField(source="id")
    batch_id = serializers.UUIDField()
    kind = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    collection_ids = serializers.ListField(child=serializers.CharField())
    config = serializers.JSONField()
    ks = serializers.ListField(child=serializers.IntegerField())
    metrics = serializers.DictField(child=serializers.FloatField())
    metric_methods = serializers.DictField(child=serializers.CharField())
    mode = serializers.CharField()
    question_count = serializers.IntegerField()
    duration_ms = serializers.FloatField()
    warnings = serializers.ListField(child=serializers.CharField())
    golden_fingerprint = serializers.CharField()
    index = serializers.JSONField(source="index_info")
    job_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()


class QuestionResultOut(serializers.Serializer):
    position = serializers.IntegerField()
    entry_id = serializers.UUIDField()
    entry_key = serializers.CharField()
    collection_id = serializers.CharField()
    question = serializers.CharField()
    expected = serializers.DictField(child=serializers.IntegerField())
    ranked = serializers.SerializerMethodField()
    first_relevant_rank = serializers.IntegerField(allow_null=True)
    missing_document_ids = serializers.ListField(child=serializers.CharField())
    metrics = serializers.DictField(child=serializers.FloatField())
    diagnosis = serializers.CharField()
    warnings = serializers.ListField(child=serializers.CharField())

    def get_ranked(self, result) -> list[dict]:
        return [
            {"rank": rank, "document_id": doc, "score": score, "relevant": doc in result.expected}
            for rank, (doc, score) in enumerate(result.ranked, start=1)
        ]


class RunDetailOut(RunOut):
    results = QuestionResultOut(many=True)


class RunFilterIn(TenantIn):
    collection_id = serializers.CharField(required=False, allow_blank=True)
    label = serializers.CharField(required=False, allow_blank=True)  # type: ignore[assignment]
    batch_id = serializers.UUIDField(required=False)
    kind = serializers.ChoiceField(choices=["retrieval", "answers"], required=False)
