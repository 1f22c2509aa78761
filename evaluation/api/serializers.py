from __future__ import annotations

from rest_framework import serializers

from evaluation.answers import judge_votes
from evaluation.answers.batch import MAX_UNANSWERABLE
from evaluation.configs import MAX_COLLECTIONS_PER_CALL
from evaluation.models import RunKind, TargetKind
from evaluation.reports.shapes import (
    ANSWER_METHODS,
    AnswerConfigOut,
    CitationOut,
    IndexOut,
    PassageOut,
    SearchConfigOut,
    TokenUsageOut,
)
from evaluation.request_fields import DEFAULT_KS, DEFAULT_KS_TEXT
from goldenset.api.serializers import TenantIn
from goldenset.vocabulary.groundedness import GROUNDEDNESS_LEVELS


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
    bm25_k1 = serializers.JSONField(
        required=False, allow_null=True, help_text="BM25's k1, 0 to 10 (default 1.5)."
    )
    bm25_b = serializers.JSONField(
        required=False, allow_null=True, help_text="BM25's b, 0 to 1 (default 0.75)."
    )
    rrf_k = serializers.JSONField(
        required=False, allow_null=True, help_text="RRF's k, 1 to 10000 (default 60): Hybrid with Rrf fusion."
    )


class SubsetIn(TenantIn):
    """The golden entries an evaluation asks (evaluation.runs.slices.Subset), in a request body; read strictly by
    evaluation.configs (so values stay JSON here: a bad one is a 400 naming its field there)."""

    tags = serializers.JSONField(
        required=False, allow_null=True, help_text="Ask only the golden entries carrying any of these tags."
    )
    origin = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="Ask only entries of these origins: Manual, Imported, Generated.",
    )
    reviewed_only = serializers.JSONField(
        required=False, allow_null=True, help_text="Ask only entries marked reviewed (default false)."
    )
    skip_unreviewed_generated = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="Leave out generated entries nobody reviewed yet; manual and imported ones stay (default false).",
    )


class EvaluateIn(SubsetIn):
    collection_id = serializers.CharField(required=False, allow_blank=True)
    collection_ids = serializers.ListField(
        child=serializers.CharField(), required=False, max_length=MAX_COLLECTIONS_PER_CALL
    )
    ks = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text=f'Numbers or numeric strings, e.g. [1, 5, 10] or ["10"]; default {list(DEFAULT_KS)}.',
    )
    configs = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="[{label, search_type: FullText|Vector|Hybrid, fusion: Rrf|Weighted, rerank, bm25_variant, "
        "top_k, as_of, include_superseded, tags, origin, reviewed_only, skip_unreviewed_generated}]",
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


class EvaluateAnswersIn(SubsetIn):
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
    judge_samples = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text=f"Judgements per metric, odd, 1-{judge_votes.MAX_SAMPLES} (default 1, at temperature 0): "
        "above 1, each item takes the majority verdict (the relevancy rating the median) and the share of "
        "samples that agreed is stored as the judge's confidence.",
    )
    judge_temperature = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text=f"The sampling temperature of judge_samples above 1 (default "
        f"{judge_votes.DEFAULT_SAMPLING_TEMPERATURE:g}; 0-{judge_votes.MAX_TEMPERATURE:g}).",
    )
    configs = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="[{label, model, search_type, fusion, rerank, top_k (passages, default 5), groundedness: "
        f"{'|'.join(GROUNDEDNESS_LEVELS)}}}]",
    )
    unanswerable_questions = serializers.ListField(
        child=serializers.CharField(max_length=10_000),
        required=False,
        default=list,
        max_length=MAX_UNANSWERABLE,
    )
    max_questions = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    metric_thresholds = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="{metric: 0..1}; defaults context_relevancy 0.6, faithfulness 0.6, answer_relevancy 0.4.",
    )


# --- responses ------------------------------------------------------------------------------------------------
# The shapes of what the search, answer, evaluate and runs endpoints answer (and `manage.py evaluate --format json`
# prints): the OpenAPI schema documents them, and tests/evaluation/test_response_schema.py holds real responses
# to it. A run's stored JSON (its config, index, summary, a question's citations, passages and judgements) is
# answered as stored, never reshaped, so a run written by an older version reads back as it was written; those
# fields are documented with the shape current code writes.


class SearchResultOut(serializers.Serializer):
    rank = serializers.IntegerField()
    collection_id = serializers.CharField()
    document_id = serializers.CharField()
    title = serializers.CharField()
    score = serializers.FloatField()
    page_number = serializers.IntegerField(help_text="The document's best page for the query.")
    text = serializers.CharField()


class SearchOut(serializers.Serializer):
    query = serializers.CharField()
    config = SearchConfigOut()
    results = SearchResultOut(many=True)
    took_ms = serializers.FloatField()
    index = IndexOut()
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="About the configuration: e.g. that the reranker that ran is not one that helps.",
    )


class RunFileIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    file = serializers.FileField(
        allow_empty_file=True,
        help_text="TREC (qid Q0 docid rank score tag) or JSONL (query_id, document_id, score).",
    )
    ks = serializers.CharField(
        required=False, help_text=f"Comma-separated cutoffs; default {DEFAULT_KS_TEXT}."
    )


class AnswerOut(serializers.Serializer):
    question = serializers.CharField()
    answer = serializers.CharField()
    refused = serializers.BooleanField(help_text="The pipeline declined to answer.")
    method = serializers.ChoiceField(choices=ANSWER_METHODS)
    model = serializers.CharField(allow_blank=True, help_text='"" for the extractive answer.')
    groundedness = serializers.ChoiceField(choices=GROUNDEDNESS_LEVELS)
    support = serializers.FloatField(help_text="Extractive: the groundedness evidence in 0..1; llm: -1.")
    citations = CitationOut(many=True)
    passages = PassageOut(many=True)
    config = AnswerConfigOut()
    usage = TokenUsageOut()
    took_ms = serializers.FloatField()


class RunFilterIn(TenantIn):
    collection_id = serializers.CharField(required=False, allow_blank=True)
    label = serializers.CharField(required=False, allow_blank=True)  # type: ignore[assignment]
    batch_id = serializers.UUIDField(required=False)
    kind = serializers.ChoiceField(choices=RunKind.values, required=False)


# --- targets -------------------------------------------------------------------------------------------------


class TargetIn(TenantIn):
    name = serializers.RegexField(
        r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
        help_text="Unique per tenant: letters, digits, '.', '_', '-' (at most 100).",
    )
    kind = serializers.ChoiceField(choices=TargetKind.choices)
    base_url = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    headers = serializers.DictField(
        child=serializers.CharField(max_length=4000), required=False, default=dict
    )
    secret_headers = serializers.DictField(
        child=serializers.CharField(max_length=4000, allow_null=True),
        required=False,
        default=dict,
        help_text="Write-only: stored encrypted; answered as the list of their names. On PATCH, null removes one.",
    )
    timeout_s = serializers.FloatField(min_value=0.1, max_value=600, required=False, default=30.0)
    concurrency = serializers.IntegerField(min_value=1, max_value=64, required=False, default=4)
    rate_limit = serializers.FloatField(
        min_value=0.01, max_value=10_000, required=False, allow_null=True, default=None,
        help_text="Calls per second at most; null: no limit.",
    )  # fmt: skip
    options = serializers.DictField(
        required=False,
        default=dict,
        help_text='What the kind needs (docs/evaluation.md, "Evaluate your own system").',
    )


class TargetOut(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=TargetKind.choices)
    base_url = serializers.CharField()
    headers = serializers.DictField(child=serializers.CharField())
    secret_headers = serializers.ListField(child=serializers.CharField(), help_text="Names only.")
    timeout_s = serializers.FloatField()
    concurrency = serializers.IntegerField()
    rate_limit = serializers.FloatField(allow_null=True)
    options = serializers.DictField()


class TargetTestIn(TenantIn):
    query = serializers.CharField(max_length=10_000, required=False, default="test")
    top_k = serializers.IntegerField(min_value=1, max_value=1000, required=False, default=10)


class TargetTestResultOut(serializers.Serializer):
    rank = serializers.IntegerField()
    document_id = serializers.CharField()
    score = serializers.FloatField(allow_null=True)


class TargetTestAnswerOut(serializers.Serializer):
    text = serializers.CharField(allow_blank=True)
    refused = serializers.BooleanField(allow_null=True, help_text="null: the target does not say.")
    passage_ids = serializers.ListField(child=serializers.CharField())
    cited_ids = serializers.ListField(child=serializers.CharField(), allow_null=True)


class TargetTestOut(serializers.Serializer):
    query = serializers.CharField()
    top_k = serializers.IntegerField()
    ok = serializers.BooleanField()
    results = TargetTestResultOut(many=True)
    error = serializers.CharField(help_text="The failure, or which mapping expression found what.")
    raw = serializers.CharField(help_text="The start of the raw answer.")
    answer = TargetTestAnswerOut(required=False, help_text="An answering (rag-http) target's mapped answer.")
    latency_ms = serializers.FloatField(required=False)
    took_ms = serializers.FloatField()
