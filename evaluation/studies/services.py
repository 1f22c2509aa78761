"""Studies over stored golden sets: created with their job, run by it, saved as presets.

The job (`study_job`): the collection's questions (a retrieval study's have expected documents, an answer study's
are answerable with a reference; those the base's subset admits) split with the seed (evaluation.studies.split);
the trials (evaluation.studies.search) each score the tuning part, with the search core as a retrieval run
scores a question (trec_eval's measures), through an external target (its concurrency and rate limit, its failed
calls counted), or answered and judged as an answer evaluation judges; then the winner and the baseline are
evaluated on the confirmation part as two ordinary runs of one batch, and compared (evaluation.studies.confirm).
The trials are written to the study as they end (evaluation.studies.live: at most every WRITE_EVERY seconds, and at
the end), so the live page follows them; a cancel ends the study after the trial under way, without a confirmation,
and once it is recorded no trial is written."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evalsite.errors import EvalsiteError, NotFound
from evalsite.jobs.models import Job
from evalsite.jobs.services import job_cancelled, job_create
from evalsite.tenancy.models import Tenant
from evaluation.answers.evaluate import answer_scores, evaluate_answers
from evaluation.configs import RunConfig
from evaluation.models import (
    ConfigPreset,
    EvaluationAuditObject,
    EvaluationJobKind,
    QuestionResult,
    Study,
    Target,
)
from evaluation.presets import preset_create, with_preset
from evaluation.request_fields import DEFAULT_KS
from evaluation.retrieval import metrics
from evaluation.retrieval.evaluate import evaluate_retrieval, retrieval_questions
from evaluation.retrieval.read_path import CollectionSearch, available_rerankers
from evaluation.runs.selectors import GoldenQuestion, golden_questions, job_collections
from evaluation.runs.store import questions_in
from evaluation.studies.confirm import confirm
from evaluation.studies.live import Live, write_while_running
from evaluation.studies.reads import dimensions_of, space_notes, study_importance
from evaluation.studies.request import StudyRequest, parse_study_request
from evaluation.studies.search import StudyResult, run_study
from evaluation.studies.space import applied
from evaluation.studies.split import Split, split_questions
from evaluation.targets.callers import TargetError
from evaluation.targets.services import check_config_params, resolve_targets, target_client
from goldenset.models import Collection


def study_create(
    *, tenant: Tenant, collection: Collection, raw: Mapping[str, Any], actor: str, queue: bool = True
) -> Study:
    """A study, checked as far as it can be before it runs (its request, a golden set that splits), and its job
    (`queue`; else the caller runs it, study_execute)."""
    raw = {**raw, **{k: with_preset(tenant, raw[k], k) for k in ("base", "baseline") if k in raw}}
    request = parse_study_request(raw, available_rerankers())
    _split(collection, request)  # a golden set too small to split is the request's 400
    _target(tenant, collection, request)  # a target it names, and the parameters it varies, are the tenant's
    with transaction.atomic():
        study = Study.objects.create(
            tenant=tenant,
            collection=collection,
            request=request.job_input(),
            metric=request.metric,
            created_by=actor,
        )
        audit_record(
            tenant=tenant,
            collection=collection,
            action=AuditAction.CREATE,
            object_type=EvaluationAuditObject.STUDY,
            object_id=study.pk,
            actor=actor,
            changes={"metric": request.metric, "space": sorted(request.space)},
        )
        if queue:
            study.job = job_create(
                tenant=tenant,
                kind=EvaluationJobKind.STUDY,
                collection=collection,
                input={"collection_pks": [collection.pk], "study_id": str(study.pk)},
                actor=actor,
            )
            study.save(update_fields=["job"])
    return study


def _target(tenant: Tenant, collection: Collection, request: StudyRequest) -> Target | None:
    """The external target the study's base names (None: the built-in engine), its varied parameters checked."""
    if request.answers:  # an answer study answers with evalsite's own writer (a target base is refused)
        return None
    targets = resolve_targets(tenant, [collection], [request.base, request.baseline])
    if not request.run.target:
        return None
    target = targets[request.run.target]
    varied = {
        d.name.removeprefix("params."): None for d in request.dimensions if d.name.startswith("params.")
    }
    check_config_params(target, varied, "space.params")
    return target


def _questions(collection: Collection, request: StudyRequest) -> list[GoldenQuestion]:
    """A retrieval study's questions: those with expected documents; an answer study's: the answerable ones
    with a reference answer (what the judged metrics read)."""
    if request.answers:
        everything = [q for q in golden_questions([collection]) if q.answerable and q.reference]
        what = "answerable golden entries with a reference answer"
    else:
        everything, _ = retrieval_questions([collection])
        what = "golden entries with expected documents"
    if not everything:
        raise EvalsiteError(
            "empty-golden-set", f"No {what} in {collection.slug}.", details={"collection_id": collection.slug}
        )
    return questions_in(everything, request.run.subset, [collection])


def split_key(q: GoldenQuestion) -> str:
    """What the split orders a question by: its entry's key where it has one (the same golden set imported into
    another database splits the same), else its entry id."""
    return f"key:{q.key}" if q.key else f"id:{q.entry_id}"


def _split(collection: Collection, request: StudyRequest) -> tuple[Split, list[GoldenQuestion]]:
    """The split, its parts as split keys (split_key), and the questions."""
    questions = _questions(collection, request)
    try:
        split = split_questions(
            [(split_key(q), q.tags) for q in questions], share=request.confirm_share, seed=request.seed
        )
    except ValueError as exc:
        raise EvalsiteError(
            "golden-set-too-small", f"The golden set cannot be split for a study: {exc}.",
            details={"field": "confirm_share", "questions": len(questions)},
        ) from None  # fmt: skip
    return split, questions


def study_job(job: Job, progress) -> dict[str, Any]:
    """The job of a study (see the module's doc)."""
    study = Study.objects.select_related("collection", "tenant").get(pk=job.input["study_id"])
    job_collections(job)  # the collection is still there (else collection-gone)
    return study_execute(study, progress, cancelled=lambda: job_cancelled(job.pk), job=job)


def study_parts(study: Study) -> tuple[StudyRequest, Any, list[GoldenQuestion], frozenset[str], Split]:
    """The study's request, the rerankers at hand, its tuning questions, its confirmation part (entry ids) and
    the split they come from (the same split wherever it is read: it is seeded)."""
    rerankers = available_rerankers()
    request = parse_study_request(study.request, rerankers)
    split, questions = _split(study.collection, request)
    by_key = {split_key(q): q for q in questions}
    tuning = [by_key[key] for key in split.tuning]
    confirmation = frozenset(str(by_key[key].entry_id) for key in split.confirmation)
    return request, rerankers, tuning, confirmation, split


def study_start(study: Study, split: Split) -> None:
    """A run of the study starts over: its split recorded, its trials, winner and confirmation cleared."""
    study.split = {"tuning": len(split.tuning), "confirmation": len(split.confirmation)}
    study.trials, study.best, study.confirmation, study.evaluations = [], None, None, 0
    study.save(update_fields=["split", "trials", "best", "confirmation", "evaluations"])


def study_execute(
    study: Study, progress, *, cancelled=lambda: False, job: Job | None = None
) -> dict[str, Any]:
    """Run a study: its trials, then its confirmation (the job's work; `manage.py study` runs it in place).
    `progress(trials done, trials asked)` after each write; `cancelled()` true ends it after the trial under way."""
    request, rerankers, tuning, confirmation, split = study_parts(study)
    study_start(study, split)
    live = Live(study, job, progress, cancelled, request.budget.trials)
    score, max_error_rate, exhausted = study_scorer(study, request, tuning, rerankers)
    result = run_study(
        request.dimensions, score, len(tuning), budget=request.budget, seed=request.seed,
        sampler=request.sampler, prune=request.prune, on_trial=live.on_trial,
        stop=lambda: live.stop() or exhausted(), max_p95_ms=request.max_p95_ms, max_error_rate=max_error_rate,
    )  # fmt: skip
    live.evaluations = result.evaluations
    if not live.stopped:
        live.write()
    return study_conclude(study, request, rerankers, result, confirmation, job, stopped=live.stopped)


def study_conclude(
    study: Study, request: StudyRequest, rerankers, result: StudyResult, confirmation, job, *, stopped: bool
) -> dict[str, Any]:
    """A study whose trials ended: its winner confirmed against the baseline and recorded (none when it was
    cancelled, or when no trial succeeded: then the job fails with no-trial-succeeded)."""
    best = result.best
    if stopped or best is None:
        Study.objects.filter(pk=study.pk).update(finished_at=timezone.now())
        if best is None and not stopped:
            raise EvalsiteError(
                "no-trial-succeeded",
                "No trial of the study was scored on every tuning question within its constraints; see its trials.",
                details={"study_id": str(study.pk)},
            )
        return study_job_result(Study.objects.get(pk=study.pk))
    winner = request.trial_config(best.values, rerankers)
    study.best = {
        "number": best.number, "values": best.values, "config": winner.as_dict(), "tuning_value": best.value,
    }  # fmt: skip
    study.confirmation = _confirmation(study, request, winner, confirmation, result, job)
    study.finished_at = timezone.now()
    if not write_while_running(
        study, job, best=study.best, confirmation=study.confirmation, finished_at=study.finished_at
    ):  # cancelled during the confirmation: the study ends without it
        Study.objects.filter(pk=study.pk).update(finished_at=study.finished_at)
        return study_job_result(Study.objects.get(pk=study.pk))
    return study_job_result(study)


def study_job_result(study: Study) -> dict[str, Any]:
    """What the job's result holds (its page and GET studies/{id} give the whole study)."""
    return {
        "study_id": str(study.pk), "trials": len(study.trials), "evaluations": study.evaluations,
        "best": study.best, "confirmation": study.confirmation,
    }  # fmt: skip


def _scores(search: CollectionSearch, config: RunConfig, questions: Sequence[GoldenQuestion], request, now):
    """Each question's value of the study's metric (as a retrieval run computes it: the ranking cut at the
    configuration's top_k when it is shallower than the metric) and its search time in ms."""
    values, times = np.empty(len(questions)), np.empty(len(questions))
    ks = [request.depth]
    depth = min(config.top_k or request.depth, request.depth)
    for i, q in enumerate(questions):
        began = time.perf_counter()
        hits = search.rank(q.question, config, depth, at=now)
        times[i] = (time.perf_counter() - began) * 1000
        values[i] = metrics.evaluate_query(hits.keys(qualified=False), q.qrels, ks)[request.metric]
    return values, times


def study_scorer(study: Study, request: StudyRequest, tuning: Sequence[GoldenQuestion], rerankers):
    """(score(values, rows) for run_study, the share of failed questions a trial may have, whether the judge
    budget is spent): the built-in engine's, an external target's, or answers judged."""
    target = _target(study.tenant, study.collection, request)
    search = None if target or request.answers else CollectionSearch([study.collection])
    now = timezone.now()
    calls = [0]  # judge calls the trials made

    def score(values: dict[str, Any], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        config = request.trial_config(values, rerankers)
        questions = [tuning[i] for i in rows]
        if request.answers:
            return _answer_scores(study, config, questions, request, calls)
        if target is not None:
            return _target_scores(target, config, questions, request)
        assert search is not None
        return _scores(search, config, questions, request, now)

    # an answer metric a judge excludes for a question (not applicable, unreadable) leaves it out, never a 0
    max_error_rate = 1.0 if request.answers else request.run.max_error_rate if target else 0.0
    return score, max_error_rate, lambda: request.judge_calls is not None and calls[0] >= request.judge_calls


def _answer_scores(study: Study, config, questions: Sequence[GoldenQuestion], request, calls: list[int]):
    """Each question's judged value of the study's answer metric (NaN: its answer failed, or the judge
    excluded it); the judge calls made are added to `calls`."""
    judged = answer_scores(
        tenant=study.tenant, collection=study.collection, config=config, questions=questions,
        judge_model=request.judge_model,
    )  # fmt: skip
    values = np.full(len(questions), np.nan)
    for i, scores in enumerate(judged):
        if scores is not None:
            calls[0] += sum(score.calls for score in scores.values())
            if scores[request.metric].value is not None:
                values[i] = scores[request.metric].value
    return values, np.full(len(questions), np.nan)


def _target_scores(target: Target, config: RunConfig, questions: Sequence[GoldenQuestion], request):
    """As _scores, through an external target with the trial's parameters: its concurrency and rate limit
    hold (one client per trial), a failed call is NaN (counted by the trial, left out of its mean), the time is
    the call's latency."""
    values, times = np.full(len(questions), np.nan), np.full(len(questions), np.nan)
    depth = min(config.top_k or request.depth, request.depth)
    ks = [request.depth]
    with target_client(target, dict(config.params)) as client:

        def call(i: int) -> None:
            q = questions[i]
            try:
                hits = client.search(q.question, depth, q.key or str(q.entry_id))
            except TargetError as exc:
                times[i] = np.nan if exc.latency_ms is None else exc.latency_ms
                return
            times[i] = hits.latency_ms
            values[i] = metrics.evaluate_query(hits.ids, q.qrels, ks)[request.metric]

        with ThreadPoolExecutor(max_workers=max(1, min(target.concurrency, len(questions)))) as pool:
            list(pool.map(call, range(len(questions))))
    return values, times


def _labelled(config, label: str):
    """A configuration (retrieval or answers) under another label."""
    if isinstance(config, RunConfig):
        return replace(config, label=label)
    return replace(config, run=replace(config.run, label=label))


def _confirmation(study, request: StudyRequest, winner, only: frozenset[str], result, job) -> dict:
    """The baseline and the winner as two runs of one batch over the confirmation part, and their comparison."""
    short = str(study.pk)[:8]
    configs = [
        _labelled(request.baseline, f"study {short} baseline"),
        _labelled(winner, f"study {short} winner"),
    ]
    if request.answers:
        _, runs = evaluate_answers(
            tenant=study.tenant, collections=[study.collection], configs=configs, judge_model=request.judge_model,
            job=job, only=only, actor=study.created_by,
        )  # fmt: skip
    else:
        ks = sorted({*DEFAULT_KS, request.depth})
        _, runs = evaluate_retrieval(
            tenant=study.tenant, collections=[study.collection], ks=ks, configs=configs, job=job, only=only,
            actor=study.created_by,
        )  # fmt: skip
    baseline_run, winner_run = runs
    per_run = {
        run.pk: dict(
            QuestionResult.objects.filter(run=run).order_by("entry_id").values_list("entry_id", "metrics")
        )
        for run in runs
    }
    # the questions both runs scored (a target's failed calls and a judge's exclusions are left out of the means)
    entries = sorted(
        e
        for e in per_run[winner_run.pk]
        if all(per_run[pk].get(e, {}).get(request.metric) is not None for pk in per_run)
    )
    scores = {pk: np.array([per_run[pk][e][request.metric] for e in entries]) for pk in per_run}
    tried = len(
        {tuple(sorted((k, repr(v)) for k, v in t.values.items())) for t in result.trials if not t.error}
    )
    outcome = confirm(
        scores[winner_run.pk], scores[baseline_run.pk], configurations_tried=tried, seed=request.seed
    )
    return {
        "baseline": {
            "run_id": str(baseline_run.pk),
            "value": outcome.baseline,
            "ci": list(outcome.baseline_ci),
        },
        "winner": {"run_id": str(winner_run.pk), "value": outcome.winner, "ci": list(outcome.winner_ci)},
        "difference": outcome.difference,
        "p_value": outcome.p_value,
        "significant": outcome.significant,
        "configurations_tried": outcome.configurations_tried,
        "questions": outcome.questions,
        "verdict": outcome.verdict(request.metric),
    }


def study_detail(study: Study, *, trials: bool = True) -> dict[str, Any]:
    """A study as the API gives it: its state (its job's), trials with the configuration each ran, the best of
    them and the confirmation; with its trials, the notes on fields without effect in some of them and each
    field's importance (evaluation.studies.reads)."""
    job = study.job
    base = study.request["base"]
    detail = {
        "study_id": str(study.pk),
        "collection_id": study.collection.slug,
        "status": job.status if job is not None else _status_in_place(study),
        "job_id": str(job.pk) if job is not None else None,
        "error": job.error if job is not None else study.error,
        "metric": study.metric,
        "request": study.request,
        "split": study.split,
        "evaluations": study.evaluations,
        "best": study.best,
        "confirmation": study.confirmation,
        "created_at": study.created_at,
        "finished_at": study.finished_at,
    }
    if trials:
        detail["trials"] = [{**t, "config": applied(base, t["values"])} for t in study.trials]
        dimensions = dimensions_of(study)
        detail["space_notes"] = space_notes(study, dimensions)
        finished = detail["status"] in Job.FINISHED
        detail["importance"] = study_importance(study, dimensions, finished=finished).as_dict()
    return detail


def _status_in_place(study: Study) -> str:
    """The state of a study run without a job (manage.py study)."""
    if study.error:
        return "Failed"
    return "Completed" if study.finished_at else "Running"


def study_fail(study: Study, error: EvalsiteError) -> None:
    """Record why a study run in place failed (a job records its own)."""
    Study.objects.filter(pk=study.pk).update(error=error.as_dict(), finished_at=timezone.now())


def preset_save(*, study: Study, name: str, actor: str, accept_not_better: bool = False) -> ConfigPreset:
    """The study's winner saved as a named configuration preset of its tenant (a name in use is a 409). A winner
    the confirmation did not show better than the baseline is saved only with `accept_not_better` (else a 409
    `winner-not-better` saying so): it may be no better than what it would replace."""
    if not study.best:
        raise EvalsiteError(
            "study-not-finished", "The study has no confirmed winner to save yet.", status=409,
            details={"study_id": str(study.pk)},
        )  # fmt: skip
    if not winner_shown_better(study) and not accept_not_better:
        raise EvalsiteError(
            "winner-not-better", f"accept_not_better: {not_better_warning(study)} Send accept_not_better: true "
            "to save it all the same.", status=409, details={"field": "accept_not_better", "study_id": str(study.pk)},
        )  # fmt: skip
    return preset_create(
        tenant=study.tenant,
        name=name,
        config=study.best["config"],
        actor=actor,
        collection=study.collection,
        study=study,
    )


def winner_shown_better(study: Study) -> bool:
    """Whether the confirmation called the winner better than the baseline (ahead, p < 0.05)."""
    return bool((study.confirmation or {}).get("significant"))


def not_better_warning(study: Study) -> str:
    """What saving a winner not shown better risks, in a sentence (the page, the API's refusal and the command)."""
    if not study.confirmation:
        return (
            "The winner was never confirmed on the held-out questions: it may be no better than the baseline."
        )
    return (
        "The winner was not shown better than the baseline on the held-out questions "
        f"(p = {study.confirmation['p_value']:.3g}): saved, it may be no better than the baseline, or worse."
    )


def study_get(*, tenant: Tenant, study_id: str) -> Study:
    """The tenant's study, or a 404 (another tenant's is not found either)."""
    try:
        pk = uuid.UUID(str(study_id))
    except ValueError:
        raise NotFound("Study", study_id) from None
    study = Study.objects.select_related("collection", "job").filter(tenant=tenant, pk=pk).first()
    if study is None:
        raise NotFound("Study", study_id)
    return study


def study_list(*, tenant: Tenant, collection: Collection | None = None):
    """The tenant's studies (of one collection), newest first, without their trials (a list reads many)."""
    studies = Study.objects.select_related("collection", "job").filter(tenant=tenant).defer("trials")
    return studies.filter(collection=collection) if collection is not None else studies


def study_row(study: Study) -> dict[str, Any]:
    """A study as a list shows it: as study_detail gives it, without its trials."""
    return study_detail(study, trials=False)
