"""Evaluation requests, read strictly: configurations and ks. Plain Python (the API and the CLI share it).

Every error is an EvalsiteError with a stable code and the offending field's path, e.g.
`configs[1].search_type`, so a client is told exactly what to fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, time
from typing import TypeVar

from evalsite.errors import EvalsiteError
from evaluation.retrieval.search.bm25 import VARIANTS
from evaluation.retrieval.search.engine import FUSIONS, SEARCH_TYPES, SearchConfig
from evaluation.runs.slices import EVERY, SUBSET_KEYS, Subset
from goldenset.vocabulary.golden_fields import ORIGINS
from goldenset.vocabulary.groundedness import GROUNDEDNESS_LEVELS
from goldenset.vocabulary.metric_names import JUDGED_METRICS

MAX_LABEL_CHARS = 200  # a run's label: EvaluationRun.label's length (run files' tags are labels too)

MAX_K = 1000
_DIGITS = re.compile(r"[0-9]+")
MAX_CONFIGS = 20
CONFIG_KEYS = {
    "label", "search_type", "fusion", "rerank", "bm25_variant", "top_k", "as_of", "include_superseded",
    "fulltext_weight", "target", "max_error_rate", *SUBSET_KEYS,
}  # fmt: skip
# With `target` (an external system, evaluation.targets.callers) a configuration says only how deep to ask it, how
# many failed questions a run may have and which golden entries to ask: the target searches as configured.
TARGET_KEYS = {"label", "target", "top_k", "max_error_rate", *SUBSET_KEYS}
MAX_SUBSET_VALUES = 100
DEFAULT_MAX_ERROR_RATE = 0.05


@dataclass(frozen=True)
class RunConfig:
    label: str
    search_type: str = "FullText"
    fusion: str = "Rrf"
    rerank: str | None = None
    bm25_variant: str = "lucene"
    top_k: int | None = None
    as_of: datetime | None = None
    include_superseded: bool = False
    fulltext_weight: float = 0.5
    target: str | None = None  # an external target's name; target_kind is filled in when it is looked up
    target_kind: str | None = None
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE
    run_file: str | None = None  # an uploaded run file's name: its rankings were read, not searched
    subset: Subset = EVERY  # the golden entries asked (evaluation.runs.slices); empty: every one

    def search_config(self) -> SearchConfig:
        return SearchConfig(
            search_type=self.search_type,
            fusion=self.fusion,
            bm25_variant=self.bm25_variant,
            rerank=self.rerank,
            as_of=self.as_of,
            include_superseded=self.include_superseded,
            fulltext_weight=self.fulltext_weight,
        )

    def request(self) -> dict:
        """The configuration as a request sends it (what a job stores and parses again)."""
        data = self.as_dict()
        data.pop("target_kind", None)
        data.update(data.pop("subset", {}))
        return data

    def as_dict(self) -> dict:
        """The configuration as runs store it and the API echoes it: `rerank` is the reranker that ran, or false
        when none did (what a client sends to turn it off; runs stored before this say null, read the same)."""
        if self.run_file:
            return {"label": self.label, "run_file": self.run_file, "top_k": self.top_k}
        # `subset` only when it restricts: a run of every golden entry reads as runs always did.
        subset = {"subset": self.subset.as_dict()} if self.subset else {}
        if self.target:
            return {
                "label": self.label,
                "target": self.target,
                "target_kind": self.target_kind,
                "top_k": self.top_k,
                "max_error_rate": self.max_error_rate,
                **subset,
            }
        data = asdict(self)
        for name in ("target", "target_kind", "max_error_rate", "run_file", "subset"):
            del data[name]
        data["rerank"] = self.rerank or False
        data["as_of"] = self.as_of.isoformat().replace("+00:00", "Z") if self.as_of else None
        return {**data, **subset}


def _fail(code: str, field: str, message: str, **details) -> EvalsiteError:
    return EvalsiteError(code, f"{field}: {message}", details={"field": field, **details})


def parse_positive_int(value, field: str, *, maximum: int = MAX_K) -> int:
    """An integer >= 1, sent as a number or a numeric string ("10")."""
    if isinstance(value, bool):
        raise _fail("invalid-number", field, f"expected a positive integer, got {value!r}.")
    if isinstance(value, str):
        # ASCII digits only: str.isdigit() also admits "²" and "٣", and int() refuses the first (a 500).
        digits = value.strip().removeprefix("+")
        if not _DIGITS.fullmatch(digits):
            raise _fail("invalid-number", field, f"expected a positive integer, got {value!r}.")
        if len(digits.lstrip("0")) > len(str(maximum)):  # int() of 5000 digits raises; out of range anyway
            raise _fail("invalid-number", field, f"expected an integer from 1 to {maximum}, got {value!r}.")
        value = int(digits)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < 1 or value > maximum:
        raise _fail("invalid-number", field, f"expected an integer from 1 to {maximum}, got {value!r}.")
    return value


# The cutoffs an evaluation reports when none are asked (the API, the commands, the dashboard's forms, the demo).
DEFAULT_KS = (1, 5, 10)
DEFAULT_KS_TEXT = ",".join(map(str, DEFAULT_KS))  # as the commands and the forms take them: "1,5,10"


def parse_ks(raw, field: str = "ks") -> list[int]:
    """ks as numbers or numeric strings; sorted, without repeats. Default DEFAULT_KS."""
    if raw is None:
        return list(DEFAULT_KS)
    if isinstance(raw, str):
        raw = [part for part in raw.split(",") if part.strip()]
    if not isinstance(raw, list) or not raw:
        raise _fail("invalid-ks", field, "expected a non-empty list of positive integers.")
    try:
        return sorted({parse_positive_int(k, f"{field}[{i}]") for i, k in enumerate(raw)})
    except EvalsiteError as exc:
        raise EvalsiteError("invalid-ks", exc.message, details=exc.details) from None


def parse_instant(value, field: str) -> datetime | None:
    """An ISO 8601 date (its first instant, UTC) or datetime (naive means UTC); None or "" for none."""
    if value in (None, ""):
        return None
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            if len(text) == 10:
                return datetime.combine(datetime.strptime(text, "%Y-%m-%d").date(), time.min, tzinfo=UTC)
            moment = datetime.fromisoformat(text)
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        except ValueError:
            pass
    raise _fail("invalid-date", field, f"expected an ISO 8601 date or datetime, got {value!r}.")


def _bool(value, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise _fail("validation-error", field, f"expected true or false, got {value!r}.")


def _choice(value, field: str, choices: Sequence[str], code: str) -> str:
    if isinstance(value, str):
        for choice in choices:  # PascalCase is canonical; accept any case ("fulltext", "FULLTEXT")
            if value.strip().lower() == choice.lower():
                return choice
    raise _fail(code, field, f"expected one of {', '.join(choices)}, got {value!r}.", allowed=list(choices))


def resolve_rerank(value, field: str, available: Sequence[str]) -> str | None:
    """false/None: no rerank; true: the strongest reranker available; a name: that one, or a 400.

    `available` lists the rerankers this server can run, strongest first. Never a silent fallback: `true` with
    none available, or a name not available, is an error naming what is.
    """
    text = value.strip().lower() if isinstance(value, str) else None
    if value is None or value is False or text in ("", "false"):  # `is`: 0 == False, but 0 is no answer
        return None
    if (value is True or text == "true") and available:
        return available[0]
    for name in available:
        if text == name.lower():
            return name
    raise _fail(
        "reranker-unavailable",
        field,
        f"reranker {value!r} is not available here; available: {', '.join(available)}.",
        available=list(available),
    )


def parse_config(
    raw,
    position: int,
    available_rerankers: Sequence[str],
    prefix: str | None = None,
    subset: Subset = EVERY,
) -> RunConfig:
    """One configuration; errors name `configs[position].field` (or just `field` with prefix="").

    `subset` is the request's (its body's `tags`, `origin`, ...); a subset field the configuration sets
    replaces the request's for this configuration."""
    prefix = f"configs[{position}]" if prefix is None else prefix
    if not isinstance(raw, Mapping):
        raise _fail("validation-error", prefix, "expected an object.")
    unknown = sorted(set(raw) - CONFIG_KEYS)
    if unknown:
        raise _fail("validation-error", _f(prefix, unknown[0]), "unknown field.", allowed=sorted(CONFIG_KEYS))
    raw = {key: value for key, value in raw.items() if value is not None}  # null: the default, as if left out
    subset = parse_subset(raw, prefix, base=subset)
    raw = {key: value for key, value in raw.items() if key not in SUBSET_KEYS}
    if "target" in raw:
        return _parse_target_config(raw, prefix, subset)
    if "max_error_rate" in raw:
        raise _fail("validation-error", _f(prefix, "max_error_rate"), "only with a target.")
    search_type = _choice(
        raw.get("search_type", "FullText"), _f(prefix, "search_type"), SEARCH_TYPES, "unknown-search-type"
    )
    fusion = _choice(raw.get("fusion", "Rrf"), _f(prefix, "fusion"), FUSIONS, "unknown-fusion")
    variant = _choice(
        raw.get("bm25_variant", "lucene"), _f(prefix, "bm25_variant"), VARIANTS, "unknown-variant"
    )
    rerank = resolve_rerank(raw.get("rerank"), _f(prefix, "rerank"), available_rerankers)
    top_k = raw.get("top_k")
    weight = raw.get("fulltext_weight", 0.5)
    if isinstance(weight, bool) or not isinstance(weight, int | float | str):
        raise _fail("validation-error", _f(prefix, "fulltext_weight"), "expected a number from 0 to 1.")
    try:
        weight = float(weight)
    except ValueError:
        raise _fail(
            "validation-error", _f(prefix, "fulltext_weight"), "expected a number from 0 to 1."
        ) from None
    if not 0 <= weight <= 1:
        raise _fail("validation-error", _f(prefix, "fulltext_weight"), "expected a number from 0 to 1.")
    label = raw.get("label")
    if label is not None and (not isinstance(label, str) or len(label) > MAX_LABEL_CHARS):
        raise _fail(
            "validation-error",
            _f(prefix, "label"),
            f"expected a string of at most {MAX_LABEL_CHARS} characters.",
        )
    config = RunConfig(
        label="",
        search_type=search_type,
        fusion=fusion,
        rerank=rerank,
        bm25_variant=variant,
        top_k=None if top_k in (None, "") else parse_positive_int(top_k, _f(prefix, "top_k")),
        as_of=parse_instant(raw.get("as_of"), _f(prefix, "as_of")),
        include_superseded=_bool(raw.get("include_superseded", False), _f(prefix, "include_superseded")),
        fulltext_weight=weight,
        subset=subset,
    )
    return RunConfig(**{**config.__dict__, "label": (label or "").strip() or default_label(config)})


def _parse_target_config(raw: Mapping, prefix: str, subset: Subset = EVERY) -> RunConfig:
    """A configuration that evaluates an external target: its name, depth and the share of questions that may
    fail before the run does."""
    for key in sorted(raw):
        if key not in TARGET_KEYS:
            raise _fail(
                "validation-error",
                _f(prefix, key),
                "not used with a target (the target searches as it is configured).",
                allowed=sorted(TARGET_KEYS),
            )
    name = raw["target"]
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise _fail("validation-error", _f(prefix, "target"), "expected a target's name.")
    rate = raw.get("max_error_rate", DEFAULT_MAX_ERROR_RATE)
    try:
        rate = float(rate) if not isinstance(rate, bool) else math.nan
    except (TypeError, ValueError):
        rate = math.nan
    if not 0 <= rate <= 1:
        raise _fail("validation-error", _f(prefix, "max_error_rate"), "expected a number from 0 to 1.")
    label = raw.get("label")
    if label is not None and (not isinstance(label, str) or len(label) > MAX_LABEL_CHARS):
        raise _fail(
            "validation-error",
            _f(prefix, "label"),
            f"expected a string of at most {MAX_LABEL_CHARS} characters.",
        )
    top_k = raw.get("top_k")
    top_k = None if top_k in (None, "") else parse_positive_int(top_k, _f(prefix, "top_k"))
    default = " ".join(
        [f"target:{name.strip()}", *([f"top_k:{top_k}"] if top_k else []), *subset.label_parts()]
    )
    return RunConfig(
        label=(label or "").strip() or default,
        target=name.strip(),
        top_k=top_k,
        max_error_rate=rate,
        subset=subset,
    )


def _f(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def default_label(config: RunConfig) -> str:
    """A label naming everything that sets the configuration apart from the defaults.

    Two configurations that search differently get different labels, so a call without labels never fails
    with duplicate-label for configurations that are in fact distinct.
    """
    parts = [config.search_type]
    if config.search_type == "Hybrid":
        parts.append(config.fusion)
        if config.fusion == "Weighted" and config.fulltext_weight != 0.5:
            parts.append(f"fulltext_weight:{config.fulltext_weight:g}")
    if config.bm25_variant != "lucene" and config.search_type != "Vector":
        parts.append(config.bm25_variant)
    if config.rerank:
        parts.append(f"rerank:{config.rerank}")
    if config.top_k:
        parts.append(f"top_k:{config.top_k}")
    if config.as_of:
        moment = config.as_of.astimezone(UTC)
        if moment.time() == time.min:
            parts.append(f"as_of:{moment:%Y-%m-%d}")
        else:
            parts.append(f"as_of:{moment.isoformat().replace('+00:00', 'Z')}")
    if config.include_superseded:
        parts.append("include_superseded")
    return " ".join([*parts, *config.subset.label_parts()])


def parse_configs(raw, available_rerankers: Sequence[str], subset: Subset = EVERY) -> list[RunConfig]:
    return _parse_list(raw, lambda item, i: parse_config(item, i, available_rerankers, subset=subset))


def _string_list(value, field: str, *, maximum: int = MAX_SUBSET_VALUES) -> list[str]:
    """A list of non-empty strings (a bare string is refused: "faq" is not ["faq"] by accident)."""
    if not isinstance(value, list):
        raise _fail("validation-error", field, f"expected a list of strings, got {value!r}.")
    if len(value) > maximum:
        raise _fail("validation-error", field, f"at most {maximum} values.")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip() or len(item) > 200:
            raise _fail(
                "validation-error", f"{field}[{i}]", "expected a non-empty string (at most 200 characters)."
            )
        out.append(item.strip())
    return list(dict.fromkeys(out))


def parse_subset(raw: Mapping, prefix: str = "", base: Subset = EVERY) -> Subset:
    """The subset fields of a request body or a configuration (`tags`, `origin`, `reviewed_only`,
    `skip_unreviewed_generated`; null or absent: `base`'s). Origins are read in any case and stored as
    goldenset names them (Manual, Imported, Generated)."""
    subset = base
    if raw.get("tags") is not None:
        subset = replace(subset, tags=tuple(_string_list(raw["tags"], _f(prefix, "tags"))))
    if raw.get("origin") is not None:
        field = _f(prefix, "origin")
        names = _string_list(raw["origin"], field, maximum=len(ORIGINS))
        origins = [
            _choice(name, f"{field}[{i}]", ORIGINS, "validation-error") for i, name in enumerate(names)
        ]
        subset = replace(subset, origins=tuple(dict.fromkeys(origins)))
    if raw.get("reviewed_only") is not None:
        subset = replace(subset, reviewed_only=_bool(raw["reviewed_only"], _f(prefix, "reviewed_only")))
    if raw.get("skip_unreviewed_generated") is not None:
        field = _f(prefix, "skip_unreviewed_generated")
        subset = replace(subset, skip_unreviewed_generated=_bool(raw["skip_unreviewed_generated"], field))
    return subset


C = TypeVar("C", RunConfig, "AnswerConfig")


def _parse_list(raw, parse_one: Callable[[object, int], C]) -> list[C]:
    """A request's `configs`: default one FullText configuration; each parsed; labels unique."""
    if raw is None:
        raw = [{"search_type": "FullText"}]
    if not isinstance(raw, list) or not raw:
        raise _fail("validation-error", "configs", "expected a non-empty list of configurations.")
    if len(raw) > MAX_CONFIGS:
        raise _fail("too-many-configs", "configs", f"at most {MAX_CONFIGS} configurations per call.")
    configs = [parse_one(item, i) for i, item in enumerate(raw)]
    seen: dict[str, int] = {}
    for i, config in enumerate(configs):
        if config.label in seen:
            raise _fail(
                "duplicate-label",
                f"configs[{i}].label",
                f"label {config.label!r} repeats configs[{seen[config.label]}]; labels name runs, so each must differ.",
            )
        seen[config.label] = i
    return configs


# --- answer evaluation ---------------------------------------------------------------------------------------

GROUNDEDNESS = GROUNDEDNESS_LEVELS
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
        raise _fail("validation-error", prefix, "expected an object.")
    unknown = sorted(set(raw) - CONFIG_KEYS - ANSWER_KEYS)
    if unknown:
        allowed = sorted(CONFIG_KEYS | ANSWER_KEYS)
        raise _fail("validation-error", _f(prefix, unknown[0]), "unknown field.", allowed=allowed)
    if raw.get("target") is not None:  # an answering target (rag-http) answers as it is configured
        for key in sorted(raw):
            if key not in TARGET_KEYS and raw[key] is not None:
                raise _fail(
                    "validation-error",
                    _f(prefix, key),
                    "not used with a target (the target answers as it is configured).",
                    allowed=sorted(TARGET_KEYS),
                )
        present = {k: v for k, v in raw.items() if v is not None}
        own = parse_subset(present, prefix, base=subset)
        return AnswerConfig(
            run=_parse_target_config({k: v for k, v in present.items() if k not in SUBSET_KEYS}, prefix, own)
        )
    run = parse_config(
        {k: v for k, v in raw.items() if k not in ANSWER_KEYS}, position, available_rerankers, prefix, subset
    )
    groundedness = _choice(
        raw.get("groundedness") or "Off", _f(prefix, "groundedness"), GROUNDEDNESS, "unknown-groundedness"
    )
    model = raw.get("model")
    if model is not None and (not isinstance(model, str) or len(model) > 300):
        raise _fail("validation-error", _f(prefix, "model"), "expected a string of at most 300 characters.")
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
    return _parse_list(raw, lambda item, i: parse_answer_config(item, i, available_rerankers, subset=subset))


def parse_thresholds(raw, field: str = "metric_thresholds") -> dict[str, float]:
    """{metric: threshold in [0, 1]} for the answer metrics; unknown metrics and bad numbers are errors."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise _fail("validation-error", field, "expected an object of metric -> threshold.")
    out: dict[str, float] = {}
    for name, value in raw.items():
        if name not in JUDGED_METRICS:
            raise _fail(
                "validation-error", f"{field}.{name}", f"unknown metric; known: {', '.join(JUDGED_METRICS)}."
            )
        try:
            number = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if not 0 <= number <= 1:
            raise _fail("validation-error", f"{field}.{name}", "expected a number from 0 to 1.")
        out[name] = number
    return out


# Collections one call may search or evaluate together: each is an index to load, so the work is bounded.
MAX_COLLECTIONS_PER_CALL = 50
