"""Schedules and alerts over REST: /search/evaluate/schedules (create, list, get, patch, delete, run now) and
/alerts (list, acknowledge). The work is evaluation.watch's."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.api.views import read_strictly
from evaluation.models import Alert, AlertState, Schedule, ScheduleRun
from evaluation.watch import alerts, schedules
from goldenset.api.base import TenantAPIView, read
from goldenset.api.serializers import JobAcceptedOut, TenantIn, error_responses
from goldenset.selectors import collection_get

TENANT_FIELDS = ("cluster_id", "tenant_id")


class ScheduleIn(TenantIn):
    collection_id = serializers.CharField()
    name = serializers.CharField(max_length=100)
    configs = serializers.JSONField(
        required=False, allow_null=True, help_text="As /search/evaluate's (presets, targets)."
    )
    ks = serializers.JSONField(required=False, allow_null=True)
    tags = serializers.JSONField(
        required=False, allow_null=True, help_text="The golden subset asked, as /search/evaluate's."
    )
    origin = serializers.JSONField(required=False, allow_null=True)
    reviewed_only = serializers.JSONField(required=False, allow_null=True)
    skip_unreviewed_generated = serializers.JSONField(required=False, allow_null=True)
    cron = serializers.CharField(required=False, allow_null=True, help_text='Five fields, e.g. "0 3 * * *".')
    every_minutes = serializers.JSONField(required=False, allow_null=True, help_text="Instead of cron.")
    timezone = serializers.CharField(
        required=False, allow_null=True, help_text='IANA, e.g. "Europe/Paris"; default UTC.'
    )
    gate = serializers.JSONField(
        help_text='{"metric": "ndcg@10", "min": 0.5, "max_drop": 0.02, "check_drop": true}'
    )
    channels = serializers.JSONField(
        required=False, allow_null=True,
        help_text='[{"kind": "webhook", "url", "format": "json" | "slack"} | {"kind": "email", "to"}]',
    )  # fmt: skip
    remind_after_minutes = serializers.JSONField(required=False, allow_null=True)
    enabled = serializers.JSONField(required=False, allow_null=True)


class SchedulePatchIn(ScheduleIn):
    collection_id = None  # type: ignore[assignment]
    name = serializers.CharField(max_length=100, required=False)
    gate = serializers.JSONField(required=False)


class ScheduleOut(serializers.Serializer):
    schedule_id = serializers.CharField()
    collection_id = serializers.CharField()
    name = serializers.CharField()
    configs = serializers.JSONField()
    ks = serializers.ListField(child=serializers.IntegerField())
    subset = serializers.DictField()
    cron = serializers.CharField(allow_null=True)
    every_minutes = serializers.IntegerField(allow_null=True)
    timezone = serializers.CharField()
    gate = serializers.DictField()
    channels = serializers.ListField(
        child=serializers.DictField(),
        help_text="A webhook's URL shown to its origin: it is often its credential.",
    )
    remind_after_minutes = serializers.IntegerField()
    enabled = serializers.BooleanField()
    next_run_at = serializers.DateTimeField(allow_null=True)
    last_tick = serializers.DictField(allow_null=True, help_text="{tick_at, passed, batch_id, job_id}")
    created_by = serializers.CharField()


class AlertOut(serializers.Serializer):
    alert_id = serializers.CharField()
    collection_id = serializers.CharField()
    schedule_id = serializers.CharField()
    schedule = serializers.CharField()
    state = serializers.ChoiceField(choices=AlertState.choices)
    reasons = serializers.ListField(child=serializers.DictField())
    fired_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    acknowledged_by = serializers.CharField(allow_blank=True)
    acknowledged_at = serializers.DateTimeField(allow_null=True)
    deliveries = serializers.ListField(
        child=serializers.DictField(), help_text="{event, channel, state, attempts}"
    )


class ListIn(serializers.Serializer):
    cluster_id = serializers.CharField(required=False)
    tenant_id = serializers.CharField(required=False)
    collection_id = serializers.CharField(required=False)


class AlertListIn(ListIn):
    state = serializers.ChoiceField(choices=AlertState.choices, required=False)


def shown_channel(channel: dict) -> dict:
    """A channel as the API shows it: a webhook's URL is often its credential (a Slack incoming webhook's is), so
    only its origin is shown; whoever set it knows the rest."""
    if channel.get("kind") != "webhook":
        return channel
    url = str(channel.get("url", ""))
    parts = url.split("/", 3)
    return {**channel, "url": "/".join(parts[:3]) + ("/…" if len(parts) > 3 else "")}


def schedule_out(schedule: Schedule) -> dict:
    last = ScheduleRun.objects.filter(schedule=schedule).order_by("-tick_at").first()
    return {
        "schedule_id": str(schedule.pk), "collection_id": schedule.collection.slug, "name": schedule.name,
        "configs": schedule.configs, "ks": schedule.ks, "subset": schedule.subset, "cron": schedule.cron or None,
        "every_minutes": schedule.every_minutes, "timezone": schedule.timezone, "gate": schedule.gate,
        "channels": [shown_channel(c) for c in schedule.channels],
        "remind_after_minutes": schedule.remind_after_minutes,
        "enabled": schedule.enabled, "next_run_at": schedule.next_run_at, "created_by": schedule.created_by,
        "last_tick": None if last is None else {
            "tick_at": last.tick_at, "passed": last.passed, "batch_id": str(last.batch_id) if last.batch_id else None,
            "job_id": str(last.job_id) if last.job_id else None, "manual": last.manual},
    }  # fmt: skip


def alert_out(alert: Alert) -> dict:
    return {
        "alert_id": str(alert.pk), "collection_id": alert.collection.slug, "schedule_id": str(alert.schedule_id),
        "schedule": alert.schedule.name, "state": alert.state, "reasons": alert.reasons, "fired_at": alert.fired_at,
        "resolved_at": alert.resolved_at, "acknowledged_by": alert.acknowledged_by,
        "acknowledged_at": alert.acknowledged_at,
        "deliveries": [{"event": d.event, "channel": shown_channel(d.channel), "state": d.state, "attempts": d.attempts}
                       for d in alert.deliveries.all()],
    }  # fmt: skip


def _body(data: dict, raw) -> dict:
    """The request's schedule fields as sent (JSON values kept as they are: the service reads them strictly)."""
    return {k: raw[k] for k in raw if k not in (*TENANT_FIELDS, "collection_id") and k in data}


class SchedulesApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, POST=Perm.EVALUATE)

    @extend_schema(
        request=ScheduleIn,
        responses={201: ScheduleOut, **error_responses("schedule-exists", "url-not-allowed")},
        summary="Creates a schedule: the golden set evaluated on a cadence, with a gate and channels to tell.",
    )
    def post(self, request):
        data = read_strictly(ScheduleIn, request.data)
        collection = collection_get(tenant=self.tenant(data), collection_id=data["collection_id"])
        schedule = schedules.schedule_create(
            tenant=collection.tenant, collection=collection, data=_body(data, request.data), actor=self.actor
        )
        return Response(ScheduleOut(schedule_out(schedule)).data, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[ListIn], responses=ScheduleOut(many=True), summary="The tenant's schedules.")
    def get(self, request):
        data = read(ListIn, request.query_params)
        tenant = self.tenant()
        found = Schedule.objects.filter(tenant=tenant).select_related("collection")
        if data.get("collection_id"):
            found = found.filter(
                collection=collection_get(tenant=tenant, collection_id=data["collection_id"])
            )
        paginator = self.pagination_class()  # type: ignore[operator,misc]
        page = paginator.paginate_queryset(found.order_by("name"), request, view=self)
        return paginator.get_paginated_response([schedule_out(s) for s in page])


class ScheduleDetailApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, PATCH=Perm.EVALUATE, DELETE=Perm.EVALUATE)

    @extend_schema(
        parameters=[OpenApiParameter("cluster_id", str), OpenApiParameter("tenant_id", str)],
        responses=ScheduleOut,
        summary="One schedule, with its last tick.",
    )
    def get(self, request, schedule_id: str):
        return Response(schedule_out(schedules.schedule_get(tenant=self.tenant(), schedule_id=schedule_id)))

    @extend_schema(
        request=SchedulePatchIn, responses=ScheduleOut, summary="Changes some of a schedule's fields."
    )
    def patch(self, request, schedule_id: str):
        data = read_strictly(SchedulePatchIn, request.data, partial=True)
        schedule = schedules.schedule_get(tenant=self.tenant(data), schedule_id=schedule_id)
        schedules.schedule_update(schedule=schedule, changes=_body(data, request.data), actor=self.actor)
        return Response(ScheduleOut(schedule_out(schedule)).data)

    @extend_schema(
        parameters=[OpenApiParameter("cluster_id", str), OpenApiParameter("tenant_id", str)],
        responses={204: None},
        summary="Deletes a schedule (its runs stay).",
    )
    def delete(self, request, schedule_id: str):
        schedule = schedules.schedule_get(tenant=self.tenant(), schedule_id=schedule_id)
        schedules.schedule_delete(schedule=schedule, actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ScheduleRunApi(TenantAPIView):
    required_permissions = needs(POST=Perm.EVALUATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)

    @extend_schema(request=TenantIn, responses={202: JobAcceptedOut, **error_responses("broker-unavailable")},
                   summary="Runs a schedule now (its gate and alerts as on a tick).")  # fmt: skip
    def post(self, request, schedule_id: str):
        data = read_strictly(TenantIn, request.data)
        schedule = schedules.schedule_get(tenant=self.tenant(data), schedule_id=schedule_id)
        tick = schedules.schedule_run_now(schedule=schedule, actor=self.actor)
        assert tick.job is not None
        tick.job.refresh_from_db(fields=["status"])
        return Response(
            {"job_id": str(tick.job.pk), "status": tick.job.status}, status=status.HTTP_202_ACCEPTED
        )


class AlertsApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW)

    @extend_schema(parameters=[AlertListIn], responses=AlertOut(many=True), summary="Alerts, newest first.")
    def get(self, request):
        data = read(AlertListIn, request.query_params)
        tenant = self.tenant()
        found = Alert.objects.filter(tenant=tenant).select_related("collection", "schedule")
        if data.get("collection_id"):
            found = found.filter(
                collection=collection_get(tenant=tenant, collection_id=data["collection_id"])
            )
        if data.get("state"):
            found = found.filter(state=data["state"])
        paginator = self.pagination_class()  # type: ignore[operator,misc]
        page = paginator.paginate_queryset(
            found.prefetch_related("deliveries").order_by("-fired_at"), request, view=self
        )
        return paginator.get_paginated_response([alert_out(a) for a in page])


class AlertAcknowledgeApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)

    @extend_schema(
        request=TenantIn, responses=AlertOut, summary="Acknowledges an alert: no more reminders of it."
    )
    def post(self, request, alert_id: str):
        data = read_strictly(TenantIn, request.data)
        alert = alerts.alert_get(tenant=self.tenant(data), alert_id=alert_id)
        return Response(AlertOut(alert_out(alerts.alert_acknowledge(alert=alert, actor=self.actor))).data)
