"""Judging in the dashboard: a pool made from Compare ("judge what these runs found"), its page, and the
workspace where a rater grades one pooled document at a time, by keyboard (0-3, x: cannot judge, j/k: next and
previous, u: undo). The rater is the signed-in user; they never see which run found a document or where."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard.common_views import collection_for, tenant_page
from evaluation.judgments import apply, assignment, pools
from evaluation.judgments.grades import GRADE_MEANING, live_rater
from evaluation.judgments.highlight import marked_spans
from evaluation.models import JudgmentPool, PoolItem
from evaluation.runs.slices import EVERY

DEFAULT_DEPTH = 10


@require_POST
@tenant_page(Perm.CURATE)
def pool_new(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """A pool of what the selected runs found that nobody judged (Compare's "judge what these runs found")."""
    collection = collection_for(tenant, request.POST.get("collection", ""))
    back = request.POST.get("back") or reverse("dashboard:compare")
    try:
        depth = int(request.POST.get("depth") or DEFAULT_DEPTH)
        raters = int(request.POST.get("raters_per_item") or 1)
        if not 1 <= depth <= pools.MAX_DEPTH or not 1 <= raters <= pools.MAX_RATERS_PER_ITEM:
            raise ValueError
    except ValueError:
        messages.error(
            request,
            f"Depth is a whole number from 1 to {pools.MAX_DEPTH}, raters per item from 1 to "
            f"{pools.MAX_RATERS_PER_ITEM}.",
        )
        return redirect(back if back.startswith("/") else reverse("dashboard:compare"))
    try:
        pool = pools.pool_create(
            tenant=tenant, collection=collection, run_ids=request.POST.getlist("run")[: pools.MAX_POOL_RUNS],
            depth=depth, raters_per_item=raters, subset=EVERY, actor=actor_user(request.user),
        )  # fmt: skip
    except EvalsiteError as exc:
        if exc.status_code == 404:
            raise Http404(exc.message) from None
        messages.error(request, f"No pool was made: {exc.message}")
        return redirect(back if back.startswith("/") else reverse("dashboard:compare"))
    messages.success(request, f"A pool of {pool.items.count()} documents to judge.")
    return redirect("dashboard:pool", pool_id=pool.pk)


def _pool(tenant: Tenant, pool_id: str) -> JudgmentPool:
    return pools.pool_get(tenant=tenant, pool_id=pool_id)  # NotFound: the 404 page (tenant_page)


@require_GET
@tenant_page(Perm.VIEW)
def pool_detail(request: HttpRequest, tenant: Tenant, pool_id: str) -> HttpResponse:
    pool = _pool(tenant, pool_id)
    context = {
        "tenant": tenant,
        "pool": pool,
        "collection": pool.collection,
        "runs": pool.runs.order_by("created_at"),
        "progress": pools.pool_progress(pool),
        "agreement": pools.pool_agreement(pool),
        "mine": len(pools.rater_items(pool=pool, rater=live_rater(request.user.get_username()))),
        "applications": list(pool.applications.all()),
    }
    return render(request, "dashboard/pool.html", context)


def highlighted(text: str, question: str) -> SafeString:
    """The text, escaped, with the question's words in <mark>."""
    parts = [
        f"<mark>{escape(run)}</mark>" if hit else escape(run) for run, hit in marked_spans(text, question)
    ]
    return mark_safe("".join(parts))  # noqa: S308  (every run escaped above)


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.JUDGE)
def pool_judge(request: HttpRequest, tenant: Tenant, pool_id: str) -> HttpResponse:
    """The workspace: GET shows the rater's item (?position= one they were given, else the next); POST stores
    their grade of the item and moves on."""
    pool = _pool(tenant, pool_id)
    rater = live_rater(request.user.get_username())
    if request.method == "POST":
        return _judge_post(request, pool, rater)
    mine = pools.rater_items(pool=pool, rater=rater)
    item: PoolItem | None = None
    if request.GET.get("position", "").isdigit() and len(request.GET["position"]) < 10:
        item = next((i for i in mine if i.position == int(request.GET["position"])), None)
        if item is None:
            raise Http404("No item of yours at that place in the pool.")
    else:
        item = assignment.pool_next(pool=pool, rater=rater)
        mine = pools.rater_items(pool=pool, rater=rater) if item is not None else mine
    progress = pools.pool_progress(pool)
    context: dict[str, Any] = {
        "tenant": tenant,
        "pool": pool,
        "collection": pool.collection,
        "progress": progress,
        "judged_by_me": progress.raters.get(rater, 0),
        "grades": list(GRADE_MEANING.items()),
    }
    if item is not None:
        body = pools.item_view(item)
        place = [i.position for i in mine].index(item.position)
        context.update(
            item=item,
            body=body,
            text=highlighted(body["text"], body["question"]),
            judgment=pools.judgment_of(pool=pool, item=item, rater=rater),
            previous=mine[place - 1].position if place > 0 else None,
            following=mine[place + 1].position if place + 1 < len(mine) else None,
        )
    return render(request, "dashboard/judge.html", context)


def _judge_post(request: HttpRequest, pool: JudgmentPool, rater: str) -> HttpResponse:
    position = request.POST.get("position", "")
    item = None
    if position.isdigit() and len(position) < 10:  # a position as the form sends it; anything else finds none
        item = pool.items.filter(position=int(position)).select_related("entry").first()
    grade_text = request.POST.get("grade", "")
    if item is None or grade_text not in {*map(str, GRADE_MEANING), "cannot"}:
        messages.error(request, "Choose a grade from 0 to 3, or cannot judge.")
        return redirect("dashboard:pool-judge", pool_id=pool.pk)
    row = pools.JudgmentRow(
        where="judgment",
        question_id=item.entry.key or str(item.entry.pk),
        document_id=item.document_id,
        grade=None if grade_text == "cannot" else int(grade_text),
        rater=rater,
        note=request.POST.get("note", "")[:2000],
    )
    try:
        pools.judgments_record(
            collection=pool.collection, rows=[row], actor=actor_user(request.user), pool=pool
        )
    except EvalsiteError as exc:
        messages.error(request, f"Not stored: {exc.message}")
        return redirect(f"{reverse('dashboard:pool-judge', args=[pool.pk])}?position={item.position}")
    return redirect("dashboard:pool-judge", pool_id=pool.pk)


@require_POST
@tenant_page(Perm.JUDGE)
def pool_undo(request: HttpRequest, tenant: Tenant, pool_id: str) -> HttpResponse:
    """The rater's latest judgment in the pool taken back; its item is shown again."""
    pool = _pool(tenant, pool_id)
    item = pools.judgment_undo(
        pool=pool, rater=live_rater(request.user.get_username()), actor=actor_user(request.user)
    )
    if item is None:
        messages.info(request, "Nothing to undo.")
        return redirect("dashboard:pool-judge", pool_id=pool.pk)
    messages.info(request, "Your last judgment was taken back.")
    return redirect(f"{reverse('dashboard:pool-judge', args=[pool.pk])}?position={item.position}")


# --- into the golden set -----------------------------------------------------------------------------------

SHOWN_METRICS = ("ndcg", "recall", "judged", "ndcg_cond")  # at each run's largest k, then bpref


def before_after_rows(runs: list[dict]) -> list[dict]:
    """Each run's few headline metrics (at its largest k) before and after, with the change."""
    rows = []
    for run in runs:
        ks = [int(name.split("@")[1]) for name in run["before"] if name.startswith("ndcg@")]
        names = [f"{base}@{max(ks)}" for base in SHOWN_METRICS] if ks else []
        names += ["bpref"]
        cells = [
            (name, run["before"].get(name), run["after"].get(name))
            for name in names
            if name in run["before"] or name in run["after"]
        ]
        rows.append(
            {**run, "cells": [(n, b, a, None if b is None or a is None else a - b) for n, b, a in cells]}
        )
    return rows


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.CURATE)
def pool_apply(request: HttpRequest, tenant: Tenant, pool_id: str) -> HttpResponse:
    """GET: what writing the pool's grades into the golden set changes, run by run; POST: write them."""
    pool = _pool(tenant, pool_id)
    actor = actor_user(request.user)
    if request.method == "POST":
        shown = request.POST.get("judgments", "")
        if shown != str(apply.pool_apply(pool=pool, actor=actor, dry_run=True)["judgments"]):
            messages.error(
                request, "The pool's grades changed since the preview: nothing was written. Look again."
            )
            return redirect("dashboard:pool-apply", pool_id=pool.pk)
        summary = apply.pool_apply(pool=pool, actor=actor, dry_run=False)
        if summary["application_id"]:
            messages.success(
                request,
                f"{summary['judgments']} judgments written into {summary['entries']} golden entries "
                f"({summary['relevant']} relevant, {summary['not_relevant']} not relevant).",
            )
        else:
            messages.info(request, "Nothing to write: no graded document the golden set has not judged.")
        return redirect("dashboard:pool", pool_id=pool.pk)
    summary = apply.pool_apply(pool=pool, actor=actor, dry_run=True)
    context = {
        "tenant": tenant,
        "pool": pool,
        "collection": pool.collection,
        "summary": summary,
        "rows": before_after_rows(summary["runs"]),
    }
    return render(request, "dashboard/pool_apply.html", context)


@require_POST
@tenant_page(Perm.CURATE)
def pool_revert(request: HttpRequest, tenant: Tenant, pool_id: str, application_id: str) -> HttpResponse:
    pool = _pool(tenant, pool_id)
    try:
        application = apply.application_revert(
            pool=pool, application_id=application_id, actor=actor_user(request.user)
        )
    except EvalsiteError as exc:
        if exc.status_code == 404:
            raise Http404(exc.message) from None
        messages.error(request, f"Not taken back: {exc.message}")
        return redirect("dashboard:pool", pool_id=pool.pk)
    messages.success(request, f"Taken back: {len(application.changes)} golden entries as they were before.")
    return redirect("dashboard:pool", pool_id=pool.pk)
