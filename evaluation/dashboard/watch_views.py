"""Schedules and alerts in the dashboard: the tenant's schedules (cadence, next tick, the last verdict, run now)
and its alerts (firing first; acknowledged by a curator), each optionally of one collection. Schedules are set
over the API or `manage.py schedules`; the work is evaluation.watch's."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import allowed
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard.common_views import collection_for, paginate, safe_next, tenant_page
from evaluation.dashboard.watch_forms import ScheduleForm
from evaluation.models import Alert, AlertState, Schedule, ScheduleRun
from evaluation.watch import alerts, schedules
from goldenset.selectors import collections_list

PER_PAGE = 50


def _collection(request: HttpRequest, tenant: Tenant):
    slug = request.GET.get("collection", "")
    return collection_for(tenant, slug) if slug else None


@require_GET
@tenant_page(Perm.VIEW)
def schedules_page(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    collection = _collection(request, tenant)
    found = Schedule.objects.filter(tenant=tenant).select_related("collection").order_by("name")
    if collection is not None:
        found = found.filter(collection=collection)
    page = paginate(request, found, PER_PAGE)
    ticks: dict[uuid.UUID, ScheduleRun] = {}
    for tick in ScheduleRun.objects.filter(schedule__in=list(page)).order_by("schedule_id", "-tick_at"):
        ticks.setdefault(tick.schedule_id, tick)
    rows = [
        {"schedule": s, "cadence": schedules.cadence(s).describe(), "last": ticks.get(s.pk),
         "firing": s.alerts.filter(state=AlertState.FIRING).first()}
        for s in page
    ]  # fmt: skip
    context = {"tenant": tenant, "collection": collection, "rows": rows, "page_obj": page,
               "may_run": allowed(request.user, Perm.EVALUATE, tenant)}  # fmt: skip
    return render(request, "dashboard/schedules.html", context)


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.EVALUATE)
def schedule_new(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """A new schedule: the form, and on POST the schedule created (or the form again, its errors on their fields)."""
    slugs = list(collections_list(tenant=tenant).order_by("slug").values_list("slug", flat=True))
    form = ScheduleForm(
        request.POST or None, collections=slugs, initial={"collection": request.GET.get("collection")}
    )
    if request.method == "POST" and form.is_valid():
        try:
            schedule = schedules.schedule_create(
                tenant=tenant, collection=collection_for(tenant, form.cleaned_data["collection"]), data=form.body(),
                actor=actor_user(request.user),
            )  # fmt: skip
        except EvalsiteError as exc:
            if exc.status_code == 404:
                raise
            form.refused(exc)
        else:
            when = (
                f"{schedule.next_run_at:%Y-%m-%d %H:%M} UTC" if schedule.next_run_at else "never (disabled)"
            )
            messages.success(request, f"The schedule {schedule.name} runs next at {when}.")
            return redirect(reverse("dashboard:schedules") + "?collection=" + schedule.collection.slug)
    return render(request, "dashboard/schedule_new.html", {"tenant": tenant, "form": form})


@require_POST
@tenant_page(Perm.EVALUATE)
def schedule_delete(request: HttpRequest, tenant: Tenant, schedule_id: str) -> HttpResponse:
    schedule = schedules.schedule_get(tenant=tenant, schedule_id=schedule_id)
    schedules.schedule_delete(schedule=schedule, actor=actor_user(request.user))
    messages.success(request, f"The schedule {schedule.name} is deleted; its runs stay.")
    return redirect("dashboard:schedules")


@require_POST
@tenant_page(Perm.EVALUATE)
def schedule_run(request: HttpRequest, tenant: Tenant, schedule_id: str) -> HttpResponse:
    schedule = schedules.schedule_get(tenant=tenant, schedule_id=schedule_id)
    tick = schedules.schedule_run_now(schedule=schedule, actor=actor_user(request.user))
    messages.success(request, f"{schedule.name} runs now (its gate and alerts as on a tick).")
    return redirect("dashboard:job", job_id=tick.job_id)


@require_GET
@tenant_page(Perm.VIEW)
def alerts_page(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    collection = _collection(request, tenant)
    found = Alert.objects.filter(tenant=tenant).select_related("schedule", "collection", "fired_by")
    if collection is not None:
        found = found.filter(collection=collection)
    if request.GET.get("state") in AlertState.values:
        found = found.filter(state=request.GET["state"])
    page = paginate(request, found.prefetch_related("deliveries").order_by("state", "-fired_at"), PER_PAGE)
    context = {"tenant": tenant, "collection": collection, "page_obj": page, "alerts": list(page),
               "states": AlertState.values, "state": request.GET.get("state", ""),
               "may_acknowledge": allowed(request.user, Perm.CURATE, tenant)}  # fmt: skip
    return render(request, "dashboard/alerts.html", context)


@require_POST
@tenant_page(Perm.CURATE)
def alert_acknowledge(request: HttpRequest, tenant: Tenant, alert_id: str) -> HttpResponse:
    alert = alerts.alert_acknowledge(
        alert=alerts.alert_get(tenant=tenant, alert_id=alert_id), actor=actor_user(request.user)
    )
    messages.success(request, f"The alert of {alert.schedule.name} is acknowledged: no more reminders of it.")
    return redirect(safe_next(request, "/alerts/"))
