"""What runs produced: the runs list, one run and its questions, and its downloads."""

from __future__ import annotations

from dataclasses import asdict
from decimal import ROUND_HALF_UP, Decimal

from django.core.cache import cache
from django.core.paginator import Page as PaginatorPage
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.answers.verdicts import DIAGNOSIS_MEANING, PASS
from evaluation.dashboard.answer_question_reads import answer_view
from evaluation.dashboard.answer_runs_reads import (
    ANSWER_QUESTIONS_PER_PAGE,
    answer_overview,
    answer_question_results,
    answer_question_rows,
    is_answer_run,
    question_counts,
)
from evaluation.dashboard.common_reads import collection_slugs, ordered_metrics
from evaluation.dashboard.common_views import (
    collection_for,
    paginate,
    query_without_page,
    tenant_page,
    url_maker,
)
from evaluation.dashboard.compare_reads import MAX_COMPARE_RUNS
from evaluation.dashboard.forms import AnswerQuestionFilterForm, RunFilterForm
from evaluation.dashboard.label_colors import tenant_label_colors
from evaluation.dashboard.runs_reads import (
    RUN_QUESTIONS_PER_PAGE,
    RUNS_PER_PAGE,
    batch_siblings,
    neighbour_positions,
    question_diagnosis,
    question_documents,
    question_result,
    run_collections_present,
    run_csv,
    run_depth_k,
    run_json,
    run_labels,
    run_questions,
    run_rows,
    run_trec,
    runs_filtered,
)
from evaluation.dashboard.slices_reads import config_rows, run_slices, subset_text
from evaluation.models import EvaluationRun, RunKind
from evaluation.reports.diagnosis import RETRIEVAL_DIAGNOSIS_MEANING
from evaluation.reports.run_reports import ragas_rows, runs_junit
from evaluation.runs import selectors as run_selectors

# --- runs --------------------------------------------------------------------------------------------------


@require_GET
@tenant_page(Perm.VIEW)
def runs(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """Runs newest first, 50 a page, filtered by collection, label, kind and date; pick some to compare."""
    slugs = collection_slugs(tenant=tenant)
    form = RunFilterForm(request.GET or None, collections=slugs, labels=run_labels(tenant=tenant))
    filters = form.cleaned_data if form.is_bound and form.is_valid() else {}
    collection = collection_for(tenant, filters["collection"]) if filters.get("collection") else None
    queryset = runs_filtered(
        tenant=tenant,
        collection=collection,
        label=filters.get("label") or None,
        kind=filters.get("kind") or None,
        date_from=filters.get("date_from"),
        date_to=filters.get("date_to"),
    )
    page = paginate(request, queryset, RUNS_PER_PAGE)
    rows = run_rows(page.object_list, tenant_label_colors(tenant))
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
            "max_compare": MAX_COMPARE_RUNS,
        },
    )


def _run(tenant: Tenant, run_id: str, with_results: bool = False) -> EvaluationRun:
    return run_selectors.run_get(tenant=tenant, run_id=run_id, with_results=with_results)


@require_GET
@tenant_page(Perm.VIEW)
def run_detail(request: HttpRequest, tenant: Tenant, run_id: str) -> HttpResponse:
    run = _run(tenant, run_id)
    if is_answer_run(run):
        return _answer_run_detail(request, tenant, run)
    failures_only = request.GET.get("failures") == "1"
    page, table, question_total, failures = _question_table(request, run, failures_only)
    metrics = [(name, run.metrics[name]) for name in ordered_metrics(run.metrics)]
    colors = tenant_label_colors(tenant)
    return render(
        request,
        "dashboard/run.html",
        {
            "tenant": tenant,
            "run": run,
            "color": colors[run.label],
            "metrics": metrics,
            "config": config_rows(run.config),
            "slices": run_slices(run),
            "question_table": table,
            "page": page,
            "query": query_without_page(request),
            "question_total": question_total,
            "failures": failures,
            "failures_only": failures_only,
            "k": run_depth_k(run),
            "siblings": batch_siblings(tenant=tenant, run=run, colors=colors),
            "diagnoses": RETRIEVAL_DIAGNOSIS_MEANING,
            "content_changed": run_selectors.content_changed_since(run),
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
    key = f"evalsite:run-questions:v4:{run.pk}:{int(failures_only)}"
    found = cache.get(key)
    if found is None:
        questions = run_questions(run=run)
        failures = sum(1 for q in questions if q.diagnosis != PASS)
        shown = [q for q in questions if q.diagnosis != PASS] if failures_only else questions
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
    page = paginate(request, rows, RUN_QUESTIONS_PER_PAGE)
    page_key = f"{key}:page:{page.number}"
    table = cache.get(page_key)
    if table is None:
        table = (
            render_to_string(
                "dashboard/_run_questions.html", {"rows": page.object_list, "k": run_depth_k(run)}
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
    counts = question_counts(run)
    diagnoses, outcomes = counts.diagnoses, counts.outcomes
    diagnosis, outcome = filters.get("diagnosis") or None, filters.get("outcome") or None
    results = answer_question_results(run=run, diagnosis=diagnosis, outcome=outcome)
    page = paginate(
        request, results, ANSWER_QUESTIONS_PER_PAGE, count=counts.kept(diagnosis=diagnosis, outcome=outcome)
    )
    params = data.copy()
    params.pop("failures", None)
    params.pop("page", None)
    colors = tenant_label_colors(tenant)
    return render(
        request,
        "dashboard/answer_run.html",
        {
            "tenant": tenant,
            "run": run,
            "color": colors[run.label],
            "overview": answer_overview(run, diagnoses),
            "form": form,
            "filters": filters,
            "filtered": any(filters.values()),
            "page": page,
            "questions": answer_question_rows(page.object_list),
            "query": params.urlencode(),
            "question_total": sum(diagnoses.values()),
            "diagnosis_counts": diagnoses,
            "outcome_counts": outcomes,
            "diagnoses": DIAGNOSIS_MEANING,
            "siblings": batch_siblings(tenant=tenant, run=run, colors=colors),
            "slices": run_slices(run),
            "subset": subset_text(run.config if isinstance(run.config, dict) else {}),
        },
    )


@require_GET
@tenant_page(Perm.VIEW)
def run_question(request: HttpRequest, tenant: Tenant, run_id: str, number: int) -> HttpResponse:
    """Question `number` of a run, counted from 1 as its pages show it (0, from before links counted from 1,
    is a 404: no question has that number)."""
    run = _run(tenant, run_id)
    position = number - 1
    result = question_result(run=run, position=position) if position >= 0 else None
    if result is None:
        raise Http404("No such question in this run.")
    ranked, missing = question_documents(tenant=tenant, run=run, result=result)
    diagnosis = question_diagnosis(
        result.diagnosis, result.first_relevant_rank, result.missing_document_ids, result.error
    )
    previous, following = (
        None if p is None else p + 1 for p in neighbour_positions(run=run, position=position)
    )
    context = {
        "tenant": tenant,
        "run": run,
        "color": tenant_label_colors(tenant)[run.label],
        "result": result,
        "diagnosis": diagnosis,
        "ranked": ranked,
        "missing": missing,
        "expected_total": len([g for g in result.expected.values() if g > 0]),
        "previous": previous,
        "following": following,
        "linkable": set(run_collections_present(tenant=tenant, run=run)),
    }
    if is_answer_run(run):
        documents = {d.document_id: (d.collection_slug, d.external_id, d.exists) for d in ranked + missing}
        context["view"] = answer_view(result, document_ids=documents)
        context["diagnosis_text"] = DIAGNOSIS_MEANING.get(diagnosis, "")
        return render(request, "dashboard/answer_question.html", context)
    context["metrics"] = [(name, result.metrics[name]) for name in ordered_metrics(result.metrics)]
    context["diagnosis_text"] = RETRIEVAL_DIAGNOSIS_MEANING.get(diagnosis, "")
    return render(request, "dashboard/question.html", context)


@require_GET
@tenant_page(Perm.VIEW)
def run_download(request: HttpRequest, tenant: Tenant, run_id: str, fmt: str) -> HttpResponse:
    run = _run(tenant, run_id, with_results=fmt == "json")
    name = f"run-{slugify(run.label) or 'run'}-{str(run.pk)[:8]}"
    if fmt == "json":
        response = HttpResponse(run_json(run), content_type="application/json; charset=utf-8")
        filename = f"{name}.json"
    elif fmt == "csv":
        response = HttpResponse(run_csv(run), content_type="text/csv; charset=utf-8")
        filename = f"{name}.csv"
    elif fmt == "junit":
        response = HttpResponse(runs_junit([run]), content_type="application/xml; charset=utf-8")
        filename = f"{name}.junit.xml"
    elif fmt == "ragas":
        if run.kind != RunKind.ANSWERS:
            raise Http404("Ragas rows are an answer run's.")
        response = HttpResponse(ragas_rows(run), content_type="application/jsonl; charset=utf-8")
        filename = f"{name}.ragas.jsonl"
    else:
        response = HttpResponse(run_trec(run), content_type="text/plain; charset=utf-8")
        filename = f"{name}.trec"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
