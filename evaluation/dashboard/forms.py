"""The dashboard's forms: filters read from the query string, golden-entry edits, the run launchers, the question
generator and the imports (the Targets page's: target_forms).

Forms only read and shape input; validation that defines a valid entry or configuration stays in the services
and in evaluation.configs, whose errors the views put back on the form.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms

from evaluation.answers.batch import MAX_UNANSWERABLE
from evaluation.answers.configs import DEFAULT_ANSWER_TOP_K
from evaluation.answers.verdicts import DIAGNOSES
from evaluation.configs import MAX_CONFIGS
from evaluation.models import RunKind
from evaluation.request_fields import DEFAULT_KS_TEXT
from evaluation.retrieval.search.bm25 import VARIANTS
from evaluation.retrieval.search.engine import FUSIONS, SEARCH_TYPES
from goldenset.formats import FORMATS
from goldenset.forms import GradesField, StringListField
from goldenset.generation import SEED_MAX
from goldenset.models import Origin
from goldenset.vocabulary.golden_fields import DASHBOARD_FORM_FIELDS
from goldenset.vocabulary.groundedness import GROUNDEDNESS_LEVELS

YES_NO = [("", "any"), ("yes", "yes"), ("no", "no")]


class DashboardForm(forms.Form):
    """Labels without Django's trailing colon: the dashboard's stylesheet sets labels apart instead."""

    # Where a service error belongs on the form, by its code (else on the field its details name, if any).
    ERROR_FIELDS: dict[str, str] = {}

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    def add_service_error(self, code: str, message: str, field: str | None) -> None:
        """An EvalsiteError of the service the form feeds, on the field it is about."""
        text = message.split(": ", 1)[-1]  # drop the API's "entries[0].field: " prefix
        target = self.ERROR_FIELDS.get(code, field if field in self.fields else None)
        self.add_error(target, text[:1].upper() + text[1:])


def yes_no(value: str | None) -> bool | None:
    return {"yes": True, "no": False}.get(value or "")


class DateRangeMixin(DashboardForm):
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        start: date | None = cleaned.get("date_from")
        end: date | None = cleaned.get("date_to")
        if start and end and start > end:
            self.add_error("date_to", "The end date is before the start date.")
        return cleaned


class RunFilterForm(DateRangeMixin):
    collection = forms.ChoiceField(required=False, label="Collection")
    label = forms.ChoiceField(required=False, label="Label")
    kind = forms.ChoiceField(required=False, label="Kind", choices=[("", "any"), *RunKind.choices])

    def __init__(self, *args, collections: list[str], labels: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].choices = [("", "all"), *((c, c) for c in collections)]  # type: ignore[attr-defined]
        self.fields["label"].choices = [("", "all"), *((label, label) for label in labels)]  # type: ignore[attr-defined]


ANSWER_DIAGNOSIS_CHOICES = [("", "any"), *((d, d) for d in DIAGNOSES)]
ANSWER_OUTCOME_CHOICES = [("", "any"), ("passed", "passed"), ("failed", "failed")]


class AnswerQuestionFilterForm(DashboardForm):
    """An answer run's questions table: by diagnosis and by pass / fail."""

    diagnosis = forms.ChoiceField(required=False, label="Diagnosis", choices=ANSWER_DIAGNOSIS_CHOICES)
    outcome = forms.ChoiceField(required=False, label="Outcome", choices=ANSWER_OUTCOME_CHOICES)


class TrendsForm(DateRangeMixin):
    collection = forms.ChoiceField(label="Collection")
    metric = forms.CharField(required=False, label="Metric")

    def __init__(self, *args, collections: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].choices = [(c, c) for c in collections]  # type: ignore[attr-defined]


class GoldenFilterForm(DashboardForm):
    q = forms.CharField(required=False, label="Search", max_length=500)
    tag = forms.ChoiceField(required=False, label="Tag")
    origin = forms.ChoiceField(required=False, label="Origin", choices=[("", "any"), *Origin.choices])
    reviewed = forms.ChoiceField(required=False, label="Reviewed", choices=YES_NO)

    def __init__(self, *args, tags: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["tag"].choices = [("", "any"), *((t, t) for t in tags)]  # type: ignore[attr-defined]


class DocumentSearchForm(DashboardForm):
    q = forms.CharField(required=False, label="Search id or title", max_length=500)


class GoldenEntryForm(DashboardForm):
    """An entry's editable fields; the service validates them as an add would (duplicates, unknown ids)."""

    question = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))
    key = forms.CharField(
        required=False, max_length=300, help_text="Optional client id, unique per collection."
    )
    expected_document_ids = StringListField(
        label="Expected document ids", help_text="One document id per line."
    )
    grades = GradesField(
        label="Grades",
        help_text="Optional graded relevance: one “document id: grade” per line (1 when absent). "
        "A grade belongs to an expected document: remove it with the document.",
    )
    reference_answer = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    tags = StringListField(
        split_commas=True, forbidden="|", widget=forms.TextInput(), help_text="Comma-separated."
    )
    answerable = forms.BooleanField(required=False)
    reviewed = forms.BooleanField(required=False)

    FIELDS = DASHBOARD_FORM_FIELDS
    ERROR_FIELDS = {
        "empty-question": "question",
        "duplicate-question": "question",
        "duplicate-key": "key",
        "unknown-documents": "expected_document_ids",
    }


GENERATE_COUNT = 20  # the form's suggestion


class GenerateForm(DashboardForm):
    """Generate golden questions from a collection's pages; goldenset.services.generate checks the rest (the
    model needs a configured endpoint), and its errors come back on these fields."""

    count = forms.IntegerField(label="Questions")  # replaced in __init__: its limit is a setting
    model = forms.CharField(
        required=False,
        max_length=300,
        label="Model",
        help_text="Blank: the default.",
    )
    seed = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=SEED_MAX,
        label="Seed",
        help_text="Blank: a new one (reported).",
        error_messages={"max_value": "The seed is at most %(limit_value)s."},
    )

    def __init__(self, *args, max_count: int, model_placeholder: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["count"] = forms.IntegerField(
            label="Questions",
            min_value=1,
            max_value=max_count,
            initial=GENERATE_COUNT,
            help_text=f"1 to {max_count}.",
            error_messages={
                "invalid": "Enter a whole number of questions.",
                "min_value": "Ask for at least 1 question.",
                "max_value": "At most %(limit_value)s questions per job (EVALSITE_GENERATE_MAX_COUNT).",
            },
        )
        self.fields["model"].widget.attrs["placeholder"] = model_placeholder
        self.fields["seed"].widget.attrs["placeholder"] = "random"

    def add_service_error(self, code: str, message: str, field: str | None) -> None:
        if code == "llm-not-configured":  # the API's wording says what to send; this form's, what to type
            message = (
                f"model: “{self.cleaned_data.get('model', '')}” needs a chat endpoint, and none is configured "
                "(EVALSITE_LLM_BASE_URL): leave the model blank, or enter “template”, for the offline writer."
            )
        super().add_service_error(code, message, field)


RERANK_NONE = ""


class SubsetFields(DashboardForm):
    """Which golden entries a launched evaluation asks (the API body's tags, origin, reviewed_only,
    skip_unreviewed_generated); evaluation.configs.parse_subset reads what `subset_request` gives it."""

    tags = StringListField(
        split_commas=True,
        widget=forms.TextInput(),
        label="Only tags",
        help_text="Comma-separated: ask only entries carrying any of them. Blank: every entry.",
    )
    origin = forms.MultipleChoiceField(
        required=False,
        choices=Origin.choices,
        widget=forms.CheckboxSelectMultiple,
        label="Only origins",
        help_text="None ticked: every origin.",
    )
    reviewed_only = forms.BooleanField(required=False, label="Reviewed entries only")
    skip_unreviewed_generated = forms.BooleanField(
        required=False,
        label="Leave out unreviewed generated entries",
        help_text="Manual and imported entries stay, reviewed or not.",
    )

    def subset_request(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            name: data.get(name) or None
            for name in ("tags", "origin", "reviewed_only", "skip_unreviewed_generated")
        }


class LaunchForm(SubsetFields):
    collections = forms.MultipleChoiceField(
        label="Collections",
        widget=forms.CheckboxSelectMultiple,
        help_text="Several collections are searched as one (document ids become collection/id).",
    )
    ks = forms.CharField(
        label="Cutoffs (k)",
        initial=DEFAULT_KS_TEXT,
        help_text="Comma-separated, e.g. 1,5,10: recall@k and nDCG@k.",
    )

    def __init__(self, *args, collections: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collections"].choices = collections  # type: ignore[attr-defined]


class ConfigForm(DashboardForm):
    """One configuration row of the launcher; only rows ticked "run" are evaluated."""

    enabled = forms.BooleanField(required=False, label="Run")
    preset = forms.ChoiceField(
        required=False,
        label="Preset",
        help_text="A saved preset: the row evaluates it (its label renames it). Blank: the row's settings.",
        error_messages={"invalid_choice": "No preset named “%(value)s” here: choose one of the list."},
    )
    label = forms.CharField(required=False, max_length=200, help_text="Blank: named from its settings.")
    target = forms.ChoiceField(
        required=False, label="System", help_text="An external target, or evalsite's own."
    )
    search_type = forms.ChoiceField(choices=[(t, t) for t in SEARCH_TYPES], initial="FullText")
    fusion = forms.ChoiceField(choices=[(f, f) for f in FUSIONS], initial="Rrf", help_text="Hybrid only.")
    rerank = forms.ChoiceField(required=False)
    bm25_variant = forms.ChoiceField(choices=[(v, v) for v in VARIANTS], initial="lucene", label="BM25")
    as_of = forms.DateField(required=False, label="As of", widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(
        self, *args, rerankers: list[str], targets: list[str] | None = None, presets: list[str] | None = None,
        **kwargs,
    ):  # fmt: skip
        super().__init__(*args, **kwargs)
        if presets is None:  # a launcher without presets (answer evaluation)
            del self.fields["preset"]
        else:
            self.fields["preset"].choices = [("", "by hand"), *((p, p) for p in presets)]  # type: ignore[attr-defined]
        self.fields["rerank"].choices = [(RERANK_NONE, "none"), *((r, r) for r in rerankers)]  # type: ignore[attr-defined]
        if targets is None:  # a launcher without targets (answer evaluation)
            del self.fields["target"]
        else:
            self.fields["target"].choices = [("", "evalsite"), *((t, f"target: {t}") for t in targets)]  # type: ignore[attr-defined]
        # A row's controls sit under their column's header, with no label of their own: each is named for
        # assistive technology by its column and its row ("Search type, configuration 2").
        index = (self.prefix or "").rsplit("-", 1)[-1]
        row = f" {int(index) + 1}" if index.isdigit() else ""
        for name, field in self.fields.items():
            if name != "enabled":
                field.widget.attrs["aria-label"] = f"{self[name].label}, configuration{row}"

    def as_config(self) -> dict[str, Any]:
        """The row as an API configuration object (evaluation.configs reads it); a row naming a target asks
        it alone (the search settings are the target's own)."""
        data = self.cleaned_data
        if data.get("preset"):  # expanded by evaluation.presets.with_preset (the tenant's, by name)
            named: dict[str, Any] = {"preset": data["preset"]}
            if data.get("label", "").strip():
                named["label"] = data["label"].strip()
            return named
        if data.get("target"):
            config: dict[str, Any] = {"target": data["target"]}
            if data.get("label", "").strip():
                config["label"] = data["label"].strip()
            return config
        config = {
            "search_type": data["search_type"],
            "fusion": data["fusion"],
            "bm25_variant": data["bm25_variant"],
            "rerank": data.get("rerank") or None,
        }
        if data.get("label", "").strip():
            config["label"] = data["label"].strip()
        if data.get("as_of"):
            config["as_of"] = data["as_of"].isoformat()
        return config


# A launcher's rows; the views give each row its rerankers (and model placeholder) through `form_kwargs`.
ConfigFormSet = forms.formset_factory(ConfigForm, extra=0, max_num=MAX_CONFIGS, absolute_max=MAX_CONFIGS)

LAUNCH_PRESETS: list[dict[str, Any]] = [
    {"enabled": True, "label": "fulltext", "search_type": "FullText"},
    {"enabled": False, "label": "fulltext okapi", "search_type": "FullText", "bm25_variant": "okapi"},
    {"enabled": False, "label": "vector", "search_type": "Vector"},
    {"enabled": True, "label": "hybrid rrf", "search_type": "Hybrid", "fusion": "Rrf"},
    {
        "enabled": False,
        "label": "hybrid rrf + rerank",
        "search_type": "Hybrid",
        "fusion": "Rrf",
        "rerank": "proximity",
    },
    {"enabled": False, "label": "", "search_type": "FullText"},
]


# --- launching an answer evaluation --------------------------------------------------------------------------

MAX_ANSWER_TOP_K = 50


class AnswerLaunchForm(SubsetFields):
    """What an answer evaluation asks besides its configurations (the API's evaluate/answers request)."""

    collections = forms.MultipleChoiceField(
        label="Collections",
        widget=forms.CheckboxSelectMultiple,
        help_text="Several collections are searched as one (document ids become collection/id).",
    )
    judge_model = forms.CharField(
        required=False,
        max_length=300,
        label="Judge model",
        help_text="Blank: the default model, or the heuristic judge when no chat endpoint is configured; "
        "“heuristic”: the heuristic judge.",
    )
    judge_samples = forms.IntegerField(
        required=False,
        label="Judge samples",
        help_text="Judgements per metric, odd (blank: 1, at temperature 0). Above 1: the majority verdict, "
        "and the share that agreed shown as the judge's confidence.",
    )
    judge_temperature = forms.FloatField(
        required=False, label="Judge temperature", help_text="Of the samples above 1 (blank: 0.7)."
    )
    max_questions = forms.IntegerField(
        required=False, min_value=1, label="Max questions", help_text="Blank: every golden question."
    )
    unanswerable_questions = StringListField(
        label="Unanswerable questions",
        help_text="One per line: questions the collections cannot answer. A good pipeline declines them "
        "(refusal recall).",
    )

    ERROR_FIELDS = {"empty-golden-set": "collections"}

    def __init__(self, *args, collections: list[tuple[str, str]], judge_placeholder: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collections"].choices = collections  # type: ignore[attr-defined]
        self.fields["judge_model"].widget.attrs["placeholder"] = judge_placeholder

    def clean_unanswerable_questions(self) -> list[str]:
        questions: list[str] = self.cleaned_data.get("unanswerable_questions") or []
        if len(questions) > MAX_UNANSWERABLE:
            raise forms.ValidationError(f"At most {MAX_UNANSWERABLE} unanswerable questions.")
        return questions


class AnswerConfigForm(ConfigForm):
    """One configuration row of the answer launcher: retrieval as for a retrieval run, plus how many passages
    the answer is written from, which model writes it and how strictly it must be grounded."""

    top_k = forms.IntegerField(
        min_value=1, max_value=MAX_ANSWER_TOP_K, initial=DEFAULT_ANSWER_TOP_K, label="Passages"
    )
    model = forms.CharField(required=False, max_length=300, label="Model")
    groundedness = forms.ChoiceField(choices=[(g, g) for g in GROUNDEDNESS_LEVELS], initial="Off")

    def __init__(self, *args, model_placeholder: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model"].widget.attrs["placeholder"] = model_placeholder

    def as_config(self) -> dict[str, Any]:
        config = super().as_config()
        config["top_k"] = self.cleaned_data["top_k"]
        if "target" in config:  # an answering target: its own model and grounding
            return config
        config["groundedness"] = self.cleaned_data["groundedness"]
        if self.cleaned_data.get("model", "").strip():
            config["model"] = self.cleaned_data["model"].strip()
        return config


AnswerConfigFormSet = forms.formset_factory(
    AnswerConfigForm, extra=0, max_num=MAX_CONFIGS, absolute_max=MAX_CONFIGS
)

ANSWER_LAUNCH_PRESETS: list[dict[str, Any]] = [
    {"enabled": True, "label": "fulltext", "search_type": "FullText", "top_k": DEFAULT_ANSWER_TOP_K},
    {
        "enabled": True,
        "label": "hybrid rrf",
        "search_type": "Hybrid",
        "fusion": "Rrf",
        "top_k": DEFAULT_ANSWER_TOP_K,
    },
    {
        "enabled": False,
        "label": "hybrid rrf grounded",
        "search_type": "Hybrid",
        "fusion": "Rrf",
        "top_k": DEFAULT_ANSWER_TOP_K,
        "groundedness": "Medium",
    },
    {"enabled": False, "label": "", "search_type": "FullText", "top_k": DEFAULT_ANSWER_TOP_K},
]


class RunFileForm(DashboardForm):
    """A TREC or JSONL run file to score on one collection's golden set (evaluation.retrieval.run_files)."""

    ERROR_FIELDS = {
        "run-file-invalid": "file",
        "empty-file": "file",
        "invalid-ks": "ks",
        "empty-golden-set": "collection",
    }

    collection = forms.ChoiceField(label="Collection")
    ks = forms.CharField(
        label="Cutoffs (k)", initial=DEFAULT_KS_TEXT, help_text="Comma-separated, e.g. 1,5,10."
    )
    file = forms.FileField(
        label="Run file",
        allow_empty_file=True,
        help_text='TREC (qid Q0 docid rank score tag, one line each) or JSONL ({"query_id", "document_id", '
        '"score", "tag"}); query ids are golden entry keys. Each tag becomes a run.',
    )

    def __init__(self, *args, collections: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].choices = collections  # type: ignore[attr-defined]

    def add_service_error(self, code: str, message: str, field: str | None) -> None:
        if code == "run-file-invalid":  # "line 3: ..." names the line: kept whole
            self.add_error("file", message[:1].upper() + message[1:])
            return
        super().add_service_error(code, message, field)


class GoldenImportForm(DashboardForm):
    """A golden-set file to preview, then import (goldenset.formats)."""

    ERROR_FIELDS = {
        "import-invalid": "file",
        "golden-invalid": "file",
        "golden-schema": "file",
        "empty-file": "file",
    }

    format = forms.ChoiceField(
        required=False,
        choices=[("", "detect from the file"), *((f, f) for f in FORMATS)],
        label="Format",
    )
    file = forms.FileField(label="File", allow_empty_file=True)
    qrels = forms.FileField(
        label="Qrels (trec)", required=False, help_text="TREC only: the qrels beside the topics."
    )
    create_documents = forms.BooleanField(
        required=False,
        label="Create documents for reference passages no page holds",
        help_text="Ragas and DeepEval rows may give passages by text only; they are matched to pages, else created.",
    )

    def add_service_error(self, code: str, message: str, field: str | None) -> None:
        self.add_error("file" if field is None else None, message[:1].upper() + message[1:])
