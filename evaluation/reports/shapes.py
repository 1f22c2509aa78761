"""The pieces of a stored run's JSON as the schema documents them (configurations, indexes, slices, latency,
the constants their enums take), shared by the run presenter (evaluation.reports.presenter) and the API's
search and answer responses. A stored value is answered as stored, never reshaped, so a run written by an older
version reads back as it was written; those fields are documented with the shape current code writes."""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from evaluation.answers import judge, judge_llm
from evaluation.answers import writer as answer_writer
from evaluation.models import TargetKind
from evaluation.retrieval.search.bm25 import VARIANTS
from evaluation.retrieval.search.engine import FUSIONS, SEARCH_TYPES
from goldenset.vocabulary.golden_fields import ORIGINS
from goldenset.vocabulary.groundedness import GROUNDEDNESS_LEVELS


def threshold_sources_field() -> serializers.DictField:
    """An answer run config's threshold_sources (the same in each of its shapes)."""
    return serializers.DictField(
        child=serializers.DictField(),
        required=False,
        help_text='Where each threshold came from: {"source": "default" | "request" | "calibrated", ...} '
        "(a calibrated one with its labels, AUC and best-threshold interval).",
    )


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


class JudgeIdentityOut(serializers.Serializer):
    """judge_version and judge_prompts, in each shape of an answer run's config (absent from runs stored before
    they were recorded)."""

    judge_version = serializers.CharField(
        required=False,
        help_text=f"The chat judge's prompt version (\"{judge_llm.PROMPT_VERSION}\"), or the heuristic's "
        f'("{judge.HEURISTIC_VERSION}"). Compare warns when runs were judged by different models or versions.',
    )
    judge_prompts = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text="The sha256 of each judged metric's prompt (a chat judge); null: the heuristic judge.",
    )


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
    bm25_k1 = serializers.FloatField(required=False, help_text="Set only when not BM25's default (1.5).")
    bm25_b = serializers.FloatField(required=False, help_text="Set only when not BM25's default (0.75).")
    rrf_k = serializers.IntegerField(required=False, help_text="Set only when not RRF's default (60).")


class RetrievalConfigOut(SearchConfigOut):
    """A retrieval run's configuration (the built-in engine)."""

    subset = SubsetOut(required=False)


class AnswerConfigOut(SearchConfigOut):
    top_k = serializers.IntegerField(help_text="Passages the answer is written from.")
    model = serializers.CharField(allow_null=True, help_text="As requested; null: the default.")
    groundedness = serializers.ChoiceField(choices=GROUNDEDNESS_LEVELS)


class RunConfigOut(SearchConfigOut, JudgeIdentityOut):
    """A run's configuration; the last four fields are an answer run's only."""

    model = serializers.CharField(required=False, help_text='The answering model, or "extractive".')
    groundedness = serializers.ChoiceField(choices=GROUNDEDNESS_LEVELS, required=False)
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
    search_ms = serializers.FloatField(
        help_text="The configuration's questions, searched and scored, in all."
    )
    setup_ms = serializers.FloatField(
        required=False,
        help_text="Of search_ms, the one-off cost before the first question (indexes built or loaded, the "
        "reranker made, kernels compiled by an untimed first search): kept out of summary.latency_ms.",
    )


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
    setup_ms = serializers.FloatField(required=False)


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


class AnswerRunConfigOut(AnswerConfigOut, JudgeIdentityOut):
    model = serializers.CharField(help_text='The answering model, or "extractive".')
    judge_model = serializers.CharField(help_text='The judge model, or "heuristic".')
    judge_samples = serializers.IntegerField(required=False, help_text=JUDGE_SAMPLES_HELP)
    judge_temperature = serializers.FloatField(
        required=False, allow_null=True, help_text=JUDGE_TEMPERATURE_HELP
    )
    thresholds = serializers.DictField(child=serializers.FloatField())
    threshold_sources = threshold_sources_field()
    subset = SubsetOut(required=False)


class AnswerTargetRunConfigOut(JudgeIdentityOut):
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
