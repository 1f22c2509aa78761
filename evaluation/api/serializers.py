from __future__ import annotations

from rest_framework import serializers

from goldenset.api.serializers import TenantIn
from goldenset.vocabulary.groundedness import GROUNDEDNESS_LEVELS

# Collections one call may search or evaluate together: each is an index to load, so the work is bounded.
MAX_COLLECTIONS_PER_CALL = 50


class SearchIn(TenantIn):
    collection_id = serializers.CharField(required=False, allow_blank=True)
    collection_ids = serializers.ListField(
        child=serializers.CharField(), required=False, max_length=MAX_COLLECTIONS_PER_CALL
    )
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
    collection_ids = serializers.ListField(
        child=serializers.CharField(), required=False, max_length=MAX_COLLECTIONS_PER_CALL
    )
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


class AnswerIn(SearchIn):
    model = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=300,
        help_text='The answering model; default EVALSITE_LLM_MODEL; "extractive" (or no endpoint configured): '
        "the offline extractive answer.",
    )
    groundedness = serializers.CharField(
        required=False,
        allow_null=True,
        help_text=f"{' | '.join(GROUNDEDNESS_LEVELS)}: how strictly to decline.",
    )


class EvaluateAnswersIn(TenantIn):
    collection_id = serializers.CharField(required=False, allow_blank=True)
    collection_ids = serializers.ListField(
        child=serializers.CharField(), required=False, max_length=MAX_COLLECTIONS_PER_CALL
    )
    judge_model = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=300,
        help_text='The judge; default EVALSITE_LLM_MODEL; "heuristic" (or no endpoint configured): the '
        "token-overlap heuristic.",
    )
    configs = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="[{label, model, search_type, fusion, rerank, top_k (passages, default 5), groundedness: "
        f"{'|'.join(GROUNDEDNESS_LEVELS)}}}]",
    )
    unanswerable_questions = serializers.ListField(
        child=serializers.CharField(max_length=10_000), required=False, default=list, max_length=1000
    )
    max_questions = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    metric_thresholds = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="{metric: 0..1}; defaults context_relevancy 0.6, faithfulness 0.6, answer_relevancy 0.4.",
    )


class RunOut(serializers.Serializer):
    run_id = serializers.UUIDField(source="id")
    batch_id = serializers.UUIDField()
    kind = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    collection_ids = serializers.ListField(child=serializers.CharField(), max_length=MAX_COLLECTIONS_PER_CALL)
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
    summary = serializers.JSONField(
        help_text="Answer runs: score, excluded counts per metric, fallbacks, refusal both ways, diagnosis counts, "
        "usage; {} for retrieval runs."
    )
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
    # Answer runs (empty or null for retrieval runs):
    answer = serializers.CharField()
    citations = serializers.JSONField()
    passages = serializers.JSONField(
        source="context", help_text="The numbered passages the answer was written from."
    )
    judgements = serializers.JSONField(help_text="{metric: {value, method, detail, excluded, fallback}}")
    answerable = serializers.BooleanField()
    refused = serializers.BooleanField(allow_null=True)
    passed = serializers.BooleanField(allow_null=True)

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
