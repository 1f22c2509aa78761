"""A study's search space: the fields of a configuration it varies, each over a list of choices or a numeric range.
Plain Python: no Django import.

`space` maps a field to its values, as the API takes it:
- a list of choices: `{"fusion": ["Rrf", "Weighted"], "rerank": [false, true]}` (under a Hybrid base: a field
  that would do nothing under the base, fusion under FullText say, is refused: evaluation.studies.inert);
- a range of a numeric field: `{"fulltext_weight": {"low": 0.1, "high": 0.9, "step": 0.1}}`, `"log": true` for a
  scale where ratios matter (`{"bm25_k1": {"low": 0.5, "high": 3, "log": true}}`; not with a step).
A field is one of FIELDS (their values checked against what the configuration accepts), or `params.NAME`, a named
parameter an external target substitutes into its request (an Elasticsearch boost): choices of plain values or a
numeric range. Everything is bounded before a trial runs: at most MAX_DIMENSIONS fields, MAX_CHOICES choices a
field, MAX_GRID points when a grid is asked for. A problem is a `validation-error` naming `space.<field>`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalsite.errors import EvalsiteError

MAX_DIMENSIONS = 12
MAX_CHOICES = 100
MAX_GRID = 10_000
MAX_TEXT = 1000  # a target parameter's text choice


def _shown(value: Any) -> str:
    """A value as an error names it: its repr, cut to 60 characters (a tenant's input may be any size)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


PARAM = re.compile(r"^params\.([A-Za-z_][A-Za-z0-9_]{0,63})$")


@dataclass(frozen=True)
class Field:
    """What one configuration field may hold: choices, or numbers in [low, high] (integers when `integer`)."""

    choices: tuple[Any, ...] | None = None
    low: float = -math.inf
    high: float = math.inf
    integer: bool = False


FIELDS: dict[str, Field] = {
    "search_type": Field(choices=("FullText", "Vector", "Hybrid")),
    "fusion": Field(choices=("Rrf", "Weighted")),
    "bm25_variant": Field(choices=("lucene", "okapi")),
    "rerank": Field(choices=(False, True)),
    "fulltext_weight": Field(low=0.0, high=1.0),
    "top_k": Field(low=1, high=1000, integer=True),
    "bm25_k1": Field(low=0.0, high=10.0),
    "bm25_b": Field(low=0.0, high=1.0),
    "rrf_k": Field(low=1, high=10_000, integer=True),
    # an answer configuration's (evaluation.answers.configs): a study whose metric is an answer metric
    "groundedness": Field(choices=("Off", "Low", "Medium", "High")),
    "model": Field(low=0, high=0),  # a chat model's name: choices of text only
}
ANSWER_FIELDS = ("groundedness", "model")
_TARGET_PARAM = Field()  # a target's parameter: any plain value, or any finite range


@dataclass(frozen=True)
class Dimension:
    """One field a study varies: over `choices`, else over [low, high] (by `step`, or on a log scale)."""

    name: str
    choices: tuple[Any, ...] | None = None
    low: float = 0.0
    high: float = 0.0
    step: float | None = None
    log: bool = False
    integer: bool = False

    def points(self) -> list[Any]:
        """Every value a grid tries: the choices, or low, low + step, ... up to high (a range needs a step)."""
        if self.choices is not None:
            return list(self.choices)
        if self.step is None:
            raise _problem(self.name, "a grid needs a step for a range (or a list of choices)")
        count = int(math.floor((self.high - self.low) / self.step + 1e-9)) + 1
        values = [self.low + i * self.step for i in range(count)]
        return [int(round(v)) if self.integer else round(v, 12) for v in values]


def _problem(name: str, message: str) -> EvalsiteError:
    name = name if len(name) <= 60 else name[:57] + "..."  # a field a tenant named may be any length
    return EvalsiteError("validation-error", f"space.{name}: {message}.", details={"field": f"space.{name}"})


def parse_space(raw: Any) -> tuple[Dimension, ...]:
    """The dimensions of a space as the API takes it (see the module's doc), checked; in the order given."""
    if not isinstance(raw, Mapping) or not raw:
        raise EvalsiteError(
            "validation-error",
            "space: expected an object mapping configuration fields to their values (at least one).",
            details={"field": "space"},
        )
    if len(raw) > MAX_DIMENSIONS:
        raise EvalsiteError(
            "validation-error",
            f"space: at most {MAX_DIMENSIONS} fields (it has {len(raw)}).",
            details={"field": "space"},
        )
    return tuple(_dimension(str(name), value) for name, value in raw.items())


def _field(name: str) -> Field:
    if name in FIELDS:
        return FIELDS[name]
    if PARAM.match(name):
        return _TARGET_PARAM
    known = ", ".join(FIELDS)
    raise _problem(name, f"not a field a study varies; one of {known}, or params.NAME (a target's parameter)")


def _dimension(name: str, value: Any) -> Dimension:
    field = _field(name)
    if isinstance(value, list):
        return Dimension(name, choices=_choices(name, field, value), integer=field.integer)
    if isinstance(value, Mapping):
        return _range(name, field, value)
    raise _problem(name, "expected a list of choices or a range {low, high, step, log}")


def _choices(name: str, field: Field, values: Sequence[Any]) -> tuple[Any, ...]:
    if not values or len(values) > MAX_CHOICES:
        raise _problem(name, f"expected 1 to {MAX_CHOICES} choices (it has {len(values)})")
    out: list[Any] = []
    seen: set[tuple[bool, Any]] = set()  # True and 1 are different choices; 1 and 1.0 the same
    for value in values:
        if field.choices is not None:
            if value not in field.choices or isinstance(value, bool) != isinstance(field.choices[0], bool):
                raise _problem(name, f"{_shown(value)} is not one of {', '.join(map(repr, field.choices))}")
        elif field is FIELDS["model"]:
            if not isinstance(value, str) or not value.strip() or len(value) > 300:
                raise _problem(name, f"{_shown(value)} is not a model's name (text of 1 to 300 characters)")
        elif field is _TARGET_PARAM:
            if not isinstance(value, str | int | float | bool) or (
                isinstance(value, float) and not math.isfinite(value)
            ):
                raise _problem(name, f"{_shown(value)} is not a plain value (text, number, true or false)")
            if isinstance(value, str) and len(value) > MAX_TEXT:
                raise _problem(name, f"a choice of {len(value):,} characters; at most {MAX_TEXT}")
        else:
            _number(name, field, value)
        if (isinstance(value, bool), value) in seen:
            raise _problem(name, f"{_shown(value)} is listed twice")
        seen.add((isinstance(value, bool), value))
        out.append(value)
    return tuple(out)


def _number(name: str, field: Field, value: Any, what: str = "a choice") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _problem(name, f"{what} {_shown(value)} is not a number")
    if field.integer and value != int(value):
        raise _problem(name, f"{what} {_shown(value)} is not a whole number")
    if not field.low <= value <= field.high:
        raise _problem(name, f"{what} {_shown(value)} is outside {field.low:g} to {field.high:g}")
    return float(value)


def _range(name: str, field: Field, value: Mapping[str, Any]) -> Dimension:
    if field is FIELDS["model"]:
        raise _problem(name, "takes a list of models' names, not a range")
    if field.choices is not None:
        raise _problem(name, f"takes a list of choices ({', '.join(map(repr, field.choices))}), not a range")
    unknown = set(value) - {"low", "high", "step", "log"}
    if unknown:
        raise _problem(name, f"unknown key {sorted(unknown)[0]!r} of a range (low, high, step, log)")
    if "low" not in value or "high" not in value:
        raise _problem(name, "a range needs low and high")
    low, high = _number(name, field, value["low"], "low"), _number(name, field, value["high"], "high")
    if low >= high:
        raise _problem(name, f"low ({low:g}) must be below high ({high:g})")
    integer = field.integer or (
        field is _TARGET_PARAM and all(isinstance(value[k], int) for k in ("low", "high"))
    )
    log = value.get("log", False)
    if not isinstance(log, bool):
        raise _problem(name, "log: expected true or false")
    step = value.get("step")
    if step is not None:
        step = _number(name, Field(low=0.0, integer=integer), step, "step")
        if step <= 0 or step > high - low:
            raise _problem(name, f"step {step:g} must be above 0 and at most high - low")
        if log:
            raise _problem(name, "a range on a log scale has no step")
    if log and low <= 0:
        raise _problem(name, "a range on a log scale needs low above 0")
    return Dimension(name, low=low, high=high, step=step, log=log, integer=integer)


def grid(dimensions: Sequence[Dimension]) -> list[dict[str, Any]]:
    """Every combination of the dimensions' points, in order (at most MAX_GRID)."""
    points = [d.points() for d in dimensions]
    size = math.prod(len(p) for p in points)
    if size > MAX_GRID:
        raise EvalsiteError(
            "validation-error",
            f"space: a grid of {size:,} points; at most {MAX_GRID:,}.",
            details={"field": "space"},
        )
    names = [d.name for d in dimensions]
    return [dict(zip(names, combination, strict=True)) for combination in itertools.product(*points)]


def applied(base: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The base configuration with a trial's values: a field replaced, `params.NAME` set in its `params`."""
    config = dict(base)
    params = dict(config.get("params") or {})
    for name, value in values.items():
        found = PARAM.match(name)
        if found:
            params[found.group(1)] = value
        else:
            config[name] = value
    if params:
        config["params"] = params
    return config
