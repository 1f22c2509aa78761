"""The query workbench's pages: the questions of a collection worst first, and one question under up to three
configurations side by side, whose knobs, grades and explain answer without a page reload (the page's script
posts to `columns`, `grade` and `undo`, which answer JSON). The work is evaluation.workbench's."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import allowed
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard.common_views import collection_for, tenant_page, tenant_poll
from evaluation.dashboard.workbench_reads import (
    SESSION_UNDO,
    TOPS,
    columns_context,
    knob_choices,
    ks_for,
    list_context,
    neighbours,
    raw_configs,
)
from evaluation.judgments.grades import live_rater
from evaluation.presets import preset_create
from evaluation.reports.batch_jobs import batch_job_create
from evaluation.retrieval.request import RetrievalRequest
from evaluation.workbench import grading
from evaluation.workbench.question import asked_entry, asked_query

UNDO_KEPT = 50


@require_GET
@tenant_page(Perm.VIEW)
def workbench(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """The collection's golden questions with their scores under a run or a configuration, worst first."""
    collection = collection_for(tenant, slug)
    return render(request, "dashboard/workbench.html", list_context(request.GET, tenant, collection))


@require_GET
@tenant_page(Perm.VIEW)
def workbench_question(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """One question (`entry`: a golden entry's key or id; or `q`: a query typed in), columns from `c` (each a
    configuration as JSON), shown `top` deep."""
    collection = collection_for(tenant, slug)
    raw = [c for c in request.GET.getlist("c")[:3]]
    try:
        configs = [json.loads(c) for c in raw] or [{"label": "FullText"}]
    except ValueError:
        messages.error(request, "A column's configuration in the address was not JSON; the default is shown.")
        configs = [{"label": "FullText"}]
    state = {
        "entry": request.GET.get("entry", "")[:300],
        "question": request.GET.get("q", "")[:2000],
        "configs": configs,
        "top": int(request.GET["top"]) if request.GET.get("top") in {str(t) for t in TOPS} else TOPS[0],
        "explain": request.GET.get("explain") == "1",
    }
    try:
        context = columns_context(request, tenant, collection, state)
    except EvalsiteError as exc:
        if exc.status_code == 404:
            raise
        messages.error(request, exc.message)
        state["configs"] = [{"label": "FullText"}]
        context = columns_context(request, tenant, collection, state)
    context.update(
        tenant=tenant, collection=collection, state_json=state, knobs=knob_choices(tenant, collection),
        may_judge=allowed(request.user, Perm.JUDGE, tenant), may_curate=allowed(request.user, Perm.CURATE, tenant),
        may_evaluate=allowed(request.user, Perm.EVALUATE, tenant), tops=TOPS,
        around=neighbours(request.GET, tenant, collection, str(context["asked"].entry.pk))
        if context["asked"].entry and "list" in request.GET else None,
    )  # fmt: skip
    return render(request, "dashboard/workbench_question.html", context)


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        raise EvalsiteError("validation-error", "The body is not JSON.", details={"field": "body"}) from None
    if not isinstance(body, dict):
        raise EvalsiteError("validation-error", "The body is a JSON object.", details={"field": "body"})
    return body


@require_POST
@tenant_poll(Perm.VIEW)
def workbench_columns(request: HttpRequest, tenant: Tenant, slug: str) -> dict[str, Any]:
    """The columns for the page's current state (its knobs as they are now), rendered, and the page's address."""
    collection = collection_for(tenant, slug)
    state = _body(request)
    context = columns_context(request, tenant, collection, state)
    context.update(tenant=tenant, collection=collection, may_judge=allowed(request.user, Perm.JUDGE, tenant))
    html = render_to_string("dashboard/_workbench_columns.html", context, request=request)
    query = [("entry" if context["asked"].entry else "q", state.get("entry") or state.get("question") or "")]
    query += [("c", json.dumps(c, separators=(",", ":"))) for c in context["raw"]]
    query += [("top", str(context["top"]))] + ([("explain", "1")] if context["explain"] else [])
    url = reverse("dashboard:workbench-question", args=[collection.slug]) + "?" + urlencode(query)
    return {
        "html": html,
        "url": url,
        "configs": context["raw"],
        "metrics": [c["metrics"] for c in context["columns"]],
    }


@require_POST
@tenant_poll(Perm.JUDGE)
def workbench_grade(request: HttpRequest, tenant: Tenant, slug: str) -> dict[str, Any]:
    """The signed-in person's grade of a shown document for the golden question, stored as their judgment."""
    collection = collection_for(tenant, slug)
    body = _body(request)
    asked = asked_entry(collection, str(body.get("entry", ""))[:300])
    assert asked.entry is not None
    document_id = str(body.get("document_id", ""))
    rater = live_rater(request.user.get_username())
    grade = body.get("grade")
    if (error := grading.grade_error(collection, grade)) is not None:
        raise error
    assert isinstance(grade, int)  # grade_error admits nothing else
    previous = grading.grade_record(
        collection=collection, entry=asked.entry, document_id=document_id, grade=grade, rater=rater,
        actor=actor_user(request.user),
    )  # fmt: skip
    steps = request.session.get(SESSION_UNDO, [])[-(UNDO_KEPT - 1) :]
    request.session[SESSION_UNDO] = [*steps, [collection.slug, str(asked.entry.pk), document_id, previous]]
    return {"stored": True, "document_id": document_id, "grade": body.get("grade")}


@require_POST
@tenant_poll(Perm.JUDGE)
def workbench_undo(request: HttpRequest, tenant: Tenant, slug: str) -> dict[str, Any]:
    """The person's last workbench grade in this collection taken back."""
    collection = collection_for(tenant, slug)
    steps = request.session.get(SESSION_UNDO, [])
    mine = [i for i, step in enumerate(steps) if step[0] == collection.slug]
    if not mine:
        return {"undone": False}
    _, entry_id, document_id, previous = steps.pop(mine[-1])
    request.session[SESSION_UNDO] = steps
    entry = asked_entry(collection, entry_id).entry
    assert entry is not None
    grading.grade_undo(
        collection=collection, entry=entry, document_id=document_id, rater=live_rater(request.user.get_username()),
        previous=previous, actor=actor_user(request.user),
    )  # fmt: skip
    return {"undone": True, "document_id": document_id}


def _back(request: HttpRequest, slug: str) -> str:
    back = request.POST.get("back", "")
    return (
        back
        if back.startswith("/") and not back.startswith("//")
        else reverse("dashboard:workbench", args=[slug])
    )


@require_POST
@tenant_page(Perm.CURATE)
def workbench_apply(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """People's grades of this question that the golden set lacks, written into its entry."""
    collection = collection_for(tenant, slug)
    entry = asked_entry(collection, request.POST.get("entry", "")[:300]).entry
    assert entry is not None
    try:
        written = grading.question_apply(entry=entry, actor=actor_user(request.user))
        messages.success(request, f"{written} judgments written into the golden set.")
    except EvalsiteError as exc:
        messages.error(request, f"Nothing was written: {exc.message}")
    return redirect(_back(request, slug))


@require_POST
@tenant_page(Perm.CURATE)
def workbench_add(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """A query typed in, added to the golden set with the documents graded on the page."""
    collection = collection_for(tenant, slug)
    asked = asked_query(request.POST.get("question", ""))
    try:
        draft = json.loads(request.POST.get("grades") or "{}")
        if not isinstance(draft, dict) or len(draft) > 100:
            raise ValueError
        entry = grading.query_add(
            collection=collection, question=asked.question, grades=draft,
            rater=live_rater(request.user.get_username()), actor=actor_user(request.user),
        )  # fmt: skip
    except ValueError:
        messages.error(request, "grades: expected the page's grades (at most 100 documents).")
        return redirect(_back(request, slug))
    except EvalsiteError as exc:
        messages.error(request, f"Not added: {exc.message}")
        return redirect(_back(request, slug))
    messages.success(request, "The question is in the golden set with the documents you graded.")
    back = _back(request, slug).replace("q=", "was=", 1)
    return redirect(reverse("dashboard:workbench-question", args=[slug]) + "?entry=" + str(entry.pk)
                    + ("&" + back.split("?", 1)[1] if "?" in back else ""))  # fmt: skip


def _posted_configs(request: HttpRequest, tenant: Tenant) -> list:
    try:
        raw = json.loads(request.POST.get("configs") or "[]")
    except ValueError:
        raise EvalsiteError("validation-error", "configs: not JSON.", details={"field": "configs"}) from None
    return raw_configs(tenant, raw)


@require_POST
@tenant_page(Perm.EVALUATE)
def workbench_evaluate(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """The columns' configurations evaluated over the whole golden set as one batch (the first the baseline):
    the job's page, then Compare."""
    collection = collection_for(tenant, slug)
    try:
        configs = _posted_configs(request, tenant)
        top = int(request.POST.get("top") or TOPS[0])
        ks = ks_for(top)
        job = batch_job_create(
            tenant=tenant, collections=[collection], request=RetrievalRequest(ks=ks, configs=configs),
            actor=actor_user(request.user),
        )  # fmt: skip
    except (EvalsiteError, ValueError) as exc:
        messages.error(request, f"Not evaluated: {getattr(exc, 'message', exc)}")
        return redirect(_back(request, slug))
    return redirect("dashboard:job", job_id=job.pk)


@require_POST
@tenant_page(Perm.CURATE)
def workbench_preset(request: HttpRequest, tenant: Tenant, slug: str) -> HttpResponse:
    """A column's configuration saved as a preset of the tenant."""
    collection = collection_for(tenant, slug)
    try:
        (config,) = _posted_configs(request, tenant)[:1]
        preset = preset_create(
            tenant=tenant, name=request.POST.get("name", ""), config=config.request(), actor=actor_user(request.user),
            collection=collection,
        )  # fmt: skip
        messages.success(request, f"Saved as the preset {preset.name!r}.")
    except (EvalsiteError, ValueError) as exc:
        messages.error(request, f"Not saved: {getattr(exc, 'message', exc)}")
    return redirect(_back(request, slug))
