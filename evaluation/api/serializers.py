from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from evaluation.answers import judge, judge_votes, verdicts
from evaluation.answers import writer as answer_writer
from evaluation.answers.batch import MAX_UNANSWERABLE
from evaluation.configs import DEFAULT_KS, DEFAULT_KS_TEXT, GROUNDEDNESS
from evaluation.judgments.calibration import run_calibration
from evaluation.models import LabelLevel, RunKind, RunStatus, TargetKind
from evaluation.retrieval.search.bm25 import VARIANTS
from evaluation.retrieval.search.engine import FUSIONS, SEARCH_TYPES
from goldenset.api.serializers import TenantIn
from goldenset.vocabulary.golden_fields import ORIGINS
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


def threshold_sources_field() -> serializers.DictField:
    """An answer run config's threshold_sources (the same in each of its shapes)."""
    return serializers.DictField(
        child=serializers.DictField(),
        required=False,
        help_text='Where each threshold came from: {"source": "default" | "request" | "calibrated", ...} '
        "(a calibrated one with its labels, AUC and best-threshold interval).",
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

ANSWER_METHODS = (answer_writer.EXTRACTIVE, answer_writer.LLM)  # how an answer was written
JUDGE_METHODS = (judge.HEURISTIC, judge.LLM_JUDGE)  # how a judgement was made
RUN_MODES = (judge.HEURISTIC, judge.LLM_JUDGE, "mixed")
EXCLUSIONS = (judge.NOT_APPLICABLE, judge.UNREADABLE)  # why a metric has no value for a question
RERANKERS = ("minilm", "endpoint", "proximity")  # every name services.available_rerankers() may offer


def stored(shape: serializers.Field, **kwargs) -> serializers.JSONField:
    """A JSON value answered as stored, documented as `shape` in the schema."""
    name = "Stored" + type(shape.child if isinstance(shape, serializers.ListSerializer) else shape).__name__
    field_class = extend_schema_field(shape)(type(name, (serializers.JSONField,), {}))
    return field_class(**kwargs)


@extend_schema_field(
    {
        "oneOf": [{"type": "string", "enum": list(RERANKERS)}, {"type": "boolean", "enum": [False]}],
        "nullable": True,
        "description": "The reranker that ran, or false (null in runs stored before false was echoed).",
    }
)
class RerankOut(serializers.JSONField):
    pass


JUDGE_SAMPLES_HELP = "Judgements per metric (1: one at temperature 0). Absent in runs made before sampling."
JUDGE_TEMPERATURE_HELP = "The temperature the judge's calls were made at; null: the heuristic judge."
JUDGE_CONFIDENCE_HELP = (
    "{metric: the judge's mean confidence}, the share of sampled judgements agreeing with the majority; only "
    "for metrics judged with judge_samples above 1."
)


class SubsetOut(serializers.Serializer):
    """The golden entries a run asked (evaluation.runs.slices.Subset): present in a run's config only when it
    restricted them; the restrictions combine with AND."""

    tags = serializers.ListField(child=serializers.CharField(), help_text="Entries carrying any of these.")
    origin = serializers.ListField(child=serializers.ChoiceField(choices=ORIGINS))
    reviewed_only = serializers.BooleanField()
    skip_unreviewed_generated = serializers.BooleanField(help_text="Unreviewed generated entries left out.")


class SlicesOut(serializers.Serializer):
    """Every metric per slice of a run's questions, computed when it was written (evaluation.runs.slices.breakdown);
    {} for a failed run or one written before slices were."""

    tag = serializers.DictField(
        child=serializers.DictField(child=serializers.FloatField(allow_null=True)),
        required=False,
        help_text='{tag: {"n": questions, metric: mean (null: no question of the slice had it)}}',
    )
    origin = serializers.DictField(
        child=serializers.DictField(child=serializers.FloatField(allow_null=True)),
        required=False,
        help_text="{origin: {...}} as tag",
    )
    answerable = serializers.DictField(
        child=serializers.DictField(child=serializers.FloatField(allow_null=True)),
        required=False,
        help_text='Answer runs: {"true": {...}, "false": {...}} as tag',
    )


class SearchConfigOut(serializers.Serializer):
    """A configuration as it ran, normalized: every default filled in."""

    label = serializers.CharField()  # type: ignore[assignment]
    search_type = serializers.ChoiceField(choices=SEARCH_TYPES)
    fusion = serializers.ChoiceField(choices=FUSIONS)
    rerank = RerankOut()
    bm25_variant = serializers.ChoiceField(choices=VARIANTS)
    top_k = serializers.IntegerField(allow_null=True)
    as_of = serializers.DateTimeField(allow_null=True, help_text="The instant replayed (UTC); null: now.")
    include_superseded = serializers.BooleanField()
    fulltext_weight = serializers.FloatField()


class RetrievalConfigOut(SearchConfigOut):
    """A retrieval run's configuration (the built-in engine)."""

    subset = SubsetOut(required=False)


class AnswerConfigOut(SearchConfigOut):
    top_k = serializers.IntegerField(help_text="Passages the answer is written from.")
    model = serializers.CharField(allow_null=True, help_text="As requested; null: the default.")
    groundedness = serializers.ChoiceField(choices=GROUNDEDNESS)


class RunConfigOut(SearchConfigOut):
    """A run's configuration; the last four fields are an answer run's only."""

    model = serializers.CharField(required=False, help_text='The answering model, or "extractive".')
    groundedness = serializers.ChoiceField(choices=GROUNDEDNESS, required=False)
    judge_model = serializers.CharField(required=False, help_text='The judge model, or "heuristic".')
    judge_samples = serializers.IntegerField(required=False, help_text=JUDGE_SAMPLES_HELP)
    judge_temperature = serializers.FloatField(
        required=False, allow_null=True, help_text=JUDGE_TEMPERATURE_HELP
    )
    thresholds = serializers.DictField(child=serializers.FloatField(), required=False)
    threshold_sources = threshold_sources_field()
    subset = SubsetOut(required=False)


class IndexOut(serializers.Serializer):
    """What getting the collections' indexes cost this call, and the content version each one indexed."""

    built = serializers.IntegerField()
    loaded = serializers.IntegerField()
    cached = serializers.IntegerField()
    parts_built = serializers.IntegerField()
    build_ms = serializers.FloatField()
    content_versions = serializers.DictField(
        child=serializers.IntegerField(), help_text="The content version each collection's index held."
    )
    stale = serializers.ListField(
        child=serializers.CharField(),
        help_text="Collections answered by an older index while their current one builds (a job).",
    )


class RunIndexOut(IndexOut):
    evaluated_at = serializers.DateTimeField(help_text="The instant the batch replayed (UTC).")
    search_ms = serializers.FloatField()


class StoredRunIndexOut(serializers.Serializer):
    """A retrieval run's index (RunIndexOut); {} for an answer run."""

    built = serializers.IntegerField(required=False)
    loaded = serializers.IntegerField(required=False)
    cached = serializers.IntegerField(required=False)
    parts_built = serializers.IntegerField(required=False)
    build_ms = serializers.FloatField(required=False)
    content_versions = serializers.DictField(child=serializers.IntegerField(), required=False)
    stale = serializers.ListField(child=serializers.CharField(), required=False)
    evaluated_at = serializers.DateTimeField(required=False)
    search_ms = serializers.FloatField(required=False)


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


class RunFileConfigOut(serializers.Serializer):
    """A run read from an uploaded run file: its tag is the label."""

    label = serializers.CharField()  # type: ignore[assignment]
    run_file = serializers.CharField(help_text="The uploaded file's name.")
    top_k = serializers.IntegerField(allow_null=True)


class TargetConfigOut(serializers.Serializer):
    """A configuration that evaluated an external target (evaluation.targets.callers)."""

    label = serializers.CharField()  # type: ignore[assignment]
    target = serializers.CharField(help_text="The target's name.")
    target_kind = serializers.ChoiceField(choices=TargetKind.choices)
    top_k = serializers.IntegerField(allow_null=True)
    max_error_rate = serializers.FloatField(
        help_text="The share of questions that may fail before the run does."
    )
    subset = SubsetOut(required=False)


class LatencyOut(serializers.Serializer):
    """Per-question search (or target call) latency of a run, in ms."""

    p50 = serializers.FloatField()
    p95 = serializers.FloatField()
    p99 = serializers.FloatField()
    mean = serializers.FloatField()
    max = serializers.FloatField()
    count = serializers.IntegerField(help_text="Questions timed (failed calls are not).")


RETRIEVAL_CONFIG = PolymorphicProxySerializer(
    component_name="RetrievalRunConfig",
    serializers=[RetrievalConfigOut, TargetConfigOut, RunFileConfigOut],
    resource_type_field_name=None,
)


class RunSummaryOut(serializers.Serializer):
    """A retrieval run as /search/evaluate answers it (services.run_summary)."""

    run_id = serializers.UUIDField()
    label = serializers.CharField()  # type: ignore[assignment]
    config = stored(RETRIEVAL_CONFIG)
    ks = serializers.ListField(child=serializers.IntegerField())
    metrics = serializers.DictField(
        child=serializers.FloatField(), help_text='{"recall@10": 0.71, "mrr": ...}; {} for a failed run'
    )
    status = serializers.ChoiceField(
        choices=RunStatus.values,
        help_text="partial: some questions failed and are left out of the means; failed: more than max_error_rate.",
    )
    question_count = serializers.IntegerField()
    duration_ms = serializers.FloatField()
    latency_ms = LatencyOut(allow_null=True)
    failed_questions = serializers.IntegerField(
        allow_null=True, help_text="Failed questions (targets); null otherwise."
    )
    unjudged = serializers.DictField(
        child=serializers.IntegerField(),
        help_text='Targets: retrieved ids the collection lacks, over all questions, {"unjudged@10": 3}; {} otherwise.',
    )
    warnings = serializers.ListField(child=serializers.CharField())
    index = stored(StoredRunIndexOut())
    slices = stored(SlicesOut())


class RunFileIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    file = serializers.FileField(
        allow_empty_file=True,
        help_text="TREC (qid Q0 docid rank score tag) or JSONL (query_id, document_id, score).",
    )
    ks = serializers.CharField(
        required=False, help_text=f"Comma-separated cutoffs; default {DEFAULT_KS_TEXT}."
    )


class EvaluateOut(serializers.Serializer):
    """A retrieval evaluation: one run per configuration, of one batch (also an Evaluate job's result)."""

    batch_id = serializers.UUIDField()
    runs = RunSummaryOut(many=True)


class CitationOut(serializers.Serializer):
    number = serializers.IntegerField(help_text="The passage cited.")
    document_id = serializers.CharField()
    statement = serializers.CharField()


class PassageOut(serializers.Serializer):
    number = serializers.IntegerField()
    document_id = serializers.CharField()
    page_number = serializers.IntegerField()
    title = serializers.CharField()
    score = serializers.FloatField(required=False, help_text="The retrieval score (answers only, not runs).")
    text = serializers.CharField()


class TokenUsageOut(serializers.Serializer):
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()


class AnswerOut(serializers.Serializer):
    question = serializers.CharField()
    answer = serializers.CharField()
    refused = serializers.BooleanField(help_text="The pipeline declined to answer.")
    method = serializers.ChoiceField(choices=ANSWER_METHODS)
    model = serializers.CharField(allow_blank=True, help_text='"" for the extractive answer.')
    groundedness = serializers.ChoiceField(choices=GROUNDEDNESS)
    support = serializers.FloatField(help_text="Extractive: the groundedness evidence in 0..1; llm: -1.")
    citations = CitationOut(many=True)
    passages = PassageOut(many=True)
    config = AnswerConfigOut()
    usage = TokenUsageOut()
    took_ms = serializers.FloatField()


class AnswerRunConfigOut(AnswerConfigOut):
    model = serializers.CharField(help_text='The answering model, or "extractive".')
    judge_model = serializers.CharField(help_text='The judge model, or "heuristic".')
    judge_samples = serializers.IntegerField(required=False, help_text=JUDGE_SAMPLES_HELP)
    judge_temperature = serializers.FloatField(
        required=False, allow_null=True, help_text=JUDGE_TEMPERATURE_HELP
    )
    thresholds = serializers.DictField(child=serializers.FloatField())
    threshold_sources = threshold_sources_field()
    subset = SubsetOut(required=False)


class AnswerTargetRunConfigOut(serializers.Serializer):
    """An answer run of an answering (rag-http) target: its own retrieval and answer, our judge."""

    label = serializers.CharField()  # type: ignore[assignment]
    target = serializers.CharField(help_text="The target's name.")
    target_kind = serializers.ChoiceField(choices=TargetKind.choices)
    top_k = serializers.IntegerField(help_text="Sent to the target as {{top_k}}.")
    max_error_rate = serializers.FloatField()
    model = serializers.CharField(help_text='"target:<name>": the target wrote the answer.')
    judge_model = serializers.CharField(help_text='The judge model, or "heuristic".')
    judge_samples = serializers.IntegerField(required=False, help_text=JUDGE_SAMPLES_HELP)
    judge_temperature = serializers.FloatField(
        required=False, allow_null=True, help_text=JUDGE_TEMPERATURE_HELP
    )
    thresholds = serializers.DictField(child=serializers.FloatField())
    threshold_sources = threshold_sources_field()
    subset = SubsetOut(required=False)


ANSWER_RUN_CONFIG = PolymorphicProxySerializer(
    component_name="AnswerRunConfig",
    serializers=[AnswerRunConfigOut, AnswerTargetRunConfigOut],
    resource_type_field_name=None,
)


class AnswerMetricsOut(serializers.Serializer):
    """Each metric's mean over the questions it could be scored on; null when none could."""

    faithfulness = serializers.FloatField(allow_null=True)
    context_recall = serializers.FloatField(allow_null=True)
    answer_relevancy = serializers.FloatField(allow_null=True)
    citation_precision = serializers.FloatField(allow_null=True)
    context_relevancy = serializers.FloatField(allow_null=True)


class RefusalOut(serializers.Serializer):
    unanswerable = serializers.IntegerField()
    declined_unanswerable = serializers.IntegerField()
    refusal_recall = serializers.FloatField(allow_null=True, help_text="null: no unanswerable question.")
    answerable = serializers.IntegerField()
    declined_answerable = serializers.IntegerField()
    false_refusal_rate = serializers.FloatField(allow_null=True, help_text="null: no answerable question.")


class CallUsageOut(serializers.Serializer):
    answer_calls = serializers.IntegerField()
    judge_calls = serializers.IntegerField()
    cached_calls = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    call_latency_ms = serializers.FloatField()


def counts(**kwargs) -> serializers.DictField:
    """{name: how many}"""
    return serializers.DictField(child=serializers.IntegerField(), **kwargs)


class AnswerRunSummaryOut(serializers.Serializer):
    """An answer run as an EvaluateAnswers job's result and the CLI report it (evaluation.runs.store.run_summary)."""

    run_id = serializers.UUIDField()
    label = serializers.CharField()  # type: ignore[assignment]
    kind = serializers.ChoiceField(choices=RunKind.choices)
    config = stored(ANSWER_RUN_CONFIG)
    status = serializers.ChoiceField(
        choices=RunStatus.values,
        help_text="An answering target's run: partial when some calls failed, failed above max_error_rate.",
    )
    mode = serializers.ChoiceField(choices=RUN_MODES)
    score = serializers.FloatField(allow_null=True, help_text="0-100; null when no question could be scored.")
    metrics = AnswerMetricsOut()
    metric_methods = serializers.DictField(child=serializers.CharField())
    refusal = stored(RefusalOut(), allow_null=True)
    excluded = stored(
        serializers.DictField(child=counts()), allow_null=True, help_text="{metric: {reason: questions}}"
    )
    diagnosis = stored(counts(), allow_null=True, help_text="{retrieval|generation|pass|error: questions}")
    passed = serializers.IntegerField(allow_null=True)
    failed = serializers.IntegerField(allow_null=True)
    question_count = serializers.IntegerField()
    judge_confidence = stored(
        serializers.DictField(child=serializers.FloatField()),
        allow_null=True,
        help_text=JUDGE_CONFIDENCE_HELP,
    )
    usage = stored(CallUsageOut(), allow_null=True)
    latency_ms = LatencyOut(allow_null=True, help_text="Per-question answer calls (model or target).")
    duration_ms = serializers.FloatField()
    warnings = serializers.ListField(child=serializers.CharField())
    slices = stored(SlicesOut())


class AnswerEvaluationOut(serializers.Serializer):
    """An answer evaluation: one run per configuration, of one batch (an EvaluateAnswers job's result)."""

    batch_id = serializers.UUIDField()
    runs = AnswerRunSummaryOut(many=True)


class RetrievalGateOut(serializers.Serializer):
    """`manage.py evaluate --format json`: the runs as /search/evaluate answers them, and the gate."""

    batch_id = serializers.UUIDField()
    metric = serializers.CharField(help_text="The gated metric.")
    fail_under = serializers.FloatField(allow_null=True, help_text="The bar; null: none (report only).")
    passed = serializers.BooleanField(help_text="Every configuration cleared the bar.")
    runs = RunSummaryOut(many=True)


class AnswerGateOut(serializers.Serializer):
    """`manage.py evaluate --answers --format json`: the runs as an EvaluateAnswers job's result, and the gate."""

    batch_id = serializers.UUIDField()
    fail_under = serializers.FloatField(
        allow_null=True, help_text="The bar on the score (0-100); null: none."
    )
    passed = serializers.BooleanField()
    runs = AnswerRunSummaryOut(many=True)


class RunStatsOut(serializers.Serializer):
    """An answer run's summary (verdicts.RunSummary with the calls' usage); a retrieval run's latency, and a
    target run's failed questions and unjudged ids."""

    metrics = serializers.DictField(child=serializers.FloatField(allow_null=True), required=False)
    methods = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    mode = serializers.ChoiceField(choices=RUN_MODES, required=False)
    score = serializers.FloatField(allow_null=True, required=False)
    excluded = serializers.DictField(child=counts(), required=False)
    fallbacks = counts(required=False)
    judge_confidence = serializers.DictField(
        child=serializers.FloatField(), required=False, help_text=JUDGE_CONFIDENCE_HELP
    )
    refusal = RefusalOut(required=False)
    diagnosis = counts(required=False)
    passed = serializers.IntegerField(required=False)
    failed = serializers.IntegerField(required=False)
    warnings = serializers.ListField(child=serializers.CharField(), required=False)
    usage = CallUsageOut(required=False)
    latency_ms = LatencyOut(
        required=False, allow_null=True, help_text="Retrieval runs: per-question latency."
    )
    failed_questions = serializers.IntegerField(required=False, help_text="Target runs: failed questions.")
    unjudged = serializers.DictField(child=serializers.IntegerField(), required=False)


class RunOut(serializers.Serializer):
    run_id = serializers.UUIDField(source="id")
    batch_id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=RunKind.choices)
    label = serializers.CharField()  # type: ignore[assignment]
    collection_ids = serializers.ListField(child=serializers.CharField(), max_length=MAX_COLLECTIONS_PER_CALL)
    config = stored(
        PolymorphicProxySerializer(
            component_name="StoredRunConfig",
            serializers=[RunConfigOut, TargetConfigOut, RunFileConfigOut, AnswerTargetRunConfigOut],
            resource_type_field_name=None,
        )
    )
    ks = serializers.ListField(child=serializers.IntegerField())
    metrics = serializers.DictField(child=serializers.FloatField())
    metric_methods = serializers.DictField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=RunStatus.values)
    mode = serializers.ChoiceField(
        choices=RUN_MODES, allow_blank=True, help_text='Answer runs; "" for retrieval.'
    )
    question_count = serializers.IntegerField()
    duration_ms = serializers.FloatField()
    warnings = serializers.ListField(child=serializers.CharField())
    golden_fingerprint = serializers.CharField()
    index = stored(StoredRunIndexOut(), source="index_info")
    summary = stored(
        RunStatsOut(),
        help_text="Answer runs: score, excluded counts per metric, fallbacks, refusal both ways, diagnosis counts, "
        "usage; retrieval runs: latency_ms (and errors, unjudged for a target).",
    )
    job_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()


class RankedDocumentOut(serializers.Serializer):
    rank = serializers.IntegerField()
    document_id = serializers.CharField()
    score = serializers.FloatField()
    relevant = serializers.BooleanField(help_text="Judged relevant in the golden entry.")


class JudgementOut(serializers.Serializer):
    value = serializers.FloatField(allow_null=True, help_text="0..1; null: excluded from this metric.")
    method = serializers.ChoiceField(choices=JUDGE_METHODS)
    detail = serializers.DictField(help_text="What the judge found (statements, verdicts, reasons).")
    excluded = serializers.ChoiceField(choices=EXCLUSIONS, allow_null=True)
    fallback = serializers.CharField(allow_null=True, help_text="Why the heuristic stood in for the judge.")


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
    metrics = serializers.DictField(
        child=serializers.FloatField(), help_text="{} for a question that failed."
    )
    latency_ms = serializers.FloatField(allow_null=True, help_text="Its search (or target call).")
    error = serializers.CharField(
        help_text='Why it could not be scored (a target\'s failed call); "" otherwise.'
    )
    unjudged = serializers.DictField(
        child=serializers.IntegerField(), help_text='Targets: {"unjudged@10": 1}.'
    )
    diagnosis = serializers.ChoiceField(
        choices=verdicts.DIAGNOSES, allow_blank=True, help_text='"" for retrieval runs.'
    )
    warnings = serializers.ListField(child=serializers.CharField())
    # Answer runs (empty or null for retrieval runs):
    reasons = serializers.ListField(
        child=serializers.CharField(),
        help_text='Why the question failed, e.g. "retrieval: expected document missed: d3" or "generation: '
        'unfaithful (faithfulness 0.40 < 0.6)"; [] when it passed. Runs stored before this field carry them '
        "at the end of warnings.",
    )
    answer = serializers.CharField()
    citations = stored(CitationOut(many=True))
    passages = stored(
        PassageOut(many=True),
        source="context",
        help_text="The numbered passages the answer was written from.",
    )
    judgements = stored(serializers.DictField(child=JudgementOut()), help_text="{metric: judgement}")
    answerable = serializers.BooleanField()
    refused = serializers.BooleanField(allow_null=True)
    passed = serializers.BooleanField(allow_null=True)
    tags = serializers.ListField(
        child=serializers.CharField(), help_text="The entry's tags when the run read it."
    )
    origin = serializers.CharField(
        help_text="The entry's origin then; \"\" for a request's unanswerable question."
    )

    @extend_schema_field(RankedDocumentOut(many=True))
    def get_ranked(self, result) -> list[dict]:
        return [
            {"rank": rank, "document_id": doc, "score": score, "relevant": doc in result.expected}
            for rank, (doc, score) in enumerate(result.ranked, start=1)
        ]


class MetricCalibrationOut(serializers.Serializer):
    judge = serializers.CharField(help_text='"heuristic" or "llm-judge:<model>".')
    level = serializers.ChoiceField(choices=LabelLevel.values)
    auc = serializers.FloatField()
    n = serializers.IntegerField(help_text="Human-labelled items it was measured on.")


class RunDetailOut(RunOut):
    slices = stored(SlicesOut())
    results = QuestionResultOut(many=True)
    calibration = serializers.SerializerMethodField(
        help_text="Answer runs: each judged metric's judge against the collection's human labels, where it has "
        "some (GET /search/evaluate/calibration has the whole report)."
    )

    @extend_schema_field(serializers.DictField(child=MetricCalibrationOut()))
    def get_calibration(self, run) -> dict:
        return run_calibration(run)


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
