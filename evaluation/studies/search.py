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

With `shared` (evaluation.studies.parallel), the study's trials live in a storage several processes share (Optuna's
RDBStorage): each process calls run_study on it, and the trials run at once, each process taking the next. The
budget holds across them (`_Gate`): a trial runs only while fewer than the budget's trials were counted or are
running before it (in trial order), so the study ends with exactly the budget's trials; a trial a dead process
left running is failed once its heartbeat is stale and run again with the same values (Optuna's
RetryHeartbeatStaleTrialCallback), and counted once (`counted_trials`). A grid's trial n runs the grid's point n
whichever process runs it, so a grid study gives the same trials serial or spread.

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
from optuna.trial import FrozenTrial, TrialState

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
    retried: int = 0  # a shared study's trials run again after their process died (counted once)

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


class _SharedGrid(optuna.samplers.GridSampler):
    """The grid sampler of a shared study: it proposes as the grid sampler does (trial n, the grid's point n), but
    leaves the study's end to the budget's gate, without reading every trial after each one as it would."""

    def after_trial(self, study, trial, state, values) -> None:  # noqa: ANN001  (the sampler's signature)
        return None


def _sampler(
    name: str, dimensions: Sequence[Dimension], seed: int, shared: bool = False
) -> optuna.samplers.BaseSampler:
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":
        points: dict[str, list[Any]] = {}
        for dimension in dimensions:  # a choice is asked for by its index, as _suggest does
            values = dimension.points()
            points[dimension.name] = list(range(len(values))) if dimension.choices is not None else values
        return (_SharedGrid if shared else optuna.samplers.GridSampler)(points, seed=seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    raise ValueError(f"unknown sampler {name!r}; one of {', '.join(SAMPLERS)}")


@dataclass(frozen=True)
class Shared:
    """A study whose trials several processes run (see the module's doc): its storage (an Optuna RDBStorage with
    a heartbeat), its name there, and when it started (time.time(): a budget in seconds counts from it)."""

    storage: Any
    name: str
    started: float
    wait: float = 0.2  # seconds between looks while earlier trials decide whether this one runs
    # fails the trials whose process is gone (default: Optuna's fail_stale_trials, by their heartbeats)
    fail_stale: Callable[[optuna.Study], None] = optuna.storages.fail_stale_trials
    owner: str = ""  # which process runs this part, recorded with each trial it runs ("owner")


def _pruner(prune: bool) -> optuna.pruners.BasePruner:
    if prune:
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=1, reduction_factor=2, min_early_stopping_rate=0
        )
    return optuna.pruners.NopPruner()


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
    shared: Shared | None = None,
) -> StudyResult:
    """The trials of a study over `questions` tuning questions (see the module's doc). `on_trial` is told of each
    trial as it ends; `stop()` returning true ends the study after the current trial (a cancelled job). With
    `shared`, the trials this process ran of a study several run (shared_result reads them all)."""
    if questions < 1:
        raise ValueError("a study needs at least one tuning question")
    trials = study_trials(dimensions, budget, sampler)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rungs = RUNGS if prune else (1.0,)
    study = optuna.create_study(
        direction="maximize",
        sampler=_sampler(sampler, dimensions, seed, shared=shared is not None),
        pruner=_pruner(prune),
        storage=shared.storage if shared else None,
        study_name=shared.name if shared else None,
        load_if_exists=shared is not None,
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
        gate=None if shared is None else _Gate(trials, shared.wait, stop, shared.fail_stale, shared.owner),
    )
    if shared is None:
        study.optimize(objective, n_trials=trials, timeout=budget.seconds, catch=())
        return objective.result
    left = None if budget.seconds is None else budget.seconds - (time.time() - shared.started)
    if left is None or left > 0:
        study.optimize(objective, n_trials=None, timeout=left, catch=())
    return objective.result


def study_trials(dimensions: Sequence[Dimension], budget: Budget, sampler: str) -> int:
    """How many trials a study runs: its budget's, at most MAX_TRIALS, and a grid's points at most."""
    return min(budget.trials, MAX_TRIALS, len(grid(dimensions)) if sampler == "grid" else MAX_TRIALS)


def _key(trial: FrozenTrial) -> int:
    """A trial's place in the study's order: a retry takes the place of the trial it runs again."""
    return int(trial.system_attrs.get("failed_trial", trial.number))


def counted_trials(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """The trials a shared study counts, by number: those its objective finished (complete, pruned, or failed
    with an error of its own), never one that a dead process left (failed as stale and run again) nor a trial
    that found the budget spent."""
    retried = {n for t in trials for n in t.system_attrs.get("retry_history", ())}
    counted = []
    for t in sorted(trials, key=lambda t: t.number):
        result = t.user_attrs.get("result")
        if t.number in retried or result is None or t.user_attrs.get("surplus"):
            continue
        if t.state in (TrialState.COMPLETE, TrialState.PRUNED) or (
            t.state == TrialState.FAIL and result.get("error")
        ):
            counted.append(t)
    return counted


def shared_result(shared: Shared) -> StudyResult:
    """Every counted trial of a shared study, and the question scorings they paid for."""
    trials = optuna.load_study(study_name=shared.name, storage=shared.storage).get_trials(deepcopy=False)
    counted = counted_trials(trials)
    return StudyResult(
        trials=[
            TrialResult(**{k: v for k, v in t.user_attrs["result"].items() if k != "paid"}) for t in counted
        ],
        evaluations=sum(int((t.user_attrs.get("result") or {}).get("paid", 0)) for t in trials),
        retried=sum("failed_trial" in t.system_attrs for t in counted),
    )


@dataclass
class _Gate:
    """Whether a trial of a shared study runs (see the module's doc): "run"; "stop" (the budget is spent, or the
    study stopped); "yield" (a trial to run again waits before it: this one ends, its values queued again, and
    the process takes that one)."""

    trials: int
    wait: float
    stop: Callable[[], bool] | None
    fail_stale: Callable[[optuna.Study], None]
    owner: str = ""

    def decide(self, trial: optuna.Trial, attrs: dict[str, Any]) -> str:
        """`attrs`: the trial's system attributes."""
        # Fast: at most one counted or running trial per place, so a trial placed within the budget runs (the
        # full look below reads every trial, and would cost each trial more the longer the study).
        if int(attrs.get("failed_trial", trial.number)) < self.trials and not (self.stop and self.stop()):
            return "run"
        study = trial.study
        while True:
            if self.stop is not None and self.stop():
                return "stop"
            self.fail_stale(study)
            trials = study.get_trials(deepcopy=False)
            me = next(t for t in trials if t.number == trial.number)
            before = [t for t in trials if _key(t) < _key(me) and t.number != me.number]
            counted = {t.number for t in counted_trials(trials)}
            done = sum(t.number in counted for t in before)
            if done >= self.trials:
                return "stop"
            if any(t.state == TrialState.WAITING for t in before):
                return "yield"
            if done + sum(t.state == TrialState.RUNNING for t in before) < self.trials:
                return "run"
            time.sleep(self.wait)


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
    gate: _Gate | None = None
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
        # a shared study's trial: its system attributes (no public reader of a live trial's)
        attrs = {} if self.gate is None else trial.storage.get_trial_system_attrs(trial._trial_id)
        decision = "run" if self.gate is None else self.gate.decide(trial, attrs)
        if decision != "run":  # a shared study's trial that does not run: not counted, never told
            trial.set_user_attr("surplus", True)
            if decision == "yield":
                trial.study.enqueue_trial(dict(trial.params))
            else:
                trial.study.stop()
            return float("nan")
        if "failed_trial" in attrs and trial.user_attrs.get("surplus"):  # its process died as it gave way
            trial.set_user_attr("surplus", False)
        if self.gate is not None and self.gate.owner:
            trial.set_user_attr("owner", self.gate.owner)
        paid = self.result.evaluations
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
        if self.gate is not None:  # what shared_result reads back
            trial.set_user_attr("result", {**finished.as_dict(), "paid": self.result.evaluations - paid})
        self.result.trials.append(finished)
        if self.on_trial is not None:
            self.on_trial(finished)
        if self.stop is not None and self.stop():
            trial.study.stop()
        if pruned:
            raise optuna.TrialPruned()
        return float("nan") if value is None else value  # nan: Optuna records the trial as failed
