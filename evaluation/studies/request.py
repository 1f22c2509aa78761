"""What a study is asked, read strictly. Plain Python: no Django import.

`{base, space, metric, budget, seed, confirm_share, sampler, prune, baseline, max_p95_ms}`:
- `base`: a configuration as /search/evaluate takes it (evaluation.configs); every trial is `base` with the
  space's values applied; a base naming an external target varies its `top_k` and `params.NAME` only (the
  parameters its request template takes, evaluation.targets.callers);
- `space`: the fields varied (evaluation.studies.space); every value is checked against the configuration's own
  rules before anything runs, so a trial never fails on a value the request could have been refused for, and a
  field that has no effect in any trial (evaluation.studies.inert: fulltext_weight under Rrf fusion) is refused;
- `metric`: what is maximised, `ndcg@K`, `recall@K`, `ndcg_cond@K`, `mrr` (within the top 10), `bpref` or
  `map_cond` (over the top 100: the measures for incomplete judgments); default `ndcg@10`; or one of
  the judged answer metrics (faithfulness, context_recall, ...): the base is then an answer configuration
  (evaluation.answers.configs, its `groundedness` and `model` in the space too), judged as answer evaluations
  judge (`judge_model`, else the configured chat model, else the heuristic judge), `budget.judge_calls`
  bounding the judge calls of the trials;
- `budget`: `{trials, seconds}`, at most MAX_TRIALS trials and MAX_SECONDS seconds; default 50 trials;
- `seed`: the split, the sampler and the question order of the pruner; default 0;
- `confirm_share`: the share of the golden set kept for the confirmation; default 0.5;
- `sampler`: `tpe` (default), `random` or `grid`; `prune`: stop weak trials on a sample of the tuning questions
  (default true; not with `grid`, which tries every point whole);
- `baseline`: the configuration the winner must beat on the confirmation part; default `base`;
- `max_p95_ms`: a latency constraint: a trial whose 95th percentile search time is above it cannot win.
Every problem is a `validation-error` naming its field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalsite.errors import EvalsiteError
from evaluation.answers.configs import parse_answer_config
from evaluation.configs import RunConfig, parse_config
from evaluation.request_fields import field_error, parse_bool, parse_choice, parse_number, parse_positive_int
from evaluation.studies.inert import inert_fields
from evaluation.studies.search import MAX_TRIALS, SAMPLERS, Budget
from evaluation.studies.space import ANSWER_FIELDS, Dimension, applied, grid, parse_space
from goldenset.vocabulary.metric_names import (
    BPREF,
    JUDGED_METRICS,
    MAP_COND,
    MRR,
    NDCG,
    NDCG_COND,
    RECALL,
    at_k,
)

KEYS = (
    "base", "space", "metric", "budget", "seed", "confirm_share", "sampler", "prune", "baseline", "max_p95_ms",
    "judge_model",
)  # fmt: skip
CUT_METRICS = (NDCG, RECALL, NDCG_COND)  # maximised at a cutoff K: ndcg@K
# How deep the metrics without a cutoff search: MRR within the top 10 (as "MRR@10" is reported); bpref and MAP
# over the condensed list read the whole ranking, to 100
UNCUT_DEPTH = {MRR: 10, BPREF: 100, MAP_COND: 100}
MAX_CUTOFF = 1000
METRIC = re.compile(rf"^({'|'.join(CUT_METRICS)})@([0-9]{{1,4}})$|^({'|'.join(UNCUT_DEPTH)})$")
DEFAULT_METRIC = at_k(NDCG, 10)
# Every metric a study maximises, as the API, the form, the command's --help and docs/evaluation.md name them
STUDY_METRICS = (*(f"{name}@K" for name in CUT_METRICS), *UNCUT_DEPTH, *JUDGED_METRICS)
METRICS_TEXT = (
    f"{', '.join(STUDY_METRICS[: len(CUT_METRICS)])} (K from 1 to {MAX_CUTOFF:,}; default {DEFAULT_METRIC}), "
    f"{MRR} (within the top {UNCUT_DEPTH[MRR]}), {BPREF} or {MAP_COND} (over the top {UNCUT_DEPTH[BPREF]}); or an "
    f"answer metric, each question answered and judged: {', '.join(JUDGED_METRICS)}"
)
MAX_SECONDS = 3600.0
MAX_SEED = 2**31 - 1
DEFAULT_TRIALS = 50
TARGET_FIELDS = ("top_k",)  # what a study of an external target varies besides its params.NAME


@dataclass(frozen=True)
class StudyRequest:
    base: Any  # RunConfig; AnswerConfig when the metric is an answer metric
    dimensions: tuple[Dimension, ...]
    space: dict[str, Any]  # as sent (what the job stores and the API echoes)
    metric: str
    budget: Budget
    seed: int
    confirm_share: float
    sampler: str
    prune: bool
    baseline: Any
    max_p95_ms: float | None = None
    judge_model: str | None = None  # an answer study's judge (None: the heuristic judge)
    judge_calls: int | None = None  # the judge calls its trials may ask for at most

    @property
    def answers(self) -> bool:
        """A study of answer configurations: its metric is one of the judged answer metrics."""
        return self.metric in JUDGED_METRICS

    @property
    def run(self) -> RunConfig:
        """How the base retrieves (an answer configuration's retrieval)."""
        return self.base.run if self.answers else self.base

    @property
    def depth(self) -> int:
        """How deep a trial searches: the metric's cutoff."""
        return metric_depth(self.metric) or 10

    def trial_config(self, values: Mapping[str, Any], available_rerankers: Sequence[str]) -> Any:
        """The configuration a trial runs: the base with the trial's values, checked as a request's would be."""
        return _config(applied(self.base.request(), values), available_rerankers, "base", self.answers)

    def job_input(self) -> dict[str, Any]:
        return {
            "base": self.base.request(),
            "space": self.space,
            "metric": self.metric,
            "budget": {
                "trials": self.budget.trials,
                "seconds": self.budget.seconds,
                "judge_calls": self.judge_calls,
            },
            "seed": self.seed,
            "confirm_share": self.confirm_share,
            "sampler": self.sampler,
            "prune": self.prune,
            "baseline": self.baseline.request(),
            "max_p95_ms": self.max_p95_ms,
            "judge_model": self.judge_model,
        }


def metric_depth(metric: str) -> int | None:
    """How deep a retrieval metric reads the ranking (its cutoff), or None for an answer metric."""
    found = METRIC.match(metric)
    if found and found.group(2):
        return int(found.group(2))
    return UNCUT_DEPTH.get(metric)


def _config(raw: Any, available_rerankers: Sequence[str], prefix: str, answers: bool) -> Any:
    if answers:
        return parse_answer_config(raw, 0, available_rerankers, prefix=prefix)
    return parse_config(raw, 0, available_rerankers, prefix=prefix)


def parse_study_request(raw: Any, available_rerankers: Sequence[str]) -> StudyRequest:
    """A study request's fields (see the module's doc), or the validation-error of the first bad one."""
    if not isinstance(raw, Mapping):
        raise EvalsiteError("validation-error", "Expected a JSON object.")
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise field_error("validation-error", unknown[0], "unknown field.", allowed=sorted(KEYS))
    if raw.get("base") is None:
        raise field_error("validation-error", "base", "a study needs a base configuration.")
    metric = _metric(raw.get("metric"))
    answers = metric in JUDGED_METRICS
    base = _config(raw["base"], available_rerankers, "base", answers)
    run = base.run if answers else base
    if answers and run.target:
        raise field_error(
            "validation-error",
            "base.target",
            "an answer study tunes evalsite's own answering, not a target's.",
        )
    dimensions = parse_space(raw.get("space"))
    _check_fields(dimensions, run, answers)
    sampler = parse_choice(raw.get("sampler") or "tpe", "sampler", SAMPLERS, "validation-error")
    prune = parse_bool(raw.get("prune", sampler != "grid"), "prune")
    if prune and sampler == "grid":
        raise field_error("validation-error", "prune", "a grid tries every point on every question.")
    request = StudyRequest(
        base=base,
        dimensions=dimensions,
        space=dict(raw["space"]),
        metric=metric,
        budget=_budget(raw.get("budget")),
        seed=0 if raw.get("seed") is None else _seed(raw["seed"]),
        confirm_share=_share(raw.get("confirm_share")),
        sampler=sampler,
        prune=prune,
        baseline=(
            base
            if raw.get("baseline") is None
            else _config(raw["baseline"], available_rerankers, "baseline", answers)
        ),
        max_p95_ms=(
            None
            if raw.get("max_p95_ms") is None
            else parse_number(raw["max_p95_ms"], "max_p95_ms", 0.001, 1e6)
        ),
        judge_model=_judge_model(raw.get("judge_model"), answers),
        judge_calls=_judge_calls(raw.get("budget"), answers),
    )
    if sampler == "grid":
        grid(dimensions)  # bounded: a grid too large is refused now
    _check_values(request, available_rerankers)
    for inert in inert_fields(base.request(), dimensions, metric_depth(metric)):
        if inert.always:  # a field no trial can move wastes the budget spent on it
            raise field_error("validation-error", inert.field, f"{inert.message}.")
    return request


def _check_fields(dimensions: Sequence[Dimension], run: RunConfig, answers: bool) -> None:
    """The fields a study of this kind may vary: a target's top_k and params.NAME; an answer configuration's
    fields only in an answer study; a target's parameters only with a target."""
    for dimension in dimensions:
        name = dimension.name
        if run.target and name not in TARGET_FIELDS and not name.startswith("params."):
            raise field_error(
                "validation-error", f"space.{name}",
                "a target searches as it is configured: a study of one varies top_k or its params.NAME.",
            )  # fmt: skip
        if not run.target and name.startswith("params."):
            raise field_error(
                "validation-error", f"space.{name}", "a target's parameter: the base names no target."
            )
        if name in ANSWER_FIELDS and not answers:
            raise field_error(
                "validation-error", f"space.{name}",
                f"an answer configuration's field: the metric must be an answer metric ({', '.join(JUDGED_METRICS)}).",
            )  # fmt: skip


def _judge_model(value: Any, answers: bool) -> str | None:
    if value is None:
        return None
    if not answers:
        raise field_error("validation-error", "judge_model", "only with an answer metric.")
    if not isinstance(value, str) or not value.strip() or len(value) > 300:
        raise field_error("validation-error", "judge_model", "expected a model's name.")
    return value.strip()


def _judge_calls(budget: Any, answers: bool) -> int | None:
    value = budget.get("judge_calls") if isinstance(budget, Mapping) else None
    if value is None:
        return None
    if not answers:
        raise field_error("validation-error", "budget.judge_calls", "only with an answer metric.")
    return parse_positive_int(value, "budget.judge_calls", maximum=10_000_000)


def _check_values(request: StudyRequest, available_rerankers: Sequence[str]) -> None:
    """Each value of each dimension, applied alone to the base, is a configuration the engine takes."""
    for dimension in request.dimensions:
        values = dimension.choices if dimension.choices is not None else (dimension.low, dimension.high)
        for value in values:
            if dimension.integer and dimension.choices is None:
                value = int(value)
            try:
                request.trial_config({dimension.name: value}, available_rerankers)
            except EvalsiteError as exc:
                raise field_error(
                    exc.code,
                    f"space.{dimension.name}",
                    f"{value!r} is refused by the configuration: {exc.message}",
                ) from None


def _metric(value: Any) -> str:
    if value is None:
        return DEFAULT_METRIC
    text = value.strip().lower() if isinstance(value, str) else ""
    if text in JUDGED_METRICS:
        return text
    found = METRIC.match(text)
    if not found or (found.group(2) and not 1 <= int(found.group(2)) <= MAX_CUTOFF):
        raise field_error("validation-error", "metric", f"expected {METRICS_TEXT}.")
    return text


def _budget(value: Any) -> Budget:
    if value is None:
        return Budget(trials=DEFAULT_TRIALS)
    if not isinstance(value, Mapping) or set(value) - {"trials", "seconds", "judge_calls"}:
        raise field_error("validation-error", "budget", "expected {trials, seconds, judge_calls}.")
    trials = value.get("trials")
    seconds = value.get("seconds")
    return Budget(
        trials=DEFAULT_TRIALS
        if trials is None
        else parse_positive_int(trials, "budget.trials", maximum=MAX_TRIALS),
        seconds=None if seconds is None else parse_number(seconds, "budget.seconds", 1, MAX_SECONDS),
    )


def _seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise field_error("validation-error", "seed", f"expected an integer from 0 to {MAX_SEED}.")
    return value


def _share(value: Any) -> float:
    if value is None:
        return 0.5
    share = parse_number(value, "confirm_share", 0, 1)
    if not 0.05 <= share <= 0.95 or math.isnan(share):
        raise field_error("validation-error", "confirm_share", "expected a share from 0.05 to 0.95.")
    return share
