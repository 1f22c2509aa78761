"""A study's trials: configurations proposed by an Optuna sampler, each scored on the tuning questions only.
Plain Python (numpy, Optuna): no Django import.

The caller gives an objective, `score(values, questions) -> per-question scores` (the trial's field values and the
indexes of the tuning questions to score), and a budget: trials, seconds, or both. Samplers: `tpe` (Optuna's
default, seeded), `random`, `grid` (every point of the space, in a seeded order, at most the budget's trials).

With `prune`, a trial is scored on growing samples of the tuning questions (RUNGS: a quarter, a half, all of a
seeded order of them), reporting its mean after each, and Optuna's successive-halving pruner stops the trials that
trail their peers at a rung, so weak configurations cost a quarter or a half of the questions. A pruned trial's
value is its last rung's mean, marked `pruned`; the best trial is chosen among trials scored on every question.
`evaluations` counts the question scorings the study paid for.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna

from evaluation.studies.space import Dimension, grid

SAMPLERS = ("tpe", "random", "grid")
RUNGS = (0.25, 0.5, 1.0)
MAX_TRIALS = 2000
Score = Callable[[dict[str, Any], np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Budget:
    trials: int = 50
    seconds: float | None = None


@dataclass(frozen=True)
class TrialResult:
    number: int
    values: dict[str, Any]
    value: float | None  # the mean over the questions it was scored on (None: it failed)
    pruned: bool
    questions: int  # how many tuning questions it was scored on
    seconds: float
    error: str = ""


@dataclass
class StudyResult:
    trials: list[TrialResult] = field(default_factory=list)
    evaluations: int = 0  # question scorings paid for, over every trial

    @property
    def best(self) -> TrialResult | None:
        """The complete trial with the highest value (the earliest of equals), or None."""
        complete = [t for t in self.trials if t.value is not None and not t.pruned]
        return max(complete, key=lambda t: (t.value, -t.number)) if complete else None


def _suggest(trial: optuna.Trial, dimension: Dimension) -> Any:
    if dimension.choices is not None:
        index = trial.suggest_categorical(dimension.name, list(range(len(dimension.choices))))
        return dimension.choices[index]
    if dimension.integer:
        step = int(dimension.step or 1)
        return trial.suggest_int(
            dimension.name, int(dimension.low), int(dimension.high), step=step, log=dimension.log
        )
    return trial.suggest_float(
        dimension.name, dimension.low, dimension.high, step=dimension.step, log=dimension.log
    )


def _sampler(name: str, dimensions: Sequence[Dimension], seed: int) -> optuna.samplers.BaseSampler:
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":
        points: dict[str, list[Any]] = {}
        for dimension in dimensions:  # a choice is asked for by its index, as _suggest does
            values = dimension.points()
            points[dimension.name] = list(range(len(values))) if dimension.choices is not None else values
        return optuna.samplers.GridSampler(points, seed=seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    raise ValueError(f"unknown sampler {name!r}; one of {', '.join(SAMPLERS)}")


def run_study(
    dimensions: Sequence[Dimension],
    score: Score,
    questions: int,
    *,
    budget: Budget,
    seed: int,
    sampler: str = "tpe",
    prune: bool = False,
    on_trial: Callable[[TrialResult], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> StudyResult:
    """The trials of a study over `questions` tuning questions (see the module's doc). `on_trial` is told of each
    trial as it ends; `stop()` returning true ends the study after the current trial (a cancelled job)."""
    if questions < 1:
        raise ValueError("a study needs at least one tuning question")
    trials = min(budget.trials, MAX_TRIALS, len(grid(dimensions)) if sampler == "grid" else MAX_TRIALS)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    order = np.random.default_rng(seed).permutation(questions)
    rungs = RUNGS if prune else (1.0,)
    sizes = sorted({max(1, math.ceil(r * questions)) for r in rungs})
    pruner = (
        optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=2, min_early_stopping_rate=0)
        if prune
        else optuna.pruners.NopPruner()
    )
    study = optuna.create_study(
        direction="maximize", sampler=_sampler(sampler, dimensions, seed), pruner=pruner
    )
    result = StudyResult()

    def objective(trial: optuna.Trial) -> float:
        started = time.monotonic()
        values = {d.name: _suggest(trial, d) for d in dimensions}
        scores = np.empty(0)
        pruned, error = False, ""
        try:
            for step, size in enumerate(sizes):
                new = score(values, order[scores.size : size])
                result.evaluations += size - scores.size
                scores = np.concatenate([scores, np.asarray(new, dtype=float)])
                if size < questions:
                    trial.report(float(scores.mean()), step)
                    if trial.should_prune():
                        pruned = True
                        break
        except Exception as exc:  # a trial that fails is recorded, and the study goes on
            error = f"{type(exc).__name__}: {exc}"
        value = float(scores.mean()) if scores.size and not error else None
        finished = TrialResult(
            trial.number, values, value, pruned, int(scores.size), time.monotonic() - started, error
        )
        result.trials.append(finished)
        if on_trial is not None:
            on_trial(finished)
        if stop is not None and stop():
            trial.study.stop()
        if pruned:
            raise optuna.TrialPruned()
        if value is None:
            return float("nan")  # Optuna records the trial as failed
        return value

    study.optimize(objective, n_trials=trials, timeout=budget.seconds, catch=())
    return result
