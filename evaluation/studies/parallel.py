"""A study's trials run at once on every worker of every machine (evalsite.jobs.fan_out), through Optuna's RDB
storage in the deployment's PostgreSQL.

The Study job (`study_job`) spreads when it can: on PostgreSQL, with two or more live workers, for a study of
the built-in engine. It starts the study over (evaluation.studies.services.study_start), creates the Optuna study
in the storage (schema `optuna` of the deployment's database, beside evalsite's tables), and spreads one child
job (StudyTrials) per live worker, at most one per trial. Each child (`trials_job`) runs the trials it can take
(evaluation.studies.search.run_study with `shared`: the budget holds across them, a dead worker's trial is failed
once Optuna's heartbeat is stale and run again, counted once) and writes every counted trial to the study as they
end, so the live page follows all of them. Once every child completed, the gather (`study_gather`) reads the
trials back, confirms the winner as a serial study does (study_conclude) and removes the Optuna study; its result
says how many trials were run again after their worker died (`retried`).

Elsewhere the study runs in its one job, serially, as before: on SQLite (one writer at a time: Optuna's
storage there would queue the workers behind each other's writes, and a study would run no faster), with a single
live worker, and for a study through an external target or of answers (a target's concurrency and a judge's
call budget are promises per study, which several workers at once would break).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import optuna
from django.conf import settings
from django.db import connection
from optuna.exceptions import ExperimentalWarning
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.trial import TrialState
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError

from evalsite.jobs.fan_out import workers_alive
from evalsite.jobs.kinds import Child, FanOut
from evalsite.jobs.models import Job
from evalsite.jobs.processes import identity
from evalsite.jobs.services import job_cancelled
from evaluation.models import EvaluationJobKind, Study
from evaluation.runs.selectors import job_collections
from evaluation.studies import services
from evaluation.studies.live import Live, write_while_running
from evaluation.studies.search import Shared, run_study, shared_result, study_trials

# Optuna's heartbeat and its retry of stale trials are marked experimental (since 2.8 and 2.9); they are what a
# study spread over workers relies on, and their warnings would fill every worker's log.
warnings.filterwarnings("ignore", category=ExperimentalWarning)

SCHEMA = "optuna"  # the PostgreSQL schema Optuna's tables live in, beside evalsite's
RETRIES = 3  # times a trial left by a dead worker is run again
# Seconds between a worker's writes of the study's trials: each reads every trial of the shared study back, so
# less often than a study in one job writes its own (evaluation.studies.live.WRITE_EVERY).
SHARED_WRITE_EVERY = 2.0
PREFIX = "evalsite-study-"  # an Optuna study's name: this prefix and the Study's id
_storages: dict[tuple, RDBStorage] = {}


def shared_storage() -> RDBStorage | None:
    """Optuna's storage in this deployment's PostgreSQL (one per process), or None on SQLite."""
    db = connection.settings_dict
    if db["ENGINE"] != "django.db.backends.postgresql":
        return None
    url = URL.create(
        "postgresql+psycopg",
        username=db.get("USER") or None,
        password=db.get("PASSWORD") or None,
        host=db.get("HOST") or "127.0.0.1",
        port=int(db["PORT"]) if db.get("PORT") else None,
        database=db["NAME"],
    ).render_as_string(hide_password=False)
    key = (url, os.getpid())  # a worker process forked from another opens connections of its own
    if key not in _storages:
        _storages[key] = RDBStorage(
            url,
            engine_kwargs={"connect_args": {"options": f"-c search_path={SCHEMA}"}, "pool_pre_ping": True},
            heartbeat_interval=settings.EVALSITE_JOB_HEARTBEAT_SECONDS,
            grace_period=settings.EVALSITE_JOB_STALE_SECONDS,
            heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=RETRIES),
        )
    return _storages[key]


def _fail_stale(study: optuna.Study) -> None:
    """Optuna's fail_stale_trials, and the same for a trial whose process died before its heartbeat's first
    beat (between Optuna creating it and starting its heartbeat thread): Optuna never fails such a trial, and
    the trials after it would wait for it for ever. Found by their start, a grace period old, with no beat."""
    optuna.storages.fail_stale_trials(study)
    storage = shared_storage()
    assert storage is not None
    grace = timedelta(seconds=settings.EVALSITE_JOB_STALE_SECONDS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.trial_id, t.datetime_start FROM {SCHEMA}.trials t JOIN {SCHEMA}.studies s USING (study_id)"
            f" WHERE s.study_name = %s AND t.state = 'RUNNING' AND NOT EXISTS"
            f" (SELECT 1 FROM {SCHEMA}.trial_heartbeats h WHERE h.trial_id = t.trial_id)",
            [study.study_name],
        )
        silent = [
            trial_id for trial_id, begun in cursor.fetchall() if begun and datetime.now() - begun > grace
        ]
    retry = storage.get_heartbeat_stale_trial_callback()
    for trial_id in silent:
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            if storage.set_trial_state_values(trial_id, state=TrialState.FAIL) and retry is not None:
                retry(study, storage.get_trial(trial_id))


def _sweep(storage: RDBStorage) -> None:
    """Remove the Optuna studies of studies whose job ended without a gather (cancelled or failed): their trials
    are the Study's already."""
    names = [
        s.study_name.removeprefix(PREFIX)
        for s in storage.get_all_studies()
        if s.study_name.startswith(PREFIX)
    ]
    for pk in Study.objects.filter(pk__in=names, job__status__in=Job.FINISHED).values_list("pk", flat=True):
        with contextlib.suppress(KeyError, SQLAlchemyError):
            optuna.delete_study(study_name=f"{PREFIX}{pk}", storage=storage)


def _optuna_name(study: Study) -> str:
    return f"{PREFIX}{study.pk}"


def study_job(job: Job, progress) -> dict[str, Any] | FanOut:
    """The Study job: its trials spread over the workers where they can be (see the module's doc), else the
    whole study run here (evaluation.studies.services.study_job)."""
    study = Study.objects.select_related("collection", "tenant").get(pk=job.input["study_id"])
    job_collections(job)  # the collection is still there (else collection-gone)
    request, _, _, _, split = services.study_parts(study)
    workers = workers_alive()
    if request.answers or request.run.target or workers < 2 or connection.vendor != "postgresql":
        return services.study_job(job, progress)
    with connection.cursor() as cursor:  # once, before any child: Optuna creates its tables in it
        cursor.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    storage = shared_storage()
    assert storage is not None
    name = _optuna_name(study)
    with contextlib.suppress(KeyError):  # a spread run again (its worker died before its commit) starts over
        optuna.delete_study(study_name=name, storage=storage)
    _sweep(storage)
    optuna.create_study(study_name=name, storage=storage, direction="maximize")
    services.study_start(study, split)
    trials = study_trials(request.dimensions, request.budget, request.sampler)
    parts = max(1, min(workers, trials))
    share = math.ceil(trials / parts)
    spec = {"collection_pks": job.input["collection_pks"], "study_id": str(study.pk), "started": time.time()}
    return FanOut(
        tuple(
            Child(EvaluationJobKind.STUDY_TRIALS, {**spec, "share": share}, total=share) for _ in range(parts)
        )
    )


@dataclass
class _SharedLive(Live):
    """Live, writing every counted trial of the shared study (not only this worker's), and this worker's share
    as its progress (its parent's progress sums its children's)."""

    shared: Shared | None = None
    share: int = 0

    def write(self) -> bool:
        assert self.shared is not None
        self.written = time.monotonic()
        result = shared_result(self.shared)
        trials = [t.as_dict() for t in result.trials]
        if not write_while_running(self.study, self.job, trials=trials, evaluations=result.evaluations):
            self.stopped = True
            return False
        self.progress(min(len(self.trials), self.share), self.share)
        return True


def trials_job(job: Job, progress) -> dict[str, Any]:
    """A child: the trials this worker takes of the shared study (see the module's doc)."""
    study = Study.objects.select_related("collection", "tenant").get(pk=job.input["study_id"])
    request, rerankers, tuning, _, _ = services.study_parts(study)
    shared = Shared(
        shared_storage(), _optuna_name(study), job.input["started"], fail_stale=_fail_stale, owner=identity()
    )
    share = job.input["share"]
    live = _SharedLive(
        study,
        job,
        progress,
        lambda: job_cancelled(job.pk),
        share,
        shared=shared,
        share=share,
        every=SHARED_WRITE_EVERY,
    )
    score, max_error_rate, exhausted = services.study_scorer(study, request, tuning, rerankers)
    result = run_study(
        request.dimensions, score, len(tuning), budget=request.budget, seed=request.seed,
        sampler=request.sampler, prune=request.prune, on_trial=live.on_trial,
        stop=lambda: live.stop() or exhausted(), max_p95_ms=request.max_p95_ms, max_error_rate=max_error_rate,
        shared=shared,
    )  # fmt: skip
    if not live.stopped:
        live.write()
    return {"trials": len(result.trials), "evaluations": result.evaluations}


def study_gather(job: Job, children: list[Job], progress) -> dict[str, Any]:
    """Every child completed: the study's trials read back, its winner confirmed (see the module's doc)."""
    study = Study.objects.select_related("collection", "tenant").get(pk=job.input["study_id"])
    request, rerankers, _, confirmation, _ = services.study_parts(study)
    storage = shared_storage()
    assert storage is not None
    shared = Shared(storage, _optuna_name(study), started=children[0].input["started"])
    try:
        result = shared_result(shared)
    except KeyError:  # a gather run again after it had concluded and removed the Optuna study
        return services.study_job_result(Study.objects.get(pk=study.pk))
    trials = [t.as_dict() for t in result.trials]
    if not write_while_running(study, job, trials=trials, evaluations=result.evaluations):
        return services.study_job_result(Study.objects.get(pk=study.pk))
    outcome = services.study_conclude(study, request, rerankers, result, confirmation, job, stopped=False)
    with contextlib.suppress(KeyError, SQLAlchemyError):  # the study is done: its trials are the Study's now
        optuna.delete_study(study_name=shared.name, storage=storage)
    return {**outcome, "retried": result.retried}
