"""How much each varied field mattered to a study's value: Optuna's PED-ANOVA over the trials as stored.
Plain Python (Optuna): no Django import.

PED-ANOVA (Watanabe et al., 2023; Optuna's default evaluator) measures how differently each field is
distributed among the best trials (the top 10% by value) than among all of them: a field whose good values
are narrow matters, one the best trials spread over as all trials do does not. It is a closed-form estimate
(no forest to fit, nor a seed): milliseconds over a thousand trials, where fANOVA took seconds and needs
scikit-learn.

The trials are the study's stored dicts (`{"values", "value", "pruned", "error", ...}`, as search.TrialResult
writes them). They are put back into an in-memory Optuna study with the distributions search._suggest asked for
(a list of choices by the index of the choice, a range as an int or float range with its step and log scale), so
the evaluator sees what the sampler saw. Only trials scored on every tuning question count: a pruned trial's value is
a sample's mean, a failed one has none. A latency-infeasible trial keeps its value: how good it was is real.

`importances` returns `{field: share}` (summing to 1, largest first), or None with `reason` saying why there is
nothing to show: too few complete trials, a single field varied, or values that do not differ. Over MAX_TRIALS
complete trials it is computed on a seeded sample of MAX_TRIALS of them.

It is withheld below MIN_TRIALS complete trials. PED-ANOVA reads the best TARGET_QUANTILE of them (ceil(0.1 n)
trials), and Optuna's documentation advises at least MIN_TOP = 5 trials there: MIN_TRIALS = 41 is the fewest with
five (ceil(0.1 x 41) = 5). Fewer than that and which field it names is largely chance. Measured (200 seeded random
samples of two fields, bm25_k1 on a parabola and bm25_b without effect, the value's noise 0.01 / 0.03): from 12
complete trials it named bm25_b first in 24% / 40% of them, at 70% or more in 16% / 28%; from 41, 2% / 8% and
1% / 2%; from 100, 0% / 1%.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances
from optuna.trial import TrialState, create_trial

from evaluation.studies.space import Dimension

TARGET_QUANTILE = (
    0.1  # PED-ANOVA's best share of the trials (Optuna's default, set here so MIN_TRIALS follows it)
)
MIN_TOP = 5  # trials the best share needs at least (Optuna's PedAnovaImportanceEvaluator advises five)
MIN_TRIALS = (
    41  # the fewest complete trials whose best tenth holds MIN_TOP (ceil(0.1 x 41) = 5): below, withheld
)
MAX_TRIALS = 2000  # above this many complete trials, a seeded sample of them (a study has at most 2,000)


@dataclass(frozen=True)
class Importance:
    """`shares`: field -> its share of the value's variance (largest first), or None with `reason`."""

    shares: dict[str, float] | None
    reason: str = ""
    trials: int = 0  # the complete trials it was computed over
    complete: int = 0  # the complete trials there were (more than `trials` when a sample was taken)

    def as_dict(self) -> dict[str, Any]:
        """As the API gives it: the shares (null when withheld), the trials they rest on, the minimum, and why."""
        return {
            "shares": self.shares, "trials": self.trials, "complete": max(self.complete, self.trials),
            "minimum_trials": MIN_TRIALS, "note": self.reason,
        }  # fmt: skip


def distribution(dimension: Dimension) -> BaseDistribution:
    """The distribution search._suggest asks a field's value from (a choice by its index)."""
    if dimension.choices is not None:
        return CategoricalDistribution(list(range(len(dimension.choices))))
    if dimension.integer:
        return IntDistribution(
            int(dimension.low), int(dimension.high), step=int(dimension.step or 1), log=dimension.log
        )
    return FloatDistribution(dimension.low, dimension.high, step=dimension.step, log=dimension.log)


def _choice_index(dimension: Dimension, value: Any) -> int | None:
    """The index of a stored value among the dimension's choices (True is not 1 there), or None."""
    assert dimension.choices is not None
    for index, choice in enumerate(dimension.choices):
        if isinstance(choice, bool) == isinstance(value, bool) and choice == value:
            return index
    return None


def _params(dimensions: Sequence[Dimension], values: Mapping[str, Any]) -> dict[str, Any] | None:
    """A stored trial's values as Optuna's params (a choice's index), or None when one is missing or foreign."""
    params: dict[str, Any] = {}
    for dimension in dimensions:
        if dimension.name not in values:
            return None
        value = values[dimension.name]
        if dimension.choices is not None:
            value = _choice_index(dimension, value)
            if value is None:
                return None
        elif isinstance(value, bool) or not isinstance(value, int | float):
            return None
        params[dimension.name] = value
    return params


def complete(trials: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The trials scored on every tuning question: a value, not pruned, no error."""
    return [
        t
        for t in trials
        if t.get("value") is not None
        and not t.get("pruned")
        and not t.get("error")
        and math.isfinite(float(t["value"]))
    ]


def importances(
    dimensions: Sequence[Dimension], trials: Sequence[Mapping[str, Any]], *, seed: int = 0
) -> Importance:
    """Each varied field's PED-ANOVA importance over the complete trials (see the module's doc)."""
    done = complete(trials)
    total = len(done)
    if len(done) > MAX_TRIALS:
        keep = sorted(np.random.default_rng(seed).choice(len(done), size=MAX_TRIALS, replace=False))
        done = [done[i] for i in keep]
    if len(dimensions) < 2:
        reason = (
            "One field is varied: all of the difference is its own." if dimensions else "No field is varied."
        )
        return Importance(None, reason, len(done), total)
    if len(done) < MIN_TRIALS:
        return Importance(None, _too_few(len(done)), len(done), total)
    distributions = {d.name: distribution(d) for d in dimensions}
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no line per in-memory study in the server's log
    study = optuna.create_study(direction="maximize")
    added = 0
    for trial in done:
        params = _params(dimensions, trial.get("values") or {})
        if params is None:
            continue
        try:
            frozen = create_trial(
                state=TrialState.COMPLETE, value=float(trial["value"]), params=params,
                distributions=distributions,
            )  # fmt: skip
        except ValueError:  # a value outside its distribution (a study asked before its space changed)
            continue
        study.add_trial(frozen)
        added += 1
    if added < MIN_TRIALS:
        return Importance(None, _too_few(added, " comparable"), added, total)
    if len({float(t.value) for t in study.trials if t.value is not None}) < 2:
        return Importance(
            None, "Every complete trial scored the same: no field made a difference.", added, total
        )
    evaluator = PedAnovaImportanceEvaluator(target_quantile=TARGET_QUANTILE)
    shares = get_param_importances(study, evaluator=evaluator, params=[d.name for d in dimensions])
    if not all(math.isfinite(v) for v in shares.values()):
        return Importance(None, "The trials do not tell the fields apart.", added, total)
    top = math.ceil(TARGET_QUANTILE * added)
    note = f"From {added} trials scored on every tuning question (the best {top} of them against all)."
    return Importance({name: float(v) for name, v in shares.items()}, note, added, total)


def _too_few(count: int, kind: str = "") -> str:
    """Why importance is withheld below MIN_TRIALS (see the module's doc)."""
    return (
        f"Importance is withheld below {MIN_TRIALS}{kind} trials scored on every tuning question ({count} so far): "
        f"it compares the best tenth of them with all, and with fewer than {MIN_TOP} in that tenth which field it "
        "names is largely chance."
    )
