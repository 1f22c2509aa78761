"""Evaluation configurations, read strictly: how a run searches (or which target it asks, or which run file
it reads), and which golden entries it asks. Plain Python (the API, the CLI and the dashboard share it); the
fields' readers are evaluation.request_fields', an answer configuration is evaluation.answers.configs'.

Every error is an EvalsiteError with a stable code and the offending field's path, e.g.
`configs[1].search_type`, so a client is told exactly what to fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, time
from typing import Any, Protocol, TypeVar

from evaluation.request_fields import (
    field_error,
    field_path,
    parse_bool,
    parse_choice,
    parse_instant,
    parse_number,
    parse_positive_int,
    parse_share,
    string_list,
)
from evaluation.retrieval.search.bm25 import VARIANTS
from evaluation.retrieval.search.engine import FUSIONS, SEARCH_TYPES, SearchConfig
from evaluation.runs.slices import EVERY, SUBSET_KEYS, Subset
from goldenset.vocabulary.golden_fields import ORIGINS

MAX_LABEL_CHARS = 200  # a run's label: EvaluationRun.label's length (run files' tags are labels too)

MAX_CONFIGS = 20
CONFIG_KEYS = {
    "label", "search_type", "fusion", "rerank", "bm25_variant", "top_k", "as_of", "include_superseded",
    "fulltext_weight", "bm25_k1", "bm25_b", "rrf_k", "target", "max_error_rate", "params", *SUBSET_KEYS,
}  # fmt: skip
TUNING_KEYS = (
    "bm25_k1",
    "bm25_b",
    "rrf_k",
)  # echoed only when set: runs without them read as they always did
MAX_BM25_K1 = 10.0
MAX_RRF_K = 10_000
# With `target` (an external system, evaluation.targets.callers) a configuration says only how deep to ask it, how
# many failed questions a run may have and which golden entries to ask: the target searches as configured.
TARGET_KEYS = {"label", "target", "top_k", "max_error_rate", "params", *SUBSET_KEYS}
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
    bm25_k1: float | None = None  # None: BM25's default (1.5)
    bm25_b: float | None = None  # None: BM25's default (0.75)
    rrf_k: int | None = None  # None: RRF's default (60)
    # A target's named parameters set by this configuration (over its options.params), as (name, value) pairs
    params: tuple[tuple[str, Any], ...] = ()

    def search_config(self) -> SearchConfig:
        return SearchConfig(
            search_type=self.search_type,
            fusion=self.fusion,
            bm25_variant=self.bm25_variant,
            rerank=self.rerank,
            as_of=self.as_of,
            include_superseded=self.include_superseded,
            fulltext_weight=self.fulltext_weight,
            bm25_k1=self.bm25_k1,
            bm25_b=self.bm25_b,
            rrf_k=self.rrf_k,
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
                **({"params": dict(self.params)} if self.params else {}),
                **subset,
            }
        data = asdict(self)
        for name in ("target", "target_kind", "max_error_rate", "run_file", "subset", "params"):
            del data[name]
        for name in TUNING_KEYS:
            if data[name] is None:
                del data[name]
        data["rerank"] = self.rerank or False
        data["as_of"] = self.as_of.isoformat().replace("+00:00", "Z") if self.as_of else None
        return {**data, **subset}


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
    raise field_error(
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
        raise field_error("validation-error", prefix, "expected an object.")
    unknown = sorted(set(raw) - CONFIG_KEYS)
    if unknown:
        raise field_error(
            "validation-error", field_path(prefix, unknown[0]), "unknown field.", allowed=sorted(CONFIG_KEYS)
        )
    raw = {key: value for key, value in raw.items() if value is not None}  # null: the default, as if left out
    subset = parse_subset(raw, prefix, base=subset)
    raw = {key: value for key, value in raw.items() if key not in SUBSET_KEYS}
    if "target" in raw:
        return parse_target_config(raw, prefix, subset)
    for key in ("max_error_rate", "params"):
        if key in raw:
            raise field_error("validation-error", field_path(prefix, key), "only with a target.")
    search_type = parse_choice(
        raw.get("search_type", "FullText"),
        field_path(prefix, "search_type"),
        SEARCH_TYPES,
        "unknown-search-type",
    )
    fusion = parse_choice(raw.get("fusion", "Rrf"), field_path(prefix, "fusion"), FUSIONS, "unknown-fusion")
    variant = parse_choice(
        raw.get("bm25_variant", "lucene"), field_path(prefix, "bm25_variant"), VARIANTS, "unknown-variant"
    )
    rerank = resolve_rerank(raw.get("rerank"), field_path(prefix, "rerank"), available_rerankers)
    top_k = raw.get("top_k")
    weight = parse_share(raw.get("fulltext_weight", 0.5), field_path(prefix, "fulltext_weight"))
    label = _label(raw.get("label"), field_path(prefix, "label"))
    config = RunConfig(
        label="",
        search_type=search_type,
        fusion=fusion,
        rerank=rerank,
        bm25_variant=variant,
        top_k=None if top_k in (None, "") else parse_positive_int(top_k, field_path(prefix, "top_k")),
        as_of=parse_instant(raw.get("as_of"), field_path(prefix, "as_of")),
        include_superseded=parse_bool(
            raw.get("include_superseded", False), field_path(prefix, "include_superseded")
        ),
        fulltext_weight=weight,
        subset=subset,
        **_tuning(raw, prefix),
    )
    return RunConfig(**{**config.__dict__, "label": (label or "").strip() or default_label(config)})


def _tuning(raw: Mapping, prefix: str) -> dict:
    """BM25's k1 and b and RRF's k, where the configuration sets them."""
    out: dict = {}
    if raw.get("bm25_k1") is not None:
        out["bm25_k1"] = parse_number(raw["bm25_k1"], field_path(prefix, "bm25_k1"), 0, MAX_BM25_K1)
    if raw.get("bm25_b") is not None:
        out["bm25_b"] = parse_share(raw["bm25_b"], field_path(prefix, "bm25_b"))
    if raw.get("rrf_k") is not None:
        out["rrf_k"] = parse_positive_int(raw["rrf_k"], field_path(prefix, "rrf_k"), maximum=MAX_RRF_K)
    return out


def parse_target_config(raw: Mapping, prefix: str, subset: Subset = EVERY) -> RunConfig:
    """A configuration that evaluates an external target: its name, depth and the share of questions that may
    fail before the run does."""
    for key in sorted(raw):
        if key not in TARGET_KEYS:
            raise field_error(
                "validation-error",
                field_path(prefix, key),
                "not used with a target (the target searches as it is configured).",
                allowed=sorted(TARGET_KEYS),
            )
    name = raw["target"]
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise field_error("validation-error", field_path(prefix, "target"), "expected a target's name.")
    rate = parse_share(
        raw.get("max_error_rate", DEFAULT_MAX_ERROR_RATE), field_path(prefix, "max_error_rate")
    )
    label = _label(raw.get("label"), field_path(prefix, "label"))
    top_k = raw.get("top_k")
    top_k = None if top_k in (None, "") else parse_positive_int(top_k, field_path(prefix, "top_k"))
    params = _target_params(raw.get("params"), field_path(prefix, "params"))
    default = " ".join(
        [
            f"target:{name.strip()}",
            *([f"top_k:{top_k}"] if top_k else []),
            *(f"{key}:{value}" for key, value in params),
            *subset.label_parts(),
        ]
    )
    return RunConfig(
        label=label or default,
        target=name.strip(),
        top_k=top_k,
        max_error_rate=rate,
        subset=subset,
        params=params,
    )


MAX_PARAMS = 50


def _target_params(raw, field: str) -> tuple[tuple[str, Any], ...]:
    """A target configuration's parameters: names to plain values (checked against the target when it is
    looked up: evaluation.targets.services)."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping) or len(raw) > MAX_PARAMS:
        raise field_error(
            "validation-error", field, f"expected an object of at most {MAX_PARAMS} named values."
        )
    out = []
    for key, value in raw.items():
        if not isinstance(key, str) or not key or len(key) > 64:
            raise field_error("validation-error", field, "a parameter's name is 1 to 64 characters.")
        if not isinstance(value, str | int | float | bool) or (isinstance(value, float) and value != value):
            raise field_error("validation-error", field_path(field, key), "expected a plain value.")
        if isinstance(value, str) and len(value) > 1000:
            raise field_error("validation-error", field_path(field, key), "at most 1000 characters.")
        out.append((key, value))
    return tuple(out)


def _label(value, field: str) -> str:
    """A configuration's label as sent, stripped; "" when none is (its default label is made then)."""
    if value is not None and (not isinstance(value, str) or len(value) > MAX_LABEL_CHARS):
        raise field_error(
            "validation-error", field, f"expected a string of at most {MAX_LABEL_CHARS} characters."
        )
    return (value or "").strip()


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
    if config.search_type != "Vector":
        parts += [
            f"{name}:{getattr(config, name):g}"
            for name in ("bm25_k1", "bm25_b")
            if getattr(config, name) is not None
        ]
    if config.search_type == "Hybrid" and config.fusion == "Rrf" and config.rrf_k is not None:
        parts.append(f"rrf_k:{config.rrf_k}")
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
    return parse_config_list(raw, lambda item, i: parse_config(item, i, available_rerankers, subset=subset))


def parse_subset(raw: Mapping, prefix: str = "", base: Subset = EVERY) -> Subset:
    """The subset fields of a request body or a configuration (`tags`, `origin`, `reviewed_only`,
    `skip_unreviewed_generated`; null or absent: `base`'s). Origins are read in any case and stored as
    goldenset names them (Manual, Imported, Generated)."""
    subset = base
    if raw.get("tags") is not None:
        subset = replace(
            subset,
            tags=tuple(string_list(raw["tags"], field_path(prefix, "tags"), maximum=MAX_SUBSET_VALUES)),
        )
    if raw.get("origin") is not None:
        field = field_path(prefix, "origin")
        names = string_list(raw["origin"], field, maximum=len(ORIGINS))
        origins = [
            parse_choice(name, f"{field}[{i}]", ORIGINS, "validation-error") for i, name in enumerate(names)
        ]
        subset = replace(subset, origins=tuple(dict.fromkeys(origins)))
    if raw.get("reviewed_only") is not None:
        subset = replace(
            subset, reviewed_only=parse_bool(raw["reviewed_only"], field_path(prefix, "reviewed_only"))
        )
    if raw.get("skip_unreviewed_generated") is not None:
        field = field_path(prefix, "skip_unreviewed_generated")
        subset = replace(
            subset, skip_unreviewed_generated=parse_bool(raw["skip_unreviewed_generated"], field)
        )
    return subset


class Labelled(Protocol):
    @property
    def label(self) -> str: ...


C = TypeVar("C", bound=Labelled)


def parse_config_list(raw, parse_one: Callable[[object, int], C]) -> list[C]:
    """A request's `configs`: default one FullText configuration; each parsed; labels unique."""
    if raw is None:
        raw = [{"search_type": "FullText"}]
    if not isinstance(raw, list) or not raw:
        raise field_error("validation-error", "configs", "expected a non-empty list of configurations.")
    if len(raw) > MAX_CONFIGS:
        raise field_error("too-many-configs", "configs", f"at most {MAX_CONFIGS} configurations per call.")
    configs = [parse_one(item, i) for i, item in enumerate(raw)]
    seen: dict[str, int] = {}
    for i, config in enumerate(configs):
        if config.label in seen:
            raise field_error(
                "duplicate-label",
                f"configs[{i}].label",
                f"label {config.label!r} repeats configs[{seen[config.label]}]; labels name runs, so each must differ.",
            )
        seen[config.label] = i
    return configs


# Collections one call may search or evaluate together: each is an index to load, so the work is bounded.
MAX_COLLECTIONS_PER_CALL = 50
