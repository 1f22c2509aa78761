"""The form that starts a study: the collection, the base configuration (as the launcher has it), the space (for
each field a study varies: a list of values, or low / high / step), and the study's metric, budget, seed, share
kept for the confirmation, sampler, pruning and latency limit.

The form only shapes the request: evaluation.studies.services.study_create checks it as the API does, and its
error comes back on the field it names (`space.bm25_k1` on that row of the space, `budget.trials` on trials)."""

from __future__ import annotations

import math
from typing import Any

from django import forms

from evaluation.dashboard.forms import RERANK_NONE, SubsetFields
from evaluation.retrieval.search.bm25 import VARIANTS
from evaluation.retrieval.search.engine import FUSIONS, SEARCH_TYPES
from evaluation.studies.request import DEFAULT_METRIC, DEFAULT_TRIALS, MAX_SEED, METRICS_TEXT, STUDY_METRICS
from evaluation.studies.search import MAX_TRIALS, SAMPLERS
from evaluation.studies.space import ANSWER_FIELDS, FIELDS
from goldenset.vocabulary.metric_names import JUDGED_METRICS

CHOICE_FIELDS = [name for name, field in FIELDS.items() if field.choices is not None]
TEXT_FIELDS = ("model",)  # a list of names, comma-separated
RANGE_FIELDS = [name for name, field in FIELDS.items() if field.choices is None and name not in TEXT_FIELDS]
# What the metric's box suggests (any K is taken): every metric a study maximises, at K = 10
METRIC_SUGGESTIONS = [name.replace("@K", "@10") for name in STUDY_METRICS]
NUMBER_FIELDS = ("fulltext_weight", "top_k", "bm25_k1", "bm25_b", "rrf_k")  # of the base, blank: the default
SPACE_HELP = {
    "search_type": "How documents are found.",
    "fusion": "How Hybrid merges its two lists.",
    "bm25_variant": "BM25's formula.",
    "rerank": "Rerank the top results, or not.",
    "fulltext_weight": "Hybrid Weighted: the full-text share (0–1).",
    "top_k": "Results kept per question (1–1000).",
    "bm25_k1": "BM25's term saturation (0–10).",
    "bm25_b": "BM25's length normalisation (0–1).",
    "rrf_k": "RRF's rank constant (1–10,000).",
    "groundedness": "An answer metric only: how strictly the answer keeps to its passages.",
    "model": "An answer metric only: the chat models that write the answer.",
}
# Where the service's `details.field` puts its error, beyond `space.NAME` and `base.NAME`.
SERVICE_FIELDS = {
    "budget": "trials",
    "budget.trials": "trials",
    "budget.seconds": "seconds",
    "collection_id": "collection",
}


def _word(value: Any) -> str:
    return "on" if value is True else "off" if value is False else str(value)


class StudyForm(SubsetFields):
    collection = forms.ChoiceField(label="Collection")
    search_type = forms.ChoiceField(choices=[(t, t) for t in SEARCH_TYPES], initial="FullText")
    fusion = forms.ChoiceField(choices=[(f, f) for f in FUSIONS], initial="Rrf", help_text="Hybrid only.")
    rerank = forms.ChoiceField(required=False)
    bm25_variant = forms.ChoiceField(choices=[(v, v) for v in VARIANTS], initial="lucene", label="BM25")
    fulltext_weight = forms.FloatField(required=False, label="Full-text weight", help_text="Blank: 0.5.")
    top_k = forms.IntegerField(required=False, label="Top k", help_text="Blank: the metric's depth.")
    bm25_k1 = forms.FloatField(required=False, label="BM25 k1", help_text="Blank: 1.5.")
    bm25_b = forms.FloatField(required=False, label="BM25 b", help_text="Blank: 0.75.")
    rrf_k = forms.IntegerField(required=False, label="RRF k", help_text="Blank: 60.")

    metric = forms.CharField(
        initial=DEFAULT_METRIC,
        max_length=20,
        help_text=f"What is maximised: {METRICS_TEXT}.",
        widget=forms.TextInput(
            attrs={"list": "study-metrics", "data-answer-metrics": ",".join(JUDGED_METRICS)}
        ),
    )
    trials = forms.IntegerField(
        initial=DEFAULT_TRIALS, min_value=1, max_value=MAX_TRIALS, help_text="At most this many trials."
    )
    seconds = forms.FloatField(required=False, label="Seconds", help_text="Blank: no time limit.")
    seed = forms.IntegerField(
        initial=0, min_value=0, max_value=MAX_SEED, help_text="The split, the sampler and the pruner's."
    )
    confirm_share = forms.FloatField(
        initial=0.5, label="Confirmation share", help_text="Of the golden set, kept to confirm the winner."
    )
    sampler = forms.ChoiceField(
        choices=[(s, s) for s in SAMPLERS],
        initial="tpe",
        help_text="tpe learns from the trials so far; grid tries every point (give ranges a step).",
    )
    prune = forms.BooleanField(
        required=False, initial=True, label="Prune weak trials",
        help_text="Score a quarter, then half of the tuning questions first (not with grid).",
    )  # fmt: skip
    max_p95_ms = forms.FloatField(
        required=False,
        label="Max p95 (ms)",
        help_text="A trial whose 95th-percentile search time is above this cannot win. Blank: no limit.",
    )

    def __init__(self, *args, collections: list[tuple[str, str]], rerankers: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].choices = collections  # type: ignore[attr-defined]
        self.fields["rerank"].choices = [(RERANK_NONE, "none"), *((r, r) for r in rerankers)]  # type: ignore[attr-defined]
        for name in CHOICE_FIELDS:
            self.fields[f"vary_{name}"] = forms.MultipleChoiceField(
                required=False, widget=forms.CheckboxSelectMultiple, label=name,
                choices=[(_word(c), _word(c)) for c in FIELDS[name].choices or ()],
            )  # fmt: skip
        for name in TEXT_FIELDS:
            self.fields[f"vary_{name}"] = forms.CharField(
                required=False, max_length=2000, label=f"{name} names", help_text="Comma-separated."
            )
        for name in RANGE_FIELDS:
            self.fields[f"vary_{name}"] = forms.CharField(
                required=False, max_length=500, label=f"{name} values", help_text="Comma-separated."
            )
            self.fields[f"low_{name}"] = forms.FloatField(required=False, label=f"{name} low")
            self.fields[f"high_{name}"] = forms.FloatField(required=False, label=f"{name} high")
            self.fields[f"step_{name}"] = forms.FloatField(required=False, label=f"{name} step")
            self.fields[f"log_{name}"] = forms.BooleanField(required=False, label=f"{name} on a log scale")

    def answers(self) -> bool:
        """Whether the metric asked (as typed, else the initial one) is an answer metric."""
        metric = self.data.get("metric") if self.is_bound else self.initial.get("metric", DEFAULT_METRIC)
        return str(metric or "").strip().lower() in JUDGED_METRICS

    def space_rows(self) -> list[dict[str, Any]]:
        """The space editor's rows, in the order of evaluation.studies.space.FIELDS; an answer configuration's
        (`answer_only`) are shown only with an answer metric (the page's script follows the metric as it is typed)."""
        rows = []
        for name in FIELDS:
            row = {
                "name": name, "help": SPACE_HELP.get(name, ""), "vary": self[f"vary_{name}"],
                "answer_only": name in ANSWER_FIELDS, "text": name in TEXT_FIELDS,
            }  # fmt: skip
            if name in RANGE_FIELDS:
                row.update({part: self[f"{part}_{name}"] for part in ("low", "high", "step", "log")})
            parts = ("vary", "low", "high", "step", "log") if name in RANGE_FIELDS else ("vary",)
            row["errors"] = [e for part in parts for e in self[f"{part}_{name}"].errors]
            rows.append(row)
        return rows

    def base(self) -> dict[str, Any]:
        """The base configuration as the API takes it (blank numbers left to their defaults)."""
        data = self.cleaned_data
        config: dict[str, Any] = {
            "search_type": data["search_type"], "fusion": data["fusion"],
            "bm25_variant": data["bm25_variant"], "rerank": data.get("rerank") or None,
        }  # fmt: skip
        config.update({name: data[name] for name in NUMBER_FIELDS if data.get(name) is not None})
        config.update({k: v for k, v in self.subset_request().items() if v})
        return config

    def space(self) -> dict[str, Any] | None:
        """The space as the API takes it, or None with errors on the rows that cannot be read. An answer
        configuration's rows are left out unless the metric is an answer metric (they are not shown then)."""
        space: dict[str, Any] = {}
        shown = [n for n in FIELDS if self.answers() or n not in ANSWER_FIELDS]
        for name in (n for n in CHOICE_FIELDS if n in shown):
            ticked = self.cleaned_data.get(f"vary_{name}") or []
            if ticked:
                space[name] = [
                    {"on": True, "off": False}.get(v, v) if name == "rerank" else v for v in ticked
                ]
        for name in (n for n in TEXT_FIELDS if n in shown):
            names = [part.strip() for part in (self.cleaned_data.get(f"vary_{name}") or "").split(",")]
            if any(names):
                space[name] = [part for part in names if part]
        for name in (n for n in RANGE_FIELDS if n in shown):
            value = self._range(name)
            if value is not None:
                space[name] = value
        return None if self.errors else space

    def _range(self, name: str) -> Any:
        data = self.cleaned_data
        text = (data.get(f"vary_{name}") or "").strip()
        low, high, step = (data.get(f"{part}_{name}") for part in ("low", "high", "step"))
        whole = True
        if text and (low is not None or high is not None or step is not None):
            self.add_error(f"vary_{name}", "Give a list of values or a range (low, high), not both.")
            return None
        if text:
            values = []
            for item in (part.strip() for part in text.split(",")):
                try:
                    number = float(item)
                except ValueError:
                    self.add_error(f"vary_{name}", f"“{item}” is not a number.")
                    return None
                values.append(_plain(number, whole))
            return values
        if low is None and high is None:
            if step is not None or data.get(f"log_{name}"):
                self.add_error(f"low_{name}", "A range needs low and high.")
            return None
        if low is None or high is None:
            self.add_error(f"low_{name}" if low is None else f"high_{name}", "A range needs low and high.")
            return None
        value: dict[str, Any] = {"low": _plain(low, whole), "high": _plain(high, whole)}
        if step is not None:
            value["step"] = _plain(step, whole)
        if data.get(f"log_{name}"):
            value["log"] = True
        return value

    def study_request(self) -> dict[str, Any] | None:
        """The study request as POST studies takes it (without its collection), or None with errors."""
        space = self.space()
        if space is None:
            return None
        if not space:
            self.add_error(None, "Vary at least one field: tick its choices, or give its values or a range.")
            return None
        data = self.cleaned_data
        budget: dict[str, Any] = {"trials": data["trials"]}
        if data.get("seconds") is not None:
            budget["seconds"] = data["seconds"]
        request = {
            "base": self.base(), "space": space, "metric": data["metric"].strip(), "budget": budget,
            "seed": data["seed"], "confirm_share": data["confirm_share"], "sampler": data["sampler"],
            "prune": bool(data.get("prune")),
        }  # fmt: skip
        if data.get("max_p95_ms") is not None:
            request["max_p95_ms"] = data["max_p95_ms"]
        return request

    def add_service_error(self, code: str, message: str, field: str | None) -> None:
        """The study service's error on the field it names: `space.NAME` on that row, `base.NAME` on the base
        field, a budget's on trials or seconds; an empty golden set on the collection."""
        name = field or ""
        if name.startswith("space.") and f"vary_{name[6:]}" in self.fields:
            target: str | None = f"vary_{name[6:]}"
        elif name.startswith("base.") and name[5:] in self.fields:
            target = name[5:]
        else:
            target = SERVICE_FIELDS.get(name, name if name in self.fields else None)
        if code == "empty-golden-set":
            target = "collection"
        text = message.removeprefix(f"{name}: ") if name else message  # "space.top_k: ..." said on its field
        self.add_error(target, text[:1].upper() + text[1:])


def _plain(number: float, whole: bool = True) -> int | float:
    """A number as a person would send it to the API: a whole number as an int (2, not 2.0)."""
    if whole and math.isfinite(number) and number == int(number):
        return int(number)
    return number


def starter_space(search_type: str) -> dict[str, Any]:
    """A first space for a base configuration, so the form opens ready to run (every field in it has an effect in
    some trial, evaluation.studies.inert): BM25's two parameters for FullText, the fusion and its weight for Hybrid
    (the weight moves only the Weighted trials, which the study's page says), reranking for Vector."""
    if search_type == "Hybrid":
        return {"vary_fusion": ["Rrf", "Weighted"], "low_fulltext_weight": 0.1, "high_fulltext_weight": 0.9,
                "step_fulltext_weight": 0.1}  # fmt: skip
    if (
        search_type == "Vector"
    ):  # BM25's parameters do nothing there, nor a top_k at or above the metric's depth
        return {"vary_rerank": ["off", "on"]}
    return {"low_bm25_k1": 0.3, "high_bm25_k1": 3.0, "low_bm25_b": 0.1, "high_bm25_b": 1.0}


def initial_from_config(config: dict[str, Any]) -> dict[str, Any]:
    """A form's initial base from a stored run's configuration (what `Tune this configuration` opens)."""
    initial: dict[str, Any] = {
        name: config[name] for name in ("search_type", "fusion", "bm25_variant") if config.get(name)
    }
    initial["rerank"] = config.get("rerank") or RERANK_NONE
    for name in NUMBER_FIELDS:
        if config.get(name) is not None and not (name == "fulltext_weight" and config[name] == 0.5):
            initial[name] = config[name]
    subset = config.get("subset") or {}
    initial.update({k: subset[k] for k in ("tags", "origin", "reviewed_only", "skip_unreviewed_generated")
                    if subset.get(k)})  # fmt: skip
    return initial
