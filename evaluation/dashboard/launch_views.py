"""Launching an evaluation from the dashboard, and any job's progress page, its poll and its cancel button.

A finished Evaluate job's page opens its results; a Generate job's page is its results (what the quality gate
kept and discarded), so it stays. Both the page and the poll first mark the tenant's stale jobs Failed."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluation.configs import parse_answer_configs, parse_configs, parse_ks
from evaluation.dashboard.common_views import current_tenant, tenant_page
from evaluation.dashboard.forms import (
    ANSWER_LAUNCH_PRESETS,
    LAUNCH_PRESETS,
    AnswerConfigFormSet,
    AnswerLaunchForm,
    ConfigFormSet,
    LaunchForm,
)
from evaluation.dashboard.golden_reads import generate_report
from evaluation.dashboard.launch_reads import (
    answer_launch_collections,
    job_error_message,
    job_result_batch,
    launch_collections,
)
from evaluation.selectors import count_golden_questions
from evaluation.services.answers import answers_job_create
from evaluation.services.retrieval import evaluation_job_create
from evaluation.services.search import available_rerankers
from goldenset import selectors as golden_selectors
from goldenset.errors import EvalsiteError, NotFound
from goldenset.jobs import job_cancel, jobs_recover
from goldenset.models import Job, JobKind, JobStatus, Tenant

POLL_MS = 500


# --- launching an evaluation, and its progress -------------------------------------------------------------

_CONFIG_FIELD = re.compile(r"^configs\[(\d+)\](?:\.(\w+))?")


@require_http_methods(["GET", "POST"])
@tenant_page
def launch(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Pick collections, ks and configurations; the evaluation runs as a job whose progress page follows."""
    collections = launch_collections(tenant=tenant)
    choices = [
        (slug, f"{slug} ({questions} question{'' if questions == 1 else 's'} with expected documents)")
        for slug, questions in collections
    ]
    rerankers = available_rerankers()
    if request.method == "POST":
        form = LaunchForm(request.POST, collections=choices)
        formset = ConfigFormSet(request.POST, prefix="configs", rerankers=rerankers)
        job = _launch(tenant, form, formset, rerankers)
        if job is not None:
            return redirect("dashboard:job", job_id=job.pk)
    else:
        wanted = request.GET.get("collection")
        initial_collections = [wanted] if wanted else [slug for slug, _ in collections[:1]]
        form = LaunchForm(initial={"collections": initial_collections, "ks": "1,5,10"}, collections=choices)
        presets = [
            {**p, "rerank": p.get("rerank") if p.get("rerank") in rerankers else ""} for p in LAUNCH_PRESETS
        ]
        formset = ConfigFormSet(initial=presets, prefix="configs", rerankers=rerankers)
    return render(
        request,
        "dashboard/launch.html",
        {
            "tenant": tenant,
            "form": form,
            "formset": formset,
            "has_collections": bool(collections),
            "sync_limit": settings.EVALSITE_EVALUATE_SYNC_LIMIT,
        },
        status=400 if form.is_bound and (form.errors or formset.errors or formset.non_form_errors()) else 200,
    )


def _launch(tenant: Tenant, form: LaunchForm, formset, rerankers: list[str]) -> Job | None:
    """Validate the launcher as the API validates a request, and create the job; None with errors on the forms."""
    if not (form.is_valid() and formset.is_valid()):
        return None
    rows = [(i, f) for i, f in enumerate(formset.forms) if f.cleaned_data.get("enabled")]
    if not rows:
        form.add_error(None, "Tick “run” on at least one configuration.")
        return None
    try:
        ks = parse_ks(form.cleaned_data["ks"])
    except EvalsiteError as exc:
        form.add_error("ks", exc.message)
        return None
    try:
        configs = parse_configs([f.as_config() for _, f in rows], rerankers)
    except EvalsiteError as exc:
        match = _CONFIG_FIELD.match(str(exc.details.get("field", "")))
        if match:
            target = rows[int(match.group(1))][1]
            name = match.group(2)
            target.add_error(name if name in target.fields else None, exc.message.split(": ", 1)[-1])
        else:
            form.add_error(None, exc.message)
        return None
    collections = [
        golden_selectors.collection_get(tenant=tenant, collection_id=slug)
        for slug in form.cleaned_data["collections"]
    ]
    if count_golden_questions(collections) == 0:
        form.add_error(
            "collections",
            "These collections have no golden entries with expected documents yet: add some on the collection's page "
            "(or import a golden.json) first.",
        )
        return None
    try:
        return evaluation_job_create(tenant=tenant, collections=collections, ks=ks, configs=configs)
    except EvalsiteError as exc:  # the task queue is down (broker-unavailable): said on the form, not a 500
        form.add_error(None, exc.message)
        return None


# --- launching an answer evaluation --------------------------------------------------------------------------


def _answer_models() -> tuple[str, str]:
    """The placeholders of the model fields: what a blank one gets."""
    if not settings.EVALSITE_LLM_BASE_URL:
        return "extractive", "heuristic"
    default = settings.EVALSITE_LLM_MODEL or "set EVALSITE_LLM_MODEL"
    return f"default: {default}", f"default: {default}"


@require_http_methods(["GET", "POST"])
@tenant_page
def launch_answers(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Pick collections and answer configurations (retrieval, passages, model, groundedness), the judge and the
    questions; the evaluation runs as an EvaluateAnswers job whose progress page opens the comparison."""
    collections = answer_launch_collections(tenant=tenant)
    choices = [
        (
            slug,
            f"{slug} ({questions} golden question{'' if questions == 1 else 's'}"
            + (f", {unanswerable} unanswerable" if unanswerable else "")
            + ")",
        )
        for slug, questions, unanswerable in collections
    ]
    rerankers = available_rerankers()
    model_placeholder, judge_placeholder = _answer_models()
    if request.method == "POST":
        form = AnswerLaunchForm(request.POST, collections=choices, judge_placeholder=judge_placeholder)
        formset = AnswerConfigFormSet(
            request.POST, prefix="configs", rerankers=rerankers, model_placeholder=model_placeholder
        )
        questions = {slug: n for slug, n, _ in collections}
        job = _launch_answers(tenant, form, formset, rerankers, questions)
        if job is not None:
            return redirect("dashboard:job", job_id=job.pk)
    else:
        wanted = request.GET.get("collection")
        initial_collections = [wanted] if wanted else [slug for slug, _, _ in collections[:1]]
        form = AnswerLaunchForm(
            initial={"collections": initial_collections},
            collections=choices,
            judge_placeholder=judge_placeholder,
        )
        presets = [
            {**p, "rerank": p.get("rerank") if p.get("rerank") in rerankers else ""}
            for p in ANSWER_LAUNCH_PRESETS
        ]
        formset = AnswerConfigFormSet(
            initial=presets, prefix="configs", rerankers=rerankers, model_placeholder=model_placeholder
        )
    return render(
        request,
        "dashboard/launch_answers.html",
        {
            "tenant": tenant,
            "form": form,
            "formset": formset,
            "has_collections": bool(collections),
            "offline": not settings.EVALSITE_LLM_BASE_URL,
            "nav_section": "launch",
        },
        status=400 if form.is_bound and (form.errors or formset.errors or formset.non_form_errors()) else 200,
    )


def _launch_answers(
    tenant: Tenant, form: AnswerLaunchForm, formset, rerankers: list[str], questions: dict[str, int]
) -> Job | None:
    """Validate the answer launcher as the API validates evaluate/answers, and create the job; None with
    errors on the forms. `questions`: golden questions per collection."""
    if not (form.is_valid() and formset.is_valid()):
        return None
    rows = [(i, f) for i, f in enumerate(formset.forms) if f.cleaned_data.get("enabled")]
    if not rows:
        form.add_error(None, "Tick “run” on at least one configuration.")
        return None
    try:
        configs = parse_answer_configs([f.as_config() for _, f in rows], rerankers)
    except EvalsiteError as exc:
        _config_error(form, rows, exc)
        return None
    collections = [
        golden_selectors.collection_get(tenant=tenant, collection_id=slug)
        for slug in form.cleaned_data["collections"]
    ]
    unanswerable = form.cleaned_data.get("unanswerable_questions") or []
    if not unanswerable and not any(questions.get(slug) for slug in form.cleaned_data["collections"]):
        form.add_error(
            "collections",
            "These collections have no golden questions yet (and no unanswerable questions were given): add "
            "some on the collection's page first.",
        )
        return None
    try:
        return answers_job_create(
            tenant=tenant,
            collections=collections,
            configs=configs,
            judge_model=(form.cleaned_data.get("judge_model") or "").strip() or None,
            unanswerable_questions=unanswerable,
            max_questions=form.cleaned_data.get("max_questions"),
            thresholds={},
        )
    except EvalsiteError as exc:
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


def _job_result_url(job: Job) -> str | None:
    if job.status != JobStatus.COMPLETED:
        return None
    batch = job_result_batch(job)
    if job.kind in (JobKind.EVALUATE, JobKind.EVALUATE_ANSWERS) and batch:
        return reverse("dashboard:compare") + "?" + urlencode({"batch": batch})
    if job.kind == JobKind.GENERATE:
        return reverse("dashboard:job", args=[job.pk])  # the job's page shows its report
    if job.collection_id:
        return reverse("dashboard:collection", args=[job.collection.slug])  # type: ignore[union-attr]
    return reverse("home")


def _job_state(job: Job) -> dict[str, Any]:
    return {
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
@tenant_page
def job_detail(request: HttpRequest, tenant: Tenant, job_id: str) -> HttpResponse:
    job = _job(tenant, job_id)
    state = _job_state(job)
    if state["result_url"] and job.kind != JobKind.GENERATE and request.GET.get("stay") != "1":
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
            "nav_section": "collection" if job.kind == JobKind.GENERATE else None,
        },
    )


@require_GET
def job_progress(request: HttpRequest, job_id: str) -> JsonResponse:
    """The progress page's poll: the job's status and progress as JSON (session auth, current tenant)."""
    if not request.user.is_authenticated:
        return JsonResponse({"error": {"code": "unauthenticated", "message": "Sign in first."}}, status=401)
    tenant = current_tenant(request)
    if tenant is None:
        raise Http404("No tenant.")
    try:
        job = _job(tenant, job_id)
    except NotFound as exc:
        return JsonResponse({"error": exc.as_dict()}, status=404)
    response = JsonResponse(_job_state(job))
    response["Cache-Control"] = "no-store"
    return response


@require_POST
@tenant_page
def job_cancel_view(request: HttpRequest, tenant: Tenant, job_id: str) -> HttpResponse:
    job = _job(tenant, job_id)
    if job_cancel(job=job):
        messages.info(request, "The job was cancelled.")
    else:
        messages.warning(request, f"The job had already finished ({job.status}).")
    return redirect(reverse("dashboard:job", args=[job.pk]) + "?stay=1")
