"""The dashboard: server-rendered pages over the tenant a signed-in user picked. Thin: selectors and services
do the work (evaluation.dashboard, goldenset.selectors, goldenset.services).

The current tenant lives in the session and is checked against the user's memberships on every request (a
superuser sees every tenant); `?tenant=cluster/tenant` on any page switches to that tenant, or answers 404 when
the user may not see it. Every object is looked up within the current tenant, so another tenant's is a 404.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from functools import cached_property, wraps
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.paginator import Page as PaginatorPage
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluation import charts, dashboard
from evaluation import selectors as run_selectors
from evaluation.configs import parse_configs, parse_ks
from evaluation.forms import (
    LAUNCH_PRESETS,
    ConfigFormSet,
    DocumentSearchForm,
    GoldenEntryForm,
    GoldenFilterForm,
    LaunchForm,
    RunFilterForm,
    TrendsForm,
    yes_no,
)
from evaluation.models import EvaluationRun
from evaluation.services import available_rerankers, count_golden_questions
from goldenset import importers, services
from goldenset import selectors as golden_selectors
from goldenset.errors import EvalsiteError, NotFound
from goldenset.jobs import job_cancel
from goldenset.models import Collection, GoldenEntry, Job, JobKind, JobStatus, Tenant

SESSION_TENANT = "dashboard_tenant"
GOLDEN_PER_PAGE = 50
DOCUMENTS_PER_PAGE = 50
POLL_MS = 500


# --- the current tenant ------------------------------------------------------------------------------------


def visible_tenants(request: HttpRequest) -> list[Tenant]:
    cached = getattr(request, "_dashboard_tenants", None)
    if cached is None:
        cached = dashboard.tenants_for_user(request.user)
        request._dashboard_tenants = cached  # type: ignore[attr-defined]
    return cached


def current_tenant(request: HttpRequest, *, from_query: bool = True) -> Tenant | None:
    """The tenant this request works in: `?tenant=` (switching to it), else the session's, else the first
    one the user may see (None when there is none). A tenant the user may not see is a 404."""
    if hasattr(request, "_dashboard_tenant"):
        return cast(Tenant | None, request._dashboard_tenant)
    tenants = visible_tenants(request)
    wanted = request.GET.get("tenant") if from_query else None
    if wanted:
        tenant = next((t for t in tenants if dashboard.tenant_key(t) == wanted), None)
        if tenant is None:
            raise Http404("No such tenant.")
    else:
        stored = request.session.get(SESSION_TENANT)
        tenant = next((t for t in tenants if t.pk == stored), tenants[0] if tenants else None)
    if tenant is not None and request.session.get(SESSION_TENANT) != tenant.pk:
        request.session[SESSION_TENANT] = tenant.pk
    if from_query:
        request._dashboard_tenant = tenant  # type: ignore[attr-defined]
    return tenant


TenantView = Callable[..., HttpResponseBase]


def tenant_page(view: TenantView) -> Callable[..., HttpResponseBase]:
    """Login required, the current tenant passed in, and the domain's NotFound shown as the 404 page."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        tenant = current_tenant(request)
        if tenant is None:
            return render(request, "dashboard/no_tenant.html")
        try:
            return view(request, tenant, *args, **kwargs)
        except NotFound as exc:
            raise Http404(exc.message) from None

    return wrapper


class DashboardContext:
    """What base.html shows in the header, computed only when a template reads it (admin pages never do)."""

    def __init__(self, request: HttpRequest):
        self.request = request

    @cached_property
    def tenants(self) -> list[dict[str, str]]:
        return [
            {"key": dashboard.tenant_key(t), "name": t.name or dashboard.tenant_key(t)}
            for t in visible_tenants(self.request)
        ]

    @cached_property
    def tenant(self) -> Tenant | None:
        try:
            return current_tenant(self.request, from_query=False)
        except Http404:
            return None

    @cached_property
    def tenant_key(self) -> str:
        return dashboard.tenant_key(self.tenant) if self.tenant else ""


def dashboard_context(request: HttpRequest) -> dict[str, Any]:
    """Template context processor (settings.TEMPLATES): the header's tenant switcher."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"dashboard": DashboardContext(request)}


@require_POST
def tenant_switch(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(reverse("home"))
    wanted = request.POST.get("tenant", "")
    tenant = next((t for t in visible_tenants(request) if dashboard.tenant_key(t) == wanted), None)
    if tenant is None:
        raise Http404("No such tenant.")
    request.session[SESSION_TENANT] = tenant.pk
    # Pages that name no tenant's object keep the user where they were; any other could be another
    # tenant's object (a 404 after the switch), so home instead.
    staying = {reverse(name) for name in ("home", "dashboard:runs", "dashboard:trends", "dashboard:launch")}
    target = _safe_next(request, reverse("home"))
    return redirect(target if target.split("?")[0] in staying else reverse("home"))


def _safe_next(request: HttpRequest, default: str) -> str:
    """The `next` the form sent when it is a path on this site, else default."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if not target or not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return default
    return target


def _actor(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


def _page(request: HttpRequest, items: Any, per_page: int) -> PaginatorPage:
    return Paginator(items, per_page).get_page(request.GET.get("page"))


def _query_without_page(request: HttpRequest) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


# --- home --------------------------------------------------------------------------------------------------


@require_GET
@tenant_page
def home(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    summaries = dashboard.home_collections(tenant=tenant)
    for summary in summaries:
        for run in summary.latest_runs:
            run.color = charts.label_color(run.label)  # type: ignore[attr-defined]
    return render(request, "dashboard/home.html", {"tenant": tenant, "summaries": summaries})


# --- a collection: its golden set and documents ------------------------------------------------------------


def _collection(tenant: Tenant, slug: str) -> Collection:
    return golden_selectors.collection_get(tenant=tenant, collection_id=slug)


def _golden_entries(request: HttpRequest, tenant: Tenant, collection: Collection):
    form = GoldenFilterForm(request.GET or None, tags=dashboard.golden_tags(collection=collection))
    filters = form.cleaned_data if form.is_bound and form.is_valid() else {}
    entries = golden_selectors.golden_entries_list(
        tenant=tenant,
        collection=collection,
        tag=filters.get("tag") or None,
        origin=filters.get("origin") or None,
        reviewed=yes_no(filters.get("reviewed")),
        text=(filters.get("q") or "").strip() or None,
    )
    return form, entries, bool(filters and any(filters.values()))


@require_GET
@tenant_page
def collection_detail(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    collection = _collection(tenant, slug)
    form, entries, filtered = _golden_entries(request, tenant, collection)
    page = _page(request, entries, GOLDEN_PER_PAGE)
    counts = collection.golden_entries.aggregate(
        total=Count("pk"), reviewed=Count("pk", filter=Q(reviewed=True))
    )
    rows = [
        {
            "entry": e,
            "expected_text": "\n".join(e.expected_document_ids),
            "tags_text": ", ".join(e.tags),
        }
        for e in page.object_list
    ]
    changes = [
        {"event": e, "summary": dashboard.audit_summary(e)}
        for e in dashboard.recent_changes(collection=collection)
    ]
    return render(
        request,
        "dashboard/collection.html",
        {
            "tenant": tenant,
            "collection": collection,
            "form": form,
            "page": page,
            "rows": rows,
            "counts": counts,
            "document_count": collection.documents.count(),
            "filtered": filtered,
            "query": _query_without_page(request),
            "changes": changes,
            "here": request.get_full_path(),
        },
    )


@require_GET
@tenant_page
def golden_export(request: HttpRequest, tenant: Tenant, slug: str, fmt: str) -> HttpResponse:
    """The golden set (as filtered on the page) as CSV, or as an okfsmith golden.json."""
    collection = _collection(tenant, slug)
    _, entries, _ = _golden_entries(request, tenant, collection)
    name = slugify(collection.slug) or "collection"
    if fmt == "json":
        response = HttpResponse(
            importers.golden_entries_dump(entries), content_type="application/json; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{name}-golden.json"'
    else:
        response = HttpResponse(dashboard.golden_csv(entries), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}-golden.csv"'
    return response


def _entry(tenant: Tenant, collection: Collection, entry_id: str) -> GoldenEntry:
    entry = golden_selectors.golden_entry_get(tenant=tenant, entry_id=entry_id)
    if entry.collection_id != collection.pk:
        raise NotFound("Golden entry", entry_id)
    return entry


def _entry_initial(entry: GoldenEntry) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in GoldenEntryForm.FIELDS}


@require_http_methods(["GET", "POST"])
@tenant_page
def golden_entry(request: HttpRequest, tenant: Tenant, slug: str, entry_id: str) -> HttpResponse:
    """One entry: its form (saved through the audited service) and its audit trail."""
    collection = _collection(tenant, slug)
    entry = _entry(tenant, collection, entry_id)
    back = _safe_next(request, reverse("dashboard:collection", args=[collection.slug]))
    if request.method == "POST":
        form = GoldenEntryForm(request.POST, initial=_entry_initial(entry))
        if form.is_valid():
            changes = {
                name: form.cleaned_data[name]
                for name in GoldenEntryForm.FIELDS
                if form.cleaned_data[name] != getattr(entry, name)
            }
            expected = changes.get("expected_document_ids")
            if expected is not None:
                # Grades belong to expected documents: drop those of documents no longer expected.
                grades = {k: v for k, v in entry.grades.items() if k in expected}
                if grades != entry.grades:
                    changes["grades"] = grades
            if not changes:
                messages.info(request, "Nothing changed.")
                return redirect(back)
            try:
                services.golden_entry_update(entry=entry, changes=changes, actor=_actor(request))
            except EvalsiteError as exc:
                form.add_service_error(exc.code, exc.message, exc.details.get("field"))
            else:
                messages.success(request, f"Saved “{entry.question[:80]}”.")
                return redirect(back)
    else:
        form = GoldenEntryForm(initial=_entry_initial(entry))
    trail = [
        {"event": e, "summary": dashboard.audit_summary(e)}
        for e in dashboard.audit_trail(tenant=tenant, entry_id=entry.pk)
    ]
    return render(
        request,
        "dashboard/golden_entry.html",
        {
            "tenant": tenant,
            "collection": collection,
            "entry": entry,
            "form": form,
            "trail": trail,
            "back": back,
        },
        status=400 if form.is_bound and form.errors else 200,
    )


@require_http_methods(["GET", "POST"])
@tenant_page
def golden_new(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """Add one entry by hand (origin Manual), validated and audited as every other writer's."""
    collection = _collection(tenant, slug)
    back = reverse("dashboard:collection", args=[collection.slug])
    form = GoldenEntryForm(request.POST or None, initial={"answerable": True})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            created, _ = services.golden_entries_add(
                collection=collection,
                entries=[
                    services.EntryInput(
                        question=data["question"],
                        expected_document_ids=data["expected_document_ids"],
                        reference_answer=data["reference_answer"],
                        key=data["key"].strip(),
                        tags=data["tags"],
                        answerable=data["answerable"],
                    )
                ],
                actor=_actor(request),
            )
        except EvalsiteError as exc:
            form.add_service_error(exc.code, exc.message, exc.details.get("field"))
        else:
            entry = created[0]
            if data["reviewed"]:
                services.golden_entries_mark_reviewed(entries=[entry], reviewed=True, actor=_actor(request))
            messages.success(request, f"Added “{entry.question[:80]}”.")
            return redirect(back)
    return render(
        request,
        "dashboard/golden_entry.html",
        {"tenant": tenant, "collection": collection, "entry": None, "form": form, "trail": [], "back": back},
        status=400 if form.is_bound and form.errors else 200,
    )


@require_POST
@tenant_page
def golden_action(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """Mark selected entries reviewed or unreviewed, or delete them (after a confirmation page)."""
    collection = _collection(tenant, slug)
    back = _safe_next(request, reverse("dashboard:collection", args=[collection.slug]))
    # A row's own button sends "single" = "<entry id>:<action>"; the toolbar's send "action" and the ticked ids.
    single = request.POST.get("single", "")
    if single:
        value, _, action = single.partition(":")
        values = [value]
    else:
        action = request.POST.get("action", "")
        values = request.POST.getlist("entry")
    ids = []
    for value in values:
        try:
            ids.append(uuid.UUID(value))
        except ValueError:
            continue
    entries = golden_selectors.golden_entries_list(tenant=tenant, collection=collection).filter(pk__in=ids)
    if not ids:
        messages.warning(request, "Select one or more entries first.")
        return redirect(back)
    actor = _actor(request)
    if action in ("reviewed", "unreviewed"):
        count = services.golden_entries_mark_reviewed(
            entries=entries, reviewed=action == "reviewed", actor=actor
        )
        messages.success(request, f"Marked {count} {'entry' if count == 1 else 'entries'} {action}.")
        return redirect(back)
    if action == "delete":
        return render(
            request,
            "dashboard/golden_delete.html",
            {"tenant": tenant, "collection": collection, "entries": list(entries), "back": back},
        )
    if action == "delete-confirmed":
        count = services.golden_entries_delete(entries=entries, actor=actor)
        messages.success(request, f"Deleted {count} {'entry' if count == 1 else 'entries'}.")
        return redirect(back)
    messages.error(request, "Unknown action.")
    return redirect(back)


@require_GET
@tenant_page
def documents(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    collection = _collection(tenant, slug)
    form = DocumentSearchForm(request.GET or None)
    text = form.cleaned_data.get("q", "").strip() if form.is_bound and form.is_valid() else ""
    page = _page(
        request, golden_selectors.documents_list(collection=collection, text=text or None), DOCUMENTS_PER_PAGE
    )
    return render(
        request,
        "dashboard/documents.html",
        {
            "tenant": tenant,
            "collection": collection,
            "form": form,
            "page": page,
            "text": text,
            "query": _query_without_page(request),
        },
    )


@require_GET
@tenant_page
def document_detail(request: HttpRequest, tenant: Tenant, slug: str, document_id: str) -> HttpResponse:
    collection = _collection(tenant, slug)
    document = golden_selectors.document_get(collection=collection, document_id=document_id)
    return render(
        request,
        "dashboard/document.html",
        {
            "tenant": tenant,
            "collection": collection,
            "document": document,
            "pages": list(document.pages.order_by("number")),
        },
    )


# --- launching an evaluation, and its progress -------------------------------------------------------------

_CONFIG_FIELD = re.compile(r"^configs\[(\d+)\](?:\.(\w+))?")


@require_http_methods(["GET", "POST"])
@tenant_page
def launch(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Pick collections, ks and configurations; the evaluation runs as a job whose progress page follows."""
    collections = dashboard.launch_collections(tenant=tenant)
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
    return dashboard.evaluation_job_create(tenant=tenant, collections=collections, ks=ks, configs=configs)


def _job_result_url(job: Job) -> str | None:
    if job.status != JobStatus.COMPLETED:
        return None
    batch = dashboard.job_result_batch(job)
    if job.kind == JobKind.EVALUATE and batch:
        return reverse("dashboard:compare") + "?" + urlencode({"batch": batch})
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
        "error": dashboard.job_error_message(job) if job.status == JobStatus.FAILED else None,
        "result_url": _job_result_url(job),
    }


def _job(tenant: Tenant, job_id: str) -> Job:
    return golden_selectors.job_get(tenant=tenant, job_id=job_id)


@require_GET
@tenant_page
def job_detail(request: HttpRequest, tenant: Tenant, job_id: str) -> HttpResponse:
    job = _job(tenant, job_id)
    state = _job_state(job)
    if state["result_url"] and request.GET.get("stay") != "1":
        return redirect(state["result_url"])  # finished already: straight to the results
    return render(
        request,
        "dashboard/job.html",
        {"tenant": tenant, "job": job, "state": state, "poll_ms": POLL_MS},
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


# --- runs --------------------------------------------------------------------------------------------------


@require_GET
@tenant_page
def runs(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Runs newest first, 50 a page, filtered by collection, label, kind and date; pick some to compare."""
    collection_slugs = list(
        Collection.objects.filter(tenant=tenant).order_by("slug").values_list("slug", flat=True)
    )
    form = RunFilterForm(
        request.GET or None, collections=collection_slugs, labels=dashboard.run_labels(tenant=tenant)
    )
    filters = form.cleaned_data if form.is_bound and form.is_valid() else {}
    collection = _collection(tenant, filters["collection"]) if filters.get("collection") else None
    queryset = dashboard.runs_filtered(
        tenant=tenant,
        collection=collection,
        label=filters.get("label") or None,
        kind=filters.get("kind") or None,
        date_from=filters.get("date_from"),
        date_to=filters.get("date_to"),
    )
    page = _page(request, queryset, dashboard.RUNS_PER_PAGE)
    rows = dashboard.run_rows(page.object_list)
    return render(
        request,
        "dashboard/runs.html",
        {
            "tenant": tenant,
            "form": form,
            "page": page,
            "rows": rows,
            "filtered": bool(filters and any(filters.values())),
            "query": _query_without_page(request),
            "max_compare": dashboard.MAX_COMPARE_RUNS,
        },
    )


def _run(tenant: Tenant, run_id: str, with_results: bool = False) -> EvaluationRun:
    return run_selectors.run_get(tenant=tenant, run_id=run_id, with_results=with_results)


@require_GET
@tenant_page
def run_detail(request: HttpRequest, tenant: Tenant, run_id: str) -> HttpResponse:
    run = _run(tenant, run_id)
    failures_only = request.GET.get("failures") == "1"
    questions = dashboard.run_questions(run=run)
    failures = sum(1 for q in questions if q.diagnosis != "pass")
    shown = [q for q in questions if q.diagnosis != "pass"] if failures_only else questions
    siblings = list(
        EvaluationRun.objects.filter(tenant=tenant, batch_id=run.batch_id)
        .exclude(pk=run.pk)
        .order_by("label")
        .values_list("pk", "label")
    )
    metrics = [(name, run.metrics[name]) for name in dashboard.ordered_metrics(run.metrics)]
    return render(
        request,
        "dashboard/run.html",
        {
            "tenant": tenant,
            "run": run,
            "color": charts.label_color(run.label),
            "metrics": metrics,
            "config": sorted((k, v) for k, v in run.config.items() if k != "label"),
            "questions": shown,
            "question_total": len(questions),
            "failures": failures,
            "failures_only": failures_only,
            "k": dashboard.run_depth_k(run),
            "siblings": [
                {"pk": pk, "label": label, "color": charts.label_color(label)} for pk, label in siblings
            ],
            "diagnoses": dashboard.DIAGNOSES,
        },
    )


@require_GET
@tenant_page
def run_question(request: HttpRequest, tenant: Tenant, run_id: str, position: int) -> HttpResponse:
    run = _run(tenant, run_id)
    result = dashboard.question_result(run=run, position=position)
    if result is None:
        raise Http404("No such question in this run.")
    ranked, missing = dashboard.question_documents(tenant=tenant, run=run, result=result)
    diagnosis = dashboard.question_diagnosis(
        result.diagnosis, result.first_relevant_rank, result.missing_document_ids
    )
    previous, following = dashboard.neighbour_positions(run=run, position=position)
    collections = {c.slug for c in Collection.objects.filter(tenant=tenant, slug__in=run.collection_ids)}
    return render(
        request,
        "dashboard/question.html",
        {
            "tenant": tenant,
            "run": run,
            "color": charts.label_color(run.label),
            "result": result,
            "metrics": [(name, result.metrics[name]) for name in dashboard.ordered_metrics(result.metrics)],
            "diagnosis": diagnosis,
            "diagnosis_text": dashboard.DIAGNOSES.get(diagnosis, ""),
            "ranked": ranked,
            "missing": missing,
            "expected_total": len([g for g in result.expected.values() if g > 0]),
            "previous": previous,
            "following": following,
            "linkable": collections,
        },
    )


@require_GET
@tenant_page
def run_download(request: HttpRequest, tenant: Tenant, run_id: str, fmt: str) -> HttpResponse:
    run = _run(tenant, run_id, with_results=fmt == "json")
    name = f"run-{slugify(run.label) or 'run'}-{str(run.pk)[:8]}"
    if fmt == "json":
        response = HttpResponse(dashboard.run_json(run), content_type="application/json; charset=utf-8")
        filename = f"{name}.json"
    elif fmt == "csv":
        response = HttpResponse(dashboard.run_csv(run), content_type="text/csv; charset=utf-8")
        filename = f"{name}.csv"
    else:
        response = HttpResponse(dashboard.run_trec(run), content_type="text/plain; charset=utf-8")
        filename = f"{name}.trec"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- compare and trends ------------------------------------------------------------------------------------


@require_GET
@tenant_page
def compare(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Every metric across the selected runs with 95% bootstrap intervals, and a paired randomization test
    for each pair over the questions they share."""
    run_ids = request.GET.getlist("run")
    batch = request.GET.get("batch")
    context: dict[str, Any] = {"tenant": tenant}
    if not run_ids and not batch:
        latest = (
            EvaluationRun.objects.filter(tenant=tenant)
            .order_by("-created_at", "-id")
            .values_list("batch_id", flat=True)
            .first()
        )
        context["latest_batch"] = latest
        return render(request, "dashboard/compare.html", context)
    try:
        runs = dashboard.compare_runs(tenant=tenant, run_ids=run_ids, batch_id=batch)
    except EvalsiteError as exc:
        if exc.status_code == 404:
            raise Http404(exc.message) from None
        context["problem"] = exc.message
        return render(request, "dashboard/compare.html", context, status=400)
    context.update(dashboard.comparison(runs))
    context["batch"] = batch
    return render(request, "dashboard/compare.html", context)


@require_GET
@tenant_page
def trends(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """One metric over time, a line per configuration label, within a date range (the last 90 days)."""
    collection_slugs = list(
        Collection.objects.filter(tenant=tenant).order_by("slug").values_list("slug", flat=True)
    )
    context: dict[str, Any] = {"tenant": tenant, "days": dashboard.TREND_DAYS}
    if not collection_slugs:
        return render(request, "dashboard/trends.html", context)
    data = request.GET.copy()
    if not data.get("collection"):
        data["collection"] = dashboard.latest_run_collection(tenant=tenant, among=collection_slugs)
    date_from, date_to = dashboard.trend_window(None, None)
    data.setdefault("date_from", date_from.isoformat())
    data.setdefault("date_to", date_to.isoformat())
    form = TrendsForm(data, collections=collection_slugs)
    context["form"] = form
    if not form.is_valid():
        return render(request, "dashboard/trends.html", context, status=400)
    collection = _collection(tenant, form.cleaned_data["collection"])
    date_from, date_to = dashboard.trend_window(
        form.cleaned_data.get("date_from"), form.cleaned_data.get("date_to")
    )
    context.update(
        dashboard.trends(
            tenant=tenant,
            collection=collection,
            date_from=date_from,
            date_to=date_to,
            metric=form.cleaned_data.get("metric") or None,
            run_url=_run_url_maker(),
        )
    )
    context.update({"collection": collection, "date_from": date_from, "date_to": date_to})
    return render(request, "dashboard/trends.html", context)


def _run_url_maker() -> Callable[[uuid.UUID], str]:
    """A run's URL without a reverse() per point (a trend may draw thousands)."""
    placeholder = str(uuid.UUID(int=0))
    template = reverse("dashboard:run", args=[placeholder])
    return lambda pk: template.replace(placeholder, str(pk))
