"""Judging in the dashboard: a pool made from Compare ("judge what these runs found"), its page, the
workspace where a rater grades one pooled document at a time, by keyboard (the collection's scale's grades, x:
cannot judge, s: skip, j/k: next and previous among their own items, u: undo), and the curator's page of the
items raters split on, to settle. The rater is the signed-in user; they never see which run found a document or
where."""

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
from evaluation.judgments import apply, assignment, pools, settle
from evaluation.judgments.grades import live_rater
from evaluation.judgments.highlight import marked_spans
from evaluation.models import JudgmentPool, PoolItem
from evaluation.runs.slices import EVERY
from goldenset.services.scales import collection_scale

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
    progress = pools.pool_progress(pool)
    context = {
        "tenant": tenant,
        "pool": pool,
        "collection": pool.collection,
        "runs": pool.runs.order_by("created_at"),
        "progress": progress,
        "rater_rows": [  # each person's judged count against the items the pool gave them
            {"rater": r, "judged": progress.raters.get(r, 0), "given": progress.given.get(r, 0)}
            for r in sorted({*progress.raters, *progress.given})
        ],
        "agreement": pools.pool_agreement(pool),
        "mine": len(pools.rater_items(pool=pool, rater=live_rater(request.user.get_username()))),
        "splits": len(settle.pool_splits(pool, settled_too=False)),
        "scale": collection_scale(pool.collection),
        "applications": list(pool.applications.all()),
    }
    return render(request, "dashboard/pool.html", context)


def highlighted(text: str, question: str) -> SafeString:
    """The text, escaped, with the question's words in <mark>."""
    parts = [
        f"<mark>{escape(run)}</mark>" if hit else escape(run) for run, hit in marked_spans(text, question)
    ]
    return mark_safe("".join(parts))  # noqa: S308  (every run escaped above)


SKIPS_KEPT = 1000  # the skipped positions a session remembers per pool


def _skips_key(pool: JudgmentPool) -> str:
    return f"judge-skips:{pool.pk}"


def skipped_positions(request: HttpRequest, pool: JudgmentPool) -> list[int]:
    """The positions this rater skipped in the pool, first skipped first (their session remembers them)."""
    kept = request.session.get(_skips_key(pool), [])
    return [p for p in kept if isinstance(p, int)] if isinstance(kept, list) else []


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.JUDGE)
def pool_judge(request: HttpRequest, tenant: Tenant, pool_id: str) -> HttpResponse:
    """The workspace: GET shows the rater's item (?position= one they were given, else the next new one, the
    ones they skipped last); POST stores their grade of the item (or their skip of it) and moves on."""
    pool = _pool(tenant, pool_id)
    rater = live_rater(request.user.get_username())
    if request.method == "POST":
        return _judge_post(request, pool, rater)
    mine = pools.rater_items(pool=pool, rater=rater)
    skips = skipped_positions(request, pool)
    item: PoolItem | None = None
    if request.GET.get("position", "").isdigit() and len(request.GET["position"]) < 10:
        item = next((i for i in mine if i.position == int(request.GET["position"])), None)
        if item is None:
            raise Http404("No item of yours at that place in the pool.")
    else:
        item = assignment.pool_next(pool=pool, rater=rater, skipped=skips)
        mine = pools.rater_items(pool=pool, rater=rater) if item is not None else mine
    progress = pools.pool_progress(pool)
    scale = collection_scale(pool.collection)
    context: dict[str, Any] = {
        "tenant": tenant,
        "pool": pool,
        "collection": pool.collection,
        "progress": progress,
        "judged_by_me": progress.raters.get(rater, 0),
        "scale": scale,
        "grades": list(scale.meaning.items()),
        "skipped": len(skips),
    }
    if item is not None:
        body = pools.item_view(item)
        place = [i.position for i in mine].index(item.position)
        judgment = pools.judgment_of(pool=pool, item=item, rater=rater)
        context.update(
            item=item,
            body=body,
            text=highlighted(body["text"], body["question"]),
            judgment=judgment,
            place=place + 1,
            given=len(mine),
            back_from_skip=judgment is None and item.position in skips and "position" not in request.GET,
            previous=mine[place - 1].position if place > 0 else None,
            following=mine[place + 1].position if place + 1 < len(mine) else None,
        )
    return render(request, "dashboard/judge.html", context)


def _judge_post(request: HttpRequest, pool: JudgmentPool, rater: str) -> HttpResponse:
    position = request.POST.get("position", "")
    item = None
    if position.isdigit() and len(position) < 10:  # a position as the form sends it; anything else finds none
        item = pool.items.filter(position=int(position)).select_related("entry").first()
    if item is not None and request.POST.get("skip"):
        return _skip(request, pool, rater, item)
    scale = collection_scale(pool.collection)
    grade_text = request.POST.get("grade", "")
    if item is None or grade_text not in {*map(str, scale.grades), "cannot"}:
        messages.error(
            request, f"Choose a grade from 0 to {scale.top} ({scale.name} scale), or cannot judge."
        )
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


def _skip(request: HttpRequest, pool: JudgmentPool, rater: str, item: PoolItem) -> HttpResponse:
    """Pass over one of the rater's items: nothing recorded, the item remembered (in their session) so that the
    next one is a new item; it comes back when nothing else is left."""
    if not item.assignments.filter(rater=rater).exists():
        raise Http404("No item of yours at that place in the pool.")
    skips = [p for p in skipped_positions(request, pool) if p != item.position]
    request.session[_skips_key(pool)] = [*skips, item.position][-SKIPS_KEPT:]
    messages.info(request, f"Skipped item {item.position + 1}: it comes back when nothing else is left.")
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


# --- the raters' splits, settled by a curator -------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.CURATE)
def pool_splits(request: HttpRequest, tenant: Tenant, pool_id: str) -> HttpResponse:
    """GET: the items the raters split on, their grades side by side by name; POST: a curator's settling grade
    of one (stored as their judgment, marked a settlement, which apply takes)."""
    pool = _pool(tenant, pool_id)
    scale = collection_scale(pool.collection)
    if request.method == "POST":
        position, grade = request.POST.get("position", ""), request.POST.get("grade", "")
        if not (position.isdigit() and len(position) < 10) or grade not in {str(g) for g in scale.grades}:
            messages.error(request, f"Choose an item and a grade from 0 to {scale.top} ({scale.name} scale).")
            return redirect("dashboard:pool-splits", pool_id=pool.pk)
        try:
            settle.split_settle(
                pool=pool, position=int(position), grade=int(grade),
                rater=live_rater(request.user.get_username()), actor=actor_user(request.user),
            )  # fmt: skip
        except EvalsiteError as exc:
            messages.error(request, f"Not settled: {exc.message}")
            return redirect("dashboard:pool-splits", pool_id=pool.pk)
        messages.success(request, f"Item {int(position) + 1} settled at {grade}.")
        return redirect("dashboard:pool-splits", pool_id=pool.pk)
    splits = settle.pool_splits(pool)
    context = {
        "tenant": tenant,
        "pool": pool,
        "collection": pool.collection,
        "scale": scale,
        "splits": [{"split": s, "body": pools.item_view(s.item)} for s in splits],
        "raters": sorted({r for s in splits for r in s.grades}),
        "open": sum(1 for s in splits if s.settled is None),
    }
    return render(request, "dashboard/pool_splits.html", context)
