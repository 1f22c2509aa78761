"""Answer configurations, read strictly: how an answer's passages are retrieved (a retrieval configuration,
evaluation.configs), which model writes it, and how strictly it must be grounded; and the answer metrics'
thresholds. Plain Python, errors naming the offending field as evaluation.configs' do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluation.configs import (
    CONFIG_KEYS,
    TARGET_KEYS,
    RunConfig,
    parse_config,
    parse_config_list,
    parse_subset,
    parse_target_config,
)
from evaluation.request_fields import field_error, field_path, parse_choice, parse_share
from evaluation.runs.slices import EVERY, SUBSET_KEYS, Subset
from goldenset.vocabulary.groundedness import GROUNDEDNESS_LEVELS
from goldenset.vocabulary.metric_names import JUDGED_METRICS

ANSWER_KEYS = {"model", "groundedness"}
DEFAULT_ANSWER_TOP_K = 5  # passages an answer is written from


@dataclass(frozen=True)
class AnswerConfig:
    """A grounded-answer configuration: how to retrieve (`run`), which model answers (None: the default one, or
    the extractive answer offline), and how strictly the answer must be grounded."""

    run: RunConfig
    model: str | None = None
    groundedness: str = "Off"

    @property
    def label(self) -> str:
        return self.run.label

    @property
    def top_k(self) -> int:
        return self.run.top_k or DEFAULT_ANSWER_TOP_K

    def as_dict(self) -> dict:
        if self.run.target:  # the target's own answer: no model or groundedness of ours
            return {**self.run.as_dict(), "top_k": self.top_k}
        return {
            **self.run.as_dict(),
            "top_k": self.top_k,
            "model": self.model,
            "groundedness": self.groundedness,
        }

    def request(self) -> dict:
        """The configuration as a request sends it (what a job stores and parses again)."""
        if self.run.target:
            return self.run.request()
        return {**self.run.request(), "model": self.model, "groundedness": self.groundedness}


def parse_answer_config(
    raw,
    position: int,
    available_rerankers: Sequence[str],
    prefix: str | None = None,
    subset: Subset = EVERY,
) -> AnswerConfig:
    """One answer configuration; `subset` as parse_config takes it."""
    prefix = f"configs[{position}]" if prefix is None else prefix
    if not isinstance(raw, Mapping):
        raise field_error("validation-error", prefix, "expected an object.")
    unknown = sorted(set(raw) - CONFIG_KEYS - ANSWER_KEYS)
    if unknown:
        allowed = sorted(CONFIG_KEYS | ANSWER_KEYS)
        raise field_error(
            "validation-error", field_path(prefix, unknown[0]), "unknown field.", allowed=allowed
        )
    if raw.get("target") is not None:  # an answering target (rag-http) answers as it is configured
        for key in sorted(raw):
            if key not in TARGET_KEYS and raw[key] is not None:
                raise field_error(
                    "validation-error",
                    field_path(prefix, key),
                    "not used with a target (the target answers as it is configured).",
                    allowed=sorted(TARGET_KEYS),
                )
        present = {k: v for k, v in raw.items() if v is not None}
        own = parse_subset(present, prefix, base=subset)
        return AnswerConfig(
            run=parse_target_config({k: v for k, v in present.items() if k not in SUBSET_KEYS}, prefix, own)
        )
    run = parse_config(
        {k: v for k, v in raw.items() if k not in ANSWER_KEYS}, position, available_rerankers, prefix, subset
    )
    groundedness = parse_choice(
        raw.get("groundedness") or "Off",
        field_path(prefix, "groundedness"),
        GROUNDEDNESS_LEVELS,
        "unknown-groundedness",
    )
    model = raw.get("model")
    if model is not None and (not isinstance(model, str) or len(model) > 300):
        raise field_error(
            "validation-error", field_path(prefix, "model"), "expected a string of at most 300 characters."
        )
    model = (model or "").strip() or None
    label = raw.get("label")
    if not (isinstance(label, str) and label.strip()):  # a default label names the answer settings too
        extra = [f"groundedness:{groundedness}"] if groundedness != "Off" else []
        extra += [f"model:{model}"] if model else []
        if extra:
            run = RunConfig(**{**run.__dict__, "label": " ".join([run.label, *extra])})
    return AnswerConfig(run=run, model=model, groundedness=groundedness)


def parse_answer_configs(
    raw, available_rerankers: Sequence[str], subset: Subset = EVERY
) -> list[AnswerConfig]:
    return parse_config_list(
        raw, lambda item, i: parse_answer_config(item, i, available_rerankers, subset=subset)
    )


def parse_thresholds(raw, field: str = "metric_thresholds") -> dict[str, float]:
    """{metric: threshold in [0, 1]} for the answer metrics; unknown metrics and bad numbers are errors."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise field_error("validation-error", field, "expected an object of metric -> threshold.")
    out: dict[str, float] = {}
    for name, value in raw.items():
        if name not in JUDGED_METRICS:
            raise field_error(
                "validation-error", f"{field}.{name}", f"unknown metric; known: {', '.join(JUDGED_METRICS)}."
            )
        out[name] = parse_share(value, f"{field}.{name}")
    return out
