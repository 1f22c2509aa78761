"""Which fields of a study's space have no effect, in which of its trials. Plain Python: no Django import.

A configuration field matters only under some settings of others (evaluation.retrieval.search.engine):
- `fusion` merges Hybrid's two lists: only with `search_type` Hybrid;
- `fulltext_weight` is Weighted fusion's share of the full-text list: only with Hybrid and `fusion` Weighted;
- `rrf_k` is RRF's rank constant: only with Hybrid and `fusion` Rrf;
- `bm25_k1` and `bm25_b` are BM25's: only with `search_type` FullText or Hybrid (a Vector search reads no BM25);
- `bm25_variant` likewise, or with a reranker (the proximity reranker reads BM25's postings);
- `top_k` cuts the ranking a retrieval metric reads: a value at or above the metric's depth (10 for ndcg@10) cuts
  nothing, so a top_k whose every value is at least the depth changes nothing (an answer study's top_k is the
  passages an answer is written from: it always matters).
`search_type`, `rerank`, an answer's `groundedness` and `model` and a target's `params.NAME` always matter.

The settings a field depends on are the base's, or, where the space varies them too, each of their choices: a
trial's settings are one of those combinations. A field that matters in none of them wastes every trial spent on it:
the request is refused (`space.<field>`, saying what it needs). A field that matters in some only (fulltext_weight
with fusion varied between Rrf and Weighted) is allowed, and said: in the other trials its value is ignored, and its
importance is read over trials where it could not matter.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.studies.space import Dimension

CONTROLS = ("search_type", "fusion", "rerank")  # the fields the others depend on: each a choice
DEFAULTS = {"search_type": "FullText", "fusion": "Rrf", "rerank": False}


@dataclass(frozen=True)
class _Rule:
    matters: Callable[[Mapping[str, Any]], bool]
    when: str  # when it matters, in words
    reads: tuple[str, ...]  # the controls `matters` reads


def _hybrid(config: Mapping[str, Any]) -> bool:
    return config["search_type"] == "Hybrid"


def _bm25(config: Mapping[str, Any]) -> bool:
    return config["search_type"] in ("FullText", "Hybrid")


RULES: dict[str, _Rule] = {
    "fusion": _Rule(_hybrid, "search_type is Hybrid", ("search_type",)),
    "fulltext_weight": _Rule(
        lambda c: _hybrid(c) and c["fusion"] == "Weighted",
        "search_type is Hybrid and fusion is Weighted",
        ("search_type", "fusion"),
    ),
    "rrf_k": _Rule(
        lambda c: _hybrid(c) and c["fusion"] == "Rrf",
        "search_type is Hybrid and fusion is Rrf",
        ("search_type", "fusion"),
    ),
    "bm25_k1": _Rule(_bm25, "search_type is FullText or Hybrid", ("search_type",)),
    "bm25_b": _Rule(_bm25, "search_type is FullText or Hybrid", ("search_type",)),
    "bm25_variant": _Rule(
        lambda c: _bm25(c) or bool(c["rerank"]),
        "search_type is FullText or Hybrid, or a reranker runs",
        ("search_type", "rerank"),
    ),
}


@dataclass(frozen=True)
class Inert:
    """A varied field without effect in every trial (`always`), or in some of them."""

    field: str  # space.NAME
    always: bool
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "always": self.always, "message": self.message}


def _word(value: Any) -> str:
    return "on" if value is True else "off" if value in (False, None) else str(value)


def _settings(base: Mapping[str, Any], dimensions: Sequence[Dimension]) -> list[dict[str, Any]]:
    """Every combination of the controls' values the trials can have: the base's, or the space's choices."""
    values: dict[str, list[Any]] = {
        name: [base.get(name) if base.get(name) is not None else DEFAULTS[name]] for name in CONTROLS
    }
    for dimension in dimensions:
        if dimension.name in CONTROLS and dimension.choices is not None:
            values[dimension.name] = list(dimension.choices)
    return [
        dict(zip(CONTROLS, combination, strict=True)) for combination in itertools.product(*values.values())
    ]


def _what_trials_have(rule: _Rule, settings: Sequence[Mapping[str, Any]], varied: set[str]) -> str:
    parts = []
    for name in rule.reads:
        seen = list(dict.fromkeys(_word(s[name]) for s in settings))
        origin = "" if name in varied else " (the base's)"
        parts.append(f"{name} {' or '.join(seen)}{origin}")
    return "; ".join(parts)


def inert_fields(base: Mapping[str, Any], dimensions: Sequence[Dimension], depth: int | None) -> list[Inert]:
    """The varied fields without effect in all or some of the trials (see the module's doc), in the space's order.
    `base` is the base configuration as a request sends it; `depth` the retrieval metric's (None: an answer
    study, whose top_k always matters)."""
    settings = _settings(base, dimensions)
    varied = {d.name for d in dimensions}
    found = []
    for dimension in dimensions:
        name = dimension.name
        rule = RULES.get(name)
        if rule is not None:
            live = sum(1 for s in settings if rule.matters(s))
            if live == 0:
                found.append(Inert(
                    f"space.{name}", True,
                    f"has no effect in any trial: it matters only when {rule.when}, and the trials have "
                    f"{_what_trials_have(rule, settings, varied)}. Set that in the base, or vary it too",
                ))  # fmt: skip
            elif live < len(settings):
                found.append(Inert(
                    f"space.{name}", False,
                    f"has an effect only when {rule.when}: in the other trials its value is ignored, and its "
                    "importance is read over trials where it could not matter",
                ))  # fmt: skip
        if name == "top_k" and depth is not None and _at_least(dimension, depth):
            found.append(Inert(
                f"space.{name}", True,
                f"has no effect in any trial: the metric reads the top {depth}, and every top_k asked is {depth} "
                f"or more. Vary it below {depth}, or pick a deeper metric",
            ))  # fmt: skip
    return found


def _at_least(dimension: Dimension, depth: int) -> bool:
    if dimension.choices is not None:
        return all(isinstance(v, int | float) and v >= depth for v in dimension.choices)
    return dimension.low >= depth
