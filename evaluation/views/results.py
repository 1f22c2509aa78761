"""What runs produced: the runs list, one run and its questions, its downloads, Compare and Trends."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import asdict
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.core.cache import cache
from django.core.paginator import Page as PaginatorPage
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from evaluation import charts, dashboard
from evaluation import selectors as run_selectors
from evaluation.forms import AnswerQuestionFilterForm, RunFilterForm, TrendsForm
from evaluation.models import EvaluationRun
from evaluation.views.common import collection_for, paginate, query_without_page, tenant_page, url_maker
from goldenset.errors import EvalsiteError
from goldenset.models import Collection, Tenant

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
    collection = collection_for(tenant, filters["collection"]) if filters.get("collection") else None
    queryset = dashboard.runs_filtered(
        tenant=tenant,
        collection=collection,
        label=filters.get("label") or None,
        kind=filters.get("kind") or None,
        date_from=filters.get("date_from"),
        date_to=filters.get("date_to"),
    )
    page = paginate(request, queryset, dashboard.RUNS_PER_PAGE)
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
            "query": query_without_page(request),
            "max_compare": dashboard.MAX_COMPARE_RUNS,
        },
    )


def _run(tenant: Tenant, run_id: str, with_results: bool = False) -> EvaluationRun:
    return run_selectors.run_get(tenant=tenant, run_id=run_id, with_results=with_results)


def _siblings(tenant: Tenant, run: EvaluationRun) -> list[dict[str, Any]]:
    siblings = (
        EvaluationRun.objects.filter(tenant=tenant, batch_id=run.batch_id)
        .exclude(pk=run.pk)
        .order_by("label")
        .values_list("pk", "label")
    )
    return [{"pk": pk, "label": label, "color": charts.label_color(label)} for pk, label in siblings]


@require_GET
@tenant_page
def run_detail(request: HttpRequest, tenant: Tenant, run_id: str) -> HttpResponse:
    run = _run(tenant, run_id)
    if dashboard.is_answer_run(run):
        return _answer_run_detail(request, tenant, run)
    failures_only = request.GET.get("failures") == "1"
    page, table, question_total, failures = _question_table(request, run, failures_only)
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
            "question_table": table,
            "page": page,
            "query": query_without_page(request),
            "question_total": question_total,
            "failures": failures,
            "failures_only": failures_only,
            "k": dashboard.run_depth_k(run),
            "siblings": _siblings(tenant, run),
            "diagnoses": dashboard.DIAGNOSES,
        },
    )


QUESTION_TABLE_SECONDS = 3600


def _question_table(
    request: HttpRequest, run: EvaluationRun, failures_only: bool
) -> tuple[PaginatorPage, str, int, int]:
    """One page of a retrieval run's questions table (HTML; empty when no question is shown), the page, the
    run's question count and its failures. A finished run never changes, so its rows are read once per run and
    filter, and each page rendered once, then cached: the page of a 600-question run cost 136 ms of CPU a view,
    most of it this table (load_bench)."""
    key = f"evalsite:run-questions:v3:{run.pk}:{int(failures_only)}"
    found = cache.get(key)
    if found is None:
        questions = dashboard.run_questions(run=run)
        failures = sum(1 for q in questions if q.diagnosis != "pass")
        shown = [q for q in questions if q.diagnosis != "pass"] if failures_only else questions
        question_url = url_maker("dashboard:run-question", run.pk, marker=987654321)
        rows = [
            {
                **asdict(q),
                "url": question_url(q.position + 1),
                "recall": three_places(q.recall),
                "ndcg": three_places(q.ndcg),
                "mrr": three_places(q.mrr),
            }
            for q in shown
        ]
        found = (rows, len(questions), failures)
        cache.set(key, found, QUESTION_TABLE_SECONDS)
    rows, total, failures = found
    page = paginate(request, rows, dashboard.RUN_QUESTIONS_PER_PAGE)
    page_key = f"{key}:page:{page.number}"
    table = cache.get(page_key)
    if table is None:
        table = (
            render_to_string(
                "dashboard/_run_questions.html", {"rows": page.object_list, "k": dashboard.run_depth_k(run)}
            )
            if page.object_list
            else ""
        )
        cache.set(page_key, str(table), QUESTION_TABLE_SECONDS)
    return page, mark_safe(table), total, failures


def three_places(value: float | None) -> str:
    """As the template filter floatformat:3 writes it (half up from the decimal repr), at a fraction of its cost."""
    if value is None:
        return ""
    return str(Decimal(repr(value)).quantize(_THOUSANDTH, rounding=ROUND_HALF_UP))


_THOUSANDTH = Decimal("0.001")


def _answer_run_detail(request: HttpRequest, tenant: Tenant, run: EvaluationRun) -> HttpResponse:
    """An answer run: its score, mode, every metric with its method and exclusions, refusal both ways,
    diagnoses, usage and configuration; its questions filtered by diagnosis and pass / fail, 100 a page."""
    data = request.GET.copy()
    if data.get("failures") == "1" and not data.get("outcome"):
        data["outcome"] = "failed"  # the retrieval page's "failures only" link, kept working
    form = AnswerQuestionFilterForm(data)
    filters = form.cleaned_data if form.is_valid() else {}
    diagnoses, outcomes = dashboard.question_counts(run)
    results = dashboard.answer_question_results(
        run=run, diagnosis=filters.get("diagnosis") or None, outcome=filters.get("outcome") or None
    )
    page = paginate(request, results, dashboard.ANSWER_QUESTIONS_PER_PAGE)
    params = data.copy()
    params.pop("failures", None)
    params.pop("page", None)
    return render(
        request,
        "dashboard/answer_run.html",
        {
            "tenant": tenant,
            "run": run,
            "color": charts.label_color(run.label),
            "overview": dashboard.answer_overview(run, diagnoses),
            "form": form,
            "filters": filters,
            "filtered": any(filters.values()),
            "page": page,
            "questions": dashboard.answer_question_rows(page.object_list),
            "query": params.urlencode(),
            "question_total": sum(diagnoses.values()),
            "diagnosis_counts": diagnoses,
            "outcome_counts": outcomes,
            "diagnoses": dashboard.ANSWER_DIAGNOSES,
            "siblings": _siblings(tenant, run),
        },
    )


@require_GET
@tenant_page
def run_question(request: HttpRequest, tenant: Tenant, run_id: str, number: int) -> HttpResponse:
    """Question `number` of a run, counted from 1 as its pages show it (0, from before links counted from 1,
    is a 404: no question has that number)."""
    run = _run(tenant, run_id)
    position = number - 1
    result = dashboard.question_result(run=run, position=position) if position >= 0 else None
    if result is None:
        raise Http404("No such question in this run.")
    ranked, missing = dashboard.question_documents(tenant=tenant, run=run, result=result)
    diagnosis = dashboard.question_diagnosis(
        result.diagnosis, result.first_relevant_rank, result.missing_document_ids
    )
    previous, following = (
        None if p is None else p + 1 for p in dashboard.neighbour_positions(run=run, position=position)
    )
    collections = {c.slug for c in Collection.objects.filter(tenant=tenant, slug__in=run.collection_ids)}
    if dashboard.is_answer_run(run):
        documents = {d.document_id: (d.collection_slug, d.external_id, d.exists) for d in ranked + missing}
        return render(
            request,
            "dashboard/answer_question.html",
            {
                "tenant": tenant,
                "run": run,
                "color": charts.label_color(run.label),
                "result": result,
                "view": dashboard.answer_view(result, document_ids=documents),
                "diagnosis": diagnosis,
                "diagnosis_text": dashboard.ANSWER_DIAGNOSES.get(diagnosis, ""),
                "ranked": ranked,
                "missing": missing,
                "expected_total": len([g for g in result.expected.values() if g > 0]),
                "previous": previous,
                "following": following,
                "linkable": collections,
            },
        )
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
        context["problem_code"] = exc.code
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
    collection = collection_for(tenant, form.cleaned_data["collection"])
    date_from, date_to = dashboard.trend_window(
        form.cleaned_data.get("date_from"), form.cleaned_data.get("date_to")
    )
    context.update(
        dashboard.trend_report(
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
