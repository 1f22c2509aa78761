"""A study's trials: configurations proposed by an Optuna sampler, each scored on the tuning questions only.
Plain Python (numpy, Optuna): no Django import.

The caller gives an objective, `score(values, questions) -> per-question scores` (the trial's field values and the
indexes of the tuning questions to score), and a budget: trials, seconds, or both. Samplers: `tpe` (Optuna's
default, seeded), `random`, `grid` (every point of the space, in a seeded order, at most the budget's trials).

With `prune`, a trial is scored on growing samples of the tuning questions (RUNGS: a quarter, a half, all of a
seeded order of them), reporting its mean after each, and Optuna's successive-halving pruner stops the trials that
trail their peers at a rung, so weak configurations cost a quarter or a half of the questions. A pruned trial's
value is its last rung's mean, marked `pruned`; the best trial is chosen among trials scored on every question.

A sampler may propose values it proposed before (a grid of choices, TPE late in a study): the questions already
scored for them are not scored again. `evaluations` counts the question scorings the study paid for.

`score` may also return the search time of each question (ms), as `(scores, milliseconds)`: a trial records the
95th percentile, and with `max_p95_ms` a trial above it is `infeasible` and cannot be the best. A question whose
score is NaN failed (an external target's error): it is left out of the trial's mean and counted in `errors`;
a trial with more than `max_error_rate` of its questions failed is itself failed, and cannot be the best.
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
Score = Callable[[dict[str, Any], np.ndarray], np.ndarray | tuple[np.ndarray, np.ndarray]]


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
    p95_ms: float | None = None  # the 95th percentile of its questions' search times, when score gives them
    infeasible: bool = False  # above the study's max_p95_ms: it cannot be the best
    errors: int = 0  # questions that failed (NaN scores): left out of its value

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number, "values": self.values, "value": self.value, "pruned": self.pruned,
            "questions": self.questions, "seconds": round(self.seconds, 4), "error": self.error,
            "p95_ms": None if self.p95_ms is None else round(self.p95_ms, 3), "infeasible": self.infeasible,
            "errors": self.errors,
        }  # fmt: skip


@dataclass
class StudyResult:
    trials: list[TrialResult] = field(default_factory=list)
    evaluations: int = 0  # question scorings paid for, over every trial

    @property
    def best(self) -> TrialResult | None:
        """The complete, feasible trial with the highest value (the earliest of equals), or None."""
        complete = [t for t in self.trials if t.value is not None and not t.pruned and not t.infeasible]
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
    value = trial.suggest_float(
        dimension.name, dimension.low, dimension.high, step=dimension.step, log=dimension.log
    )
    return round(value, 10) if dimension.step is not None else value  # 0.7, not 0.7000000000000001


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
    max_p95_ms: float | None = None,
    max_error_rate: float = 0.0,
) -> StudyResult:
    """The trials of a study over `questions` tuning questions (see the module's doc). `on_trial` is told of each
    trial as it ends; `stop()` returning true ends the study after the current trial (a cancelled job)."""
    if questions < 1:
        raise ValueError("a study needs at least one tuning question")
    trials = min(budget.trials, MAX_TRIALS, len(grid(dimensions)) if sampler == "grid" else MAX_TRIALS)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rungs = RUNGS if prune else (1.0,)
    pruner = (
        optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=2, min_early_stopping_rate=0)
        if prune
        else optuna.pruners.NopPruner()
    )
    study = optuna.create_study(
        direction="maximize", sampler=_sampler(sampler, dimensions, seed), pruner=pruner
    )
    objective = _Objective(
        dimensions=dimensions,
        score=score,
        questions=questions,
        order=np.random.default_rng(seed).permutation(questions),
        sizes=sorted({max(1, math.ceil(r * questions)) for r in rungs}),
        on_trial=on_trial,
        stop=stop,
        max_p95_ms=max_p95_ms,
        max_error_rate=max_error_rate,
    )
    study.optimize(objective, n_trials=trials, timeout=budget.seconds, catch=())
    return objective.result


@dataclass
class _Objective:
    """One trial: its values proposed, scored on the rungs' growing samples (pruned where the pruner says),
    recorded, told."""

    dimensions: Sequence[Dimension]
    score: Score
    questions: int
    order: np.ndarray  # the seeded order of the tuning questions the rungs take their samples from
    sizes: list[int]  # the rungs' sample sizes, the last one every question
    on_trial: Callable[[TrialResult], None] | None
    stop: Callable[[], bool] | None
    max_p95_ms: float | None
    max_error_rate: float
    result: StudyResult = field(default_factory=StudyResult)
    # values -> scores and times of order[:n] so far: values proposed again are not scored again
    seen: dict[tuple, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def scored(self, values: dict[str, Any], size: int) -> tuple[np.ndarray, np.ndarray]:
        """The scores and times of the first `size` questions of the order, scoring only those not yet scored."""
        key = tuple(sorted((name, repr(value)) for name, value in values.items()))
        scores, times = self.seen.get(key, (np.empty(0), np.empty(0)))
        if scores.size < size:
            new = self.score(values, self.order[scores.size : size])
            new_scores, new_times = new if isinstance(new, tuple) else (new, np.full(len(new), np.nan))
            self.result.evaluations += size - scores.size
            scores = np.concatenate([scores, np.asarray(new_scores, dtype=float)])
            times = np.concatenate([times, np.asarray(new_times, dtype=float)])
            self.seen[key] = (scores, times)
        return scores[:size], times[:size]

    def __call__(self, trial: optuna.Trial) -> float:
        started = time.monotonic()
        values = {d.name: _suggest(trial, d) for d in self.dimensions}
        scores = times = np.empty(0)
        pruned, error = False, ""
        try:
            for step, size in enumerate(self.sizes):
                scores, times = self.scored(values, size)
                if size < self.questions and not np.isnan(scores).all():
                    trial.report(float(np.nanmean(scores)), step)
                    if trial.should_prune():
                        pruned = True
                        break
        except Exception as exc:  # a trial that fails is recorded, and the study goes on
            error = f"{type(exc).__name__}: {exc}"
        failed = int(np.isnan(scores).sum())
        if not error and scores.size and failed == scores.size:
            error = "no question could be scored (every one failed or was excluded)"
        elif not error and failed and failed > self.max_error_rate * scores.size:
            error = f"{failed} of {scores.size} questions failed (more than {self.max_error_rate:.0%})"
        value = float(np.nanmean(scores)) if scores.size and not error else None
        timed = times[~np.isnan(times)]
        p95 = float(np.percentile(timed, 95)) if timed.size and not np.isnan(times).all() else None
        limit = self.max_p95_ms
        finished = TrialResult(
            trial.number, values, value, pruned, int(scores.size), time.monotonic() - started, error, p95,
            infeasible=limit is not None and p95 is not None and p95 > limit, errors=failed,
        )  # fmt: skip
        if limit is not None:  # TPE proposes from the trials within the limit (<= 0: within it)
            trial.set_constraint("p95_ms", 0.0 if p95 is None else p95 - limit)
        self.result.trials.append(finished)
        if self.on_trial is not None:
            self.on_trial(finished)
        if self.stop is not None and self.stop():
            trial.study.stop()
        if pruned:
            raise optuna.TrialPruned()
        return float("nan") if value is None else value  # nan: Optuna records the trial as failed
