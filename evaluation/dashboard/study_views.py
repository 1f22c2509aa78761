"""Studies on the dashboard: the form that starts one (from a collection, or from Compare with a run's
configuration as its base), the live page of one study (its poll, its cancel, its winner saved as a preset) and
the list of a tenant's studies. The work is evaluation.studies.services', as for the API."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError
from evalsite.jobs.services import job_cancel, jobs_recover
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard import study_charts, study_reads
from evaluation.dashboard.common_views import collection_for, paginate, tenant_page, tenant_poll
from evaluation.dashboard.launch_reads import retrieval_presets
from evaluation.dashboard.launch_views import POLL_MS, retrieval_collections
from evaluation.dashboard.study_forms import (
    METRIC_SUGGESTIONS,
    StudyForm,
    initial_from_config,
    starter_space,
)
from evaluation.models import EvaluationRun, RunKind, Study
from evaluation.retrieval.read_path import available_rerankers
from evaluation.studies import reads, services

STUDIES_PER_PAGE = 25
# The figures whose data the trials table holds (each row a trial): they say so instead of a table of their own.
TABLED = {"history": "study-trials", "parallel": "study-trials"}


def _study(tenant: Tenant, study_id: str) -> Study:
    jobs_recover(tenant=tenant)  # a study whose worker died is re-queued (or failed), never Running forever
    return services.study_get(tenant=tenant, study_id=study_id)


def _run_initial(tenant: Tenant, run_id: str) -> tuple[dict[str, Any], EvaluationRun]:
    """The form's initial values from one of the tenant's retrieval runs (another tenant's is a 404)."""
    try:
        pk = uuid.UUID(run_id)
    except ValueError:
        raise Http404("No such run.") from None
    run = EvaluationRun.objects.filter(tenant=tenant, pk=pk).first()
    if run is None:
        raise Http404("No such run.")
    initial = initial_from_config(run.config or {})
    if len(run.collection_ids) == 1:
        initial["collection"] = run.collection_ids[0]
    return initial, run


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.EVALUATE)
def study_new(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Start a study: a collection, a base configuration, what to vary and the budget; the study page follows."""
    collections = retrieval_collections(tenant)
    form_kwargs: dict[str, Any] = {
        "collections": [(slug, label) for slug, label, _ in collections],
        "rerankers": available_rerankers(),
    }
    run = None
    if request.method == "POST":
        form = StudyForm(request.POST, **form_kwargs)
        study = _create(request, tenant, form)
        if study is not None:
            messages.success(request, "The study is queued: its trials appear below as they end.")
            return redirect("dashboard:study", study_id=study.pk)
    else:
        initial: dict[str, Any] = {
            "collection": request.GET.get("collection") or next(iter(collections), ("",))[0]
        }
        if request.GET.get("run"):
            found, run = _run_initial(tenant, request.GET["run"])
            initial.update(found)
        initial.update(starter_space(initial.get("search_type", "FullText")))
        form = StudyForm(initial=initial, **form_kwargs)
    tunable = run is None or (run.kind == RunKind.RETRIEVAL and not (run.config or {}).get("target"))
    return render(
        request,
        "dashboard/study_new.html",
        {
            "tenant": tenant,
            "form": form,
            "space_rows": form.space_rows(),
            "answers": form.answers(),  # the answer configuration's rows shown
            "metric_suggestions": METRIC_SUGGESTIONS,
            "run": run,
            "tunable": tunable,
            "has_collections": bool(collections),
            "nav_section": "studies",
        },  # fmt: skip
        status=400 if form.is_bound and form.errors else 200,
    )


def _create(request: HttpRequest, tenant: Tenant, form: StudyForm) -> Study | None:
    if not form.is_valid():
        return None
    raw = form.study_request()
    if raw is None:
        return None
    try:
        collection = collection_for(tenant, form.cleaned_data["collection"])
        return services.study_create(
            tenant=tenant, collection=collection, raw=raw, actor=actor_user(request.user)
        )
    except EvalsiteError as exc:
        form.add_service_error(exc.code, exc.message, str(exc.details.get("field") or "") or None)
        return None


def _axes(request: HttpRequest, dimensions, importance) -> tuple[str, str] | None:
    ranked = list(importance.shares or {})
    return study_charts.heatmap_axes(dimensions, (request.GET.get("x"), request.GET.get("y")), ranked)


@require_GET
@tenant_page(Perm.VIEW)
def study_detail(request: HttpRequest, tenant: Tenant, study_id: str) -> HttpResponse:
    """A study as it runs: its state, charts of its trials, its trials, and once done its result."""
    return _study_page(request, tenant, _study(tenant, study_id))


def _study_page(
    request: HttpRequest, tenant: Tenant, study: Study, *, preset_name: str = "", preset_error: str = "",
    accept_error: str = "", status: int = 200,
) -> HttpResponse:  # fmt: skip
    dimensions = study_reads.dimensions_of(study)
    importance = study_reads.study_importance(study, dimensions)
    axes = _axes(request, dimensions, importance)
    figures = study_reads.figures(study, dimensions, importance, axes)
    charts_html = {
        name: study_charts.figure_div(figure, f"study-{name}", table_id=TABLED.get(name)) if figure else ""
        for name, figure in figures.items()
    }
    result = study_reads.result(study)
    saved = (result or {}).get("presets") or []
    launchable = retrieval_presets(tenant=tenant, rerankers=available_rerankers()) if saved else []
    return render(
        request,
        "dashboard/study.html",
        {
            "tenant": tenant,
            "study": study,
            "state": study_reads.state(study),
            "poll_ms": POLL_MS * 2,
            "dimensions": dimensions,
            "rows": study_reads.trial_rows(study, dimensions),
            "charts": charts_html,
            "importance": importance,
            "axes": axes,
            "result": result,
            "launchable": [name for name in saved if name in launchable],  # "Launch it" links
            "base": study_reads.config_text(study.request["base"]),
            "baseline": study_reads.config_text(study.request["baseline"]),
            "space": study_reads.space_text(study),
            "nav_section": "studies",
            "preset_name": preset_name,
            "preset_error": preset_error,
            "accept_error": accept_error,
            # saving a winner not shown better is said, and asks to be ticked
            "not_better": "" if services.winner_shown_better(study) else services.not_better_warning(study),
            "space_notes": reads.space_notes(study, dimensions),
        },  # fmt: skip
        status=status,
    )


@require_GET
@tenant_poll(Perm.VIEW)
def study_progress(request: HttpRequest, tenant: Tenant, study_id: str) -> dict[str, Any]:
    """The study page's poll: its state, its trials and its figures as JSON (session auth, current tenant)."""
    study = _study(tenant, study_id)
    dimensions = study_reads.dimensions_of(study)
    importance = study_reads.study_importance(study, dimensions)
    body = study_reads.progress_json(study, _axes(request, dimensions, importance))
    rows = study_reads.trial_rows(study, dimensions)
    body["rows_html"] = render_to_string(
        "dashboard/_study_trial_rows.html", {"rows": rows, "dimensions": dimensions}, request=request
    )
    return body


@require_POST
@tenant_page(Perm.EVALUATE)
def study_cancel(request: HttpRequest, tenant: Tenant, study_id: str) -> HttpResponse:
    """Cancel the study's job: it ends after the trial under way, without a confirmation."""
    study = _study(tenant, study_id)
    if study.job is not None and job_cancel(job=study.job):
        messages.info(request, "The study was cancelled: it stops after the trial under way.")
    else:
        messages.warning(request, f"The study had already finished ({study_reads.status_of(study)}).")
    return redirect("dashboard:study", study_id=study.pk)


@require_POST
@tenant_page(Perm.CURATE)
def study_save(request: HttpRequest, tenant: Tenant, study_id: str) -> HttpResponse:
    """Save the winner as a named preset; a blank name, or one in use (the service's 409), is said beside the
    name field of the study's page; a winner not shown better is saved only with its box ticked."""
    study = _study(tenant, study_id)
    name = request.POST.get("name", "").strip()
    status, error, accept_error = 400, "Give the preset a name." if not name else "", ""
    if len(name) > 100:
        error = "A preset's name is at most 100 characters."
    if not error:
        try:
            services.preset_save(
                study=study, name=name, actor=actor_user(request.user),
                accept_not_better=request.POST.get("accept_not_better") == "on",
            )  # fmt: skip
        except EvalsiteError as exc:
            status, error = exc.status_code, exc.message.split(": ", 1)[-1]
            if exc.code == "winner-not-better":
                error, accept_error = "", "Tick this to save a winner that was not shown better."
        else:
            messages.success(
                request, f"Saved as the preset “{name}”: use it by name in evaluations and studies."
            )
            return redirect("dashboard:study", study_id=study.pk)
    error = error[:1].upper() + error[1:]
    return _study_page(
        request, tenant, study, preset_name=name, preset_error=error, accept_error=accept_error, status=status
    )


@require_GET
@tenant_page(Perm.VIEW)
def studies(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """The tenant's studies (of one collection with ?collection=), newest first."""
    slug = request.GET.get("collection") or ""
    collection = collection_for(tenant, slug) if slug else None
    page = paginate(request, services.study_list(tenant=tenant, collection=collection), STUDIES_PER_PAGE)
    rows = [
        {"study": s, "status": study_reads.status_of(s), "verdict": study_reads.verdict_word(
            {"confirmation": s.confirmation}), "best": (s.best or {}).get("tuning_value"),
         "space": ", ".join(s.request["space"])}
        for s in page.object_list
    ]  # fmt: skip
    return render(
        request,
        "dashboard/studies.html",
        {"tenant": tenant, "collection": collection, "page": page, "rows": rows, "nav_section": "studies"},
    )
