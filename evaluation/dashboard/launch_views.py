"""Launching an evaluation from the dashboard, and any job's progress page, its poll and its cancel button.

A finished Evaluate job's page opens its results; a Generate job's page is its results (what the quality gate
kept and discarded), so it stays. Both the page and the poll first mark the tenant's stale jobs Failed."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError
from evalsite.jobs.models import Job, JobStatus
from evalsite.jobs.services import job_cancel, jobs_recover
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.answers.configs import parse_answer_configs
from evaluation.answers.evaluate import AnswerRequest
from evaluation.answers.judge_votes import parse_judge_sampling
from evaluation.configs import parse_configs, parse_subset
from evaluation.dashboard.common_views import tenant_page, tenant_poll
from evaluation.dashboard.forms import (
    ANSWER_LAUNCH_PRESETS,
    LAUNCH_PRESETS,
    AnswerConfigFormSet,
    AnswerLaunchForm,
    ConfigFormSet,
    LaunchForm,
    RunFileForm,
)
from evaluation.dashboard.golden_reads import generate_report
from evaluation.dashboard.launch_reads import (
    answer_launch_collections,
    job_error_message,
    job_result_batch,
    job_result_runs,
    launch_collections,
    retrieval_presets,
)
from evaluation.models import EvaluationJobKind
from evaluation.presets import with_presets
from evaluation.reports.batch_jobs import batch_job_create
from evaluation.request_fields import DEFAULT_KS_TEXT, parse_ks
from evaluation.retrieval.evaluate import evaluate_run_file
from evaluation.retrieval.read_path import available_rerankers
from evaluation.retrieval.request import RetrievalRequest
from evaluation.retrieval.run_files import parse_run_file
from evaluation.runs.slices import Subset
from evaluation.targets.kinds import ANSWER_KINDS, RETRIEVAL_KINDS
from evaluation.targets.services import target_names
from goldenset import selectors as golden_selectors
from goldenset.models import Collection, GoldenJobKind

POLL_MS = 500


# --- launching an evaluation: one page and one set of checks for both kinds ------------------------------------

_CONFIG_FIELD = re.compile(r"^configs\[(\d+)\](?:\.(\w+))?")


@dataclass(frozen=True)
class _Launcher:
    """What differs between the two launchers (retrieval and answer evaluation): the page, the forms and the
    checks are the same, and validate a launch as the API validates the request."""

    template: str
    form_class: type[LaunchForm] | type[AnswerLaunchForm]
    formset_class: Any
    presets: list[dict[str, Any]]
    collections: Callable[[Tenant], list[tuple[str, str, int]]]  # (slug, label, golden questions)
    parse_configs: Callable[[Any, list[str], Subset], list]
    no_questions: str  # the error when the chosen collections have nothing to evaluate
    create: Callable[..., Job]  # (tenant, form, collections, configs, actor) -> the job
    form_kwargs: Callable[[], dict[str, Any]] = dict
    formset_kwargs: Callable[[Tenant], dict[str, Any]] = lambda tenant: {}
    initial: Callable[[], dict[str, Any]] = dict
    context: Callable[[], dict[str, Any]] = dict
    # Fields read before the configurations (retrieval's ks): False when one put an error on the form.
    prepare: Callable[[Any], bool] = lambda form: True
    has_questions: Callable[[Any, dict[str, int]], bool] = lambda form, counts: True
    # The tenant's presets a row may evaluate, by name (None: the launcher has no preset field).
    saved_presets: Callable[[Tenant, list[str]], list[str] | None] = lambda tenant, rerankers: None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def retrieval_collections(tenant: Tenant) -> list[tuple[str, str, int]]:
    return [
        (slug, f"{slug} ({_plural(n, 'question')} with expected documents)", n)
        for slug, n in launch_collections(tenant=tenant)
    ]


def _answer_collections(tenant: Tenant) -> list[tuple[str, str, int]]:
    return [
        (slug, f"{slug} ({_plural(n, 'golden question')}" + (f", {u} unanswerable" if u else "") + ")", n)
        for slug, n, u in answer_launch_collections(tenant=tenant)
    ]


def _ks_valid(form: LaunchForm) -> bool:
    try:
        form.cleaned_data["ks"] = parse_ks(form.cleaned_data["ks"])
    except EvalsiteError as exc:
        form.add_error("ks", exc.message)
        return False
    return True


def _create_retrieval(
    tenant: Tenant, form: LaunchForm, collections: list[Collection], configs, actor: str
) -> Job:
    request = RetrievalRequest(ks=form.cleaned_data["ks"], configs=configs)
    return batch_job_create(tenant=tenant, collections=collections, request=request, actor=actor)


def _create_answers(
    tenant: Tenant, form: AnswerLaunchForm, collections: list[Collection], configs, actor: str
) -> Job:
    request = AnswerRequest(
        configs=configs,
        judge_model=(form.cleaned_data.get("judge_model") or "").strip() or None,
        judge_sampling=parse_judge_sampling(
            form.cleaned_data.get("judge_samples"), form.cleaned_data.get("judge_temperature")
        ),
        unanswerable_questions=form.cleaned_data.get("unanswerable_questions") or [],
        max_questions=form.cleaned_data.get("max_questions"),
    )
    return batch_job_create(tenant=tenant, collections=collections, request=request, actor=actor)


def _answer_models() -> tuple[str, str]:
    """The placeholders of the model fields: what a blank one gets."""
    if not settings.EVALSITE_LLM_BASE_URL:
        return "extractive", "heuristic"
    default = settings.EVALSITE_LLM_MODEL or "set EVALSITE_LLM_MODEL"
    return f"default: {default}", f"default: {default}"


_RETRIEVAL = _Launcher(
    template="dashboard/launch.html",
    form_class=LaunchForm,
    formset_class=ConfigFormSet,
    presets=LAUNCH_PRESETS,
    collections=retrieval_collections,
    parse_configs=parse_configs,
    no_questions="These collections have no golden entries with expected documents yet: add some on the "
    "collection's page (or import a golden.json) first.",
    create=_create_retrieval,
    formset_kwargs=lambda tenant: {"targets": target_names(tenant=tenant, kinds=RETRIEVAL_KINDS)},
    initial=lambda: {"ks": DEFAULT_KS_TEXT},
    context=lambda: {"sync_limit": settings.EVALSITE_EVALUATE_SYNC_LIMIT},
    prepare=_ks_valid,
    has_questions=lambda form, counts: any(counts.get(slug) for slug in form.cleaned_data["collections"]),
    saved_presets=lambda tenant, rerankers: retrieval_presets(tenant=tenant, rerankers=rerankers),
)
_ANSWERS = _Launcher(
    template="dashboard/launch_answers.html",
    form_class=AnswerLaunchForm,
    formset_class=AnswerConfigFormSet,
    presets=ANSWER_LAUNCH_PRESETS,
    collections=_answer_collections,
    parse_configs=parse_answer_configs,
    no_questions="These collections have no golden questions yet (and no unanswerable questions were given): "
    "add some on the collection's page first.",
    create=_create_answers,
    form_kwargs=lambda: {"judge_placeholder": _answer_models()[1]},
    formset_kwargs=lambda tenant: {
        "model_placeholder": _answer_models()[0],
        "targets": target_names(tenant=tenant, kinds=ANSWER_KINDS),
    },
    context=lambda: {"offline": not settings.EVALSITE_LLM_BASE_URL, "nav_section": "launch"},
    has_questions=lambda form, counts: (
        bool(form.cleaned_data.get("unanswerable_questions"))
        or any(counts.get(slug) for slug in form.cleaned_data["collections"])
    ),
)


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.EVALUATE)
def launch(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Pick collections, ks and configurations; the evaluation runs as a job whose progress page follows."""
    return _launcher_page(request, tenant, _RETRIEVAL)


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.EVALUATE)
def launch_answers(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Pick collections and answer configurations (retrieval, passages, model, groundedness), the judge and the
    questions; the evaluation runs as an EvaluateAnswers job whose progress page opens the comparison."""
    return _launcher_page(request, tenant, _ANSWERS)


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.EVALUATE)
def launch_run_file(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Score an uploaded run file (one run per tag) at once (no search: it is read), then open the comparison."""
    collections = retrieval_collections(tenant)
    choices = [(slug, label) for slug, label, _ in collections]
    form = RunFileForm(request.POST or None, request.FILES or None, collections=choices)
    if request.method == "POST" and form.is_valid():
        try:
            collection = golden_selectors.collection_get(
                tenant=tenant, collection_id=form.cleaned_data["collection"]
            )
            upload = form.cleaned_data["file"]
            batch_id, runs = evaluate_run_file(
                tenant=tenant,
                collection=collection,
                ks=parse_ks(form.cleaned_data["ks"]),
                run_file=parse_run_file(upload.read()),
                filename=upload.name,
                actor=actor_user(request.user),
            )
        except EvalsiteError as exc:
            form.add_service_error(exc.code, exc.message, exc.details.get("field"))
        else:
            messages.success(
                request, f"Scored {len(runs)} run{'' if len(runs) == 1 else 's'} from {upload.name}."
            )
            return redirect(reverse("dashboard:compare") + "?" + urlencode({"batch": str(batch_id)}))
    return render(
        request,
        "dashboard/launch_run_file.html",
        {"tenant": tenant, "form": form, "has_collections": bool(collections), "nav_section": "launch"},
        status=400 if form.is_bound and form.errors else 200,
    )


def _launcher_page(request: HttpRequest, tenant: Tenant, launcher: _Launcher) -> HttpResponse:
    collections = launcher.collections(tenant)
    choices = [(slug, label) for slug, label, _ in collections]
    rerankers = available_rerankers()
    form_kwargs = {"collections": choices, **launcher.form_kwargs()}
    row_kwargs = launcher.formset_kwargs(tenant)
    saved = launcher.saved_presets(tenant, rerankers)
    if saved is not None:
        row_kwargs["presets"] = saved
    formset_kwargs = {"prefix": "configs", "form_kwargs": {"rerankers": rerankers, **row_kwargs}}
    if request.method == "POST":
        form = launcher.form_class(request.POST, **form_kwargs)
        formset = launcher.formset_class(request.POST, **formset_kwargs)
        counts = {slug: n for slug, _, n in collections}
        job = _launch(tenant, form, formset, rerankers, launcher, counts, actor=actor_user(request.user))
        if job is not None:
            return redirect("dashboard:job", job_id=job.pk)
    else:
        wanted = request.GET.get("collection")
        initial_collections = [wanted] if wanted else [slug for slug, _, _ in collections[:1]]
        form = launcher.form_class(
            initial={"collections": initial_collections, **launcher.initial()}, **form_kwargs
        )
        rows = _initial_rows(launcher, rerankers, row_kwargs, request.GET.get("preset"))
        formset = launcher.formset_class(initial=rows, **formset_kwargs)
    return render(
        request,
        launcher.template,
        {
            "tenant": tenant,
            "form": form,
            "formset": formset,
            "has_collections": bool(collections),
            **launcher.context(),
        },
        status=400 if form.is_bound and (form.errors or formset.errors or formset.non_form_errors()) else 200,
    )


def _initial_rows(
    launcher: _Launcher, rerankers: list[str], row_kwargs: dict[str, Any], preset: str | None
) -> list[dict[str, Any]]:
    """The built-in configurations, then a row per tenant target (unticked); with `?preset=NAME` (a study's
    "Launch it") a first row evaluating that preset, alone ticked. A preset the tenant lacks: 404."""
    rows = [
        {**p, "rerank": p.get("rerank") if p.get("rerank") in rerankers else ""} for p in launcher.presets
    ]
    rows += [{"enabled": False, "target": t} for t in row_kwargs.get("targets", [])]
    if preset:
        if preset not in row_kwargs.get("presets", []):
            raise Http404("No such preset.")
        rows = [{"enabled": True, "preset": preset, "label": ""}, *({**r, "enabled": False} for r in rows)]
    return rows


def _launch(
    tenant: Tenant,
    form,
    formset,
    rerankers: list[str],
    launcher: _Launcher,
    counts: dict[str, int],
    *,
    actor: str,
) -> Job | None:
    """Validate the launcher as the API validates the request, and create the job; None with errors on the
    forms. `counts`: golden questions per collection."""
    if not (form.is_valid() and formset.is_valid()):
        return None
    rows = [(i, f) for i, f in enumerate(formset.forms) if f.cleaned_data.get("enabled")]
    if not rows:
        form.add_error(None, "Tick “run” on at least one configuration.")
        return None
    if not launcher.prepare(form):
        return None
    try:
        subset = parse_subset(form.subset_request())
        raw = with_presets(tenant, [f.as_config() for _, f in rows])  # a row's preset: the tenant's own
        configs = launcher.parse_configs(raw, rerankers, subset)
    except EvalsiteError as exc:
        _config_error(form, rows, exc)
        return None
    if not launcher.has_questions(form, counts):
        form.add_error("collections", launcher.no_questions)
        return None
    collections = [
        golden_selectors.collection_get(tenant=tenant, collection_id=slug)
        for slug in form.cleaned_data["collections"]
    ]
    try:
        return launcher.create(tenant, form, collections, configs, actor)
    except EvalsiteError as exc:  # a model that cannot run, the task queue down: said on the form, not a 500
        _config_error(form, rows, exc)
        return None


def _config_error(form, rows, exc: EvalsiteError) -> None:
    """A configuration's error on its row's field; any other on the form (or the field the error names)."""
    field = str(exc.details.get("field", ""))
    match = _CONFIG_FIELD.match(field)
    if match:
        target = rows[int(match.group(1))][1]
        name = match.group(2)
        target.add_error(name if name in target.fields else None, exc.message.split(": ", 1)[-1])
    else:
        form.add_service_error(exc.code, exc.message, field or None)


def _study_url(job: Job) -> str | None:
    """A Study job's study page (the study's own page follows its job)."""
    if job.kind == EvaluationJobKind.STUDY and isinstance(job.input, dict) and job.input.get("study_id"):
        return reverse("dashboard:study", args=[job.input["study_id"]])
    return None


def _job_result_url(job: Job) -> str | None:
    if job.status != JobStatus.COMPLETED:
        return None
    if _study_url(job):
        return _study_url(job)
    batch = job_result_batch(job)
    evaluation = job.kind in (EvaluationJobKind.EVALUATE, EvaluationJobKind.EVALUATE_ANSWERS)
    runs = job_result_runs(job) if evaluation else []
    if len(runs) == 1:  # one configuration: nothing to compare it with, its run's page is the result
        return reverse("dashboard:run", args=[runs[0]])
    if evaluation and batch:
        return reverse("dashboard:compare") + "?" + urlencode({"batch": batch})
    if job.kind == GoldenJobKind.GENERATE:
        return reverse("dashboard:job", args=[job.pk])  # the job's page shows its report
    if job.collection_id:
        return reverse("dashboard:collection", args=[job.collection.slug])  # type: ignore[union-attr]
    return reverse("home")


def _job_unit(job: Job) -> str:
    """What a job's progress counts."""
    if job.kind == GoldenJobKind.GENERATE:
        return "pages checked"
    return "answers" if job.kind == EvaluationJobKind.EVALUATE_ANSWERS else "question searches"


def _job_count_text(job: Job) -> str:
    """The line under a job's bar, said from its status (the page and its poll show the same): a running job
    that has not counted its work yet is starting, not waiting."""
    if job.progress_total:
        return f"{job.progress_done} of {job.progress_total} {_job_unit(job)}"
    words: dict[str, str] = {
        JobStatus.QUEUED: "Waiting for a worker to start it.",
        JobStatus.RUNNING: "Started: counting the work.",
        JobStatus.CANCELLED: "The job was cancelled.",
        JobStatus.COMPLETED: "Done.",
    }
    return words.get(job.status, "")


def _job_state(job: Job) -> dict[str, Any]:
    return {
        "count_text": _job_count_text(job),
        "job_id": str(job.pk),
        "kind": job.kind,
        "status": job.status,
        "done": job.progress_done,
        "total": job.progress_total,
        "progress": round(job.progress, 4),
        "finished": job.status in Job.FINISHED,
        "error": job_error_message(job) if job.status == JobStatus.FAILED else None,
        "result_url": _job_result_url(job),
    }


def _job(tenant: Tenant, job_id: str) -> Job:
    jobs_recover(tenant=tenant)  # a job whose worker died is re-queued (or failed), never Running forever
    return golden_selectors.job_get(tenant=tenant, job_id=job_id)


@require_GET
@tenant_page(Perm.VIEW)
def job_detail(request: HttpRequest, tenant: Tenant, job_id: str) -> HttpResponse:
    job = _job(tenant, job_id)
    study_url = _study_url(job)
    if study_url:
        return redirect(study_url)
    state = _job_state(job)
    if state["result_url"] and job.kind != GoldenJobKind.GENERATE and request.GET.get("stay") != "1":
        return redirect(state["result_url"])  # finished already: straight to the results
    return render(
        request,
        "dashboard/job.html",
        {
            "tenant": tenant,
            "job": job,
            "state": state,
            "poll_ms": POLL_MS,
            "report": generate_report(job),
            # A generation belongs to its collection's pages in the header, an evaluation to the launcher's.
            "nav_section": "collection" if job.kind == GoldenJobKind.GENERATE else None,
        },
    )


@require_GET
@tenant_poll(Perm.VIEW)
def job_progress(request: HttpRequest, tenant: Tenant, job_id: str) -> dict[str, Any]:
    """The progress page's poll: the job's status and progress as JSON (session auth, current tenant)."""
    return _job_state(_job(tenant, job_id))


@require_POST
@tenant_page(Perm.EVALUATE)
def job_cancel_view(request: HttpRequest, tenant: Tenant, job_id: str) -> HttpResponse:
    job = _job(tenant, job_id)
    if job_cancel(job=job):
        messages.info(request, "The job was cancelled.")
    else:
        messages.warning(request, f"The job had already finished ({job.status}).")
    return redirect(reverse("dashboard:job", args=[job.pk]) + "?stay=1")
