"""Alerts: a scheduled run whose gate fails fires one (never a second while one fires: the database holds one
firing alert per schedule); a later run that passes resolves it; each is told to the schedule's channels once
when it fires, as a reminder after the schedule's remind_after_minutes while nobody acknowledged it, and once
when it resolves. A curator acknowledges it.

A notification is a Delivery: sent at once, and when an attempt fails, tried again by the workers' tick with
backoff (30 s, 1, 2, 4 ... minutes, at most MAX_ATTEMPTS attempts), each attempt recorded (when, status, error,
milliseconds). A webhook's URL goes through the outbound guard (evalsite.egress) when it is set and again when
it is called; an e-mail goes through Django's e-mail backend (EVALSITE_SMTP_*)."""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evalsite.egress import EgressRefused, GuardedTransport, check_url
from evalsite.errors import NotFound
from evalsite.tenancy.models import Tenant
from evaluation.models import (
    Alert,
    AlertState,
    Delivery,
    DeliveryState,
    EvaluationAuditObject,
    EvaluationRun,
    ScheduleRun,
)
from evaluation.targets.services import egress_policy
from evaluation.watch.gate import Verdict
from goldenset.selectors import uuid_or_not_found

logger = logging.getLogger(__name__)
FIRING, REMINDER, RESOLVED = "firing", "reminder", "resolved"  # a delivery's event
MAX_ATTEMPTS = 6
FIRST_RETRY_SECONDS, LONGEST_RETRY_SECONDS = 30, 3600
WEBHOOK_TIMEOUT_SECONDS = 10.0
CLAIM_SECONDS = 120  # a delivery being sent is not picked up by another worker for this long


def after_tick(tick: ScheduleRun, decided: Verdict) -> None:
    """Record the tick's verdict, then fire, keep or resolve the schedule's alert (telling its channels)."""
    schedule = tick.schedule
    now = timezone.now()
    ScheduleRun.objects.filter(pk=tick.pk).update(
        passed=decided.passed, verdict=decided.as_dict(), finished_at=now
    )
    tick.passed, tick.verdict = decided.passed, decided.as_dict()
    firing = Alert.objects.filter(schedule=schedule, state=AlertState.FIRING).first()
    if not decided.passed and firing is None:
        try:
            with transaction.atomic():
                alert = Alert.objects.create(
                    tenant=schedule.tenant, collection=schedule.collection, schedule=schedule,
                    reasons=decided.reasons, fired_by=tick,
                )  # fmt: skip
                _deliveries(alert, FIRING)
        except IntegrityError:
            return  # another tick of this schedule fired it at the same moment: one alert
        deliver_due(alert=alert)
    elif decided.passed and firing is not None:
        with transaction.atomic():
            if not Alert.objects.filter(pk=firing.pk, state=AlertState.FIRING).update(
                state=AlertState.RESOLVED, resolved_by=tick, resolved_at=now
            ):
                return  # resolved meanwhile
            firing.refresh_from_db()
            _deliveries(firing, RESOLVED)
        deliver_due(alert=firing)


def _deliveries(alert: Alert, event: str) -> None:
    now = timezone.now()
    Delivery.objects.bulk_create(
        [
            Delivery(alert=alert, event=event, channel=channel, next_attempt_at=now)
            for channel in alert.schedule.channels
        ]
    )


def reminders_tick(now: datetime | None = None) -> int:
    """Firing alerts nobody acknowledged, told again once remind_after_minutes passed since they were last told."""
    now = now or timezone.now()
    reminded = 0
    candidates = Alert.objects.filter(state=AlertState.FIRING, acknowledged_at__isnull=True).select_related(
        "schedule"
    )
    for alert in candidates[:100]:
        last = alert.reminded_at or alert.fired_at
        if last + timedelta(minutes=alert.schedule.remind_after_minutes) > now:
            continue
        with transaction.atomic():
            claimed = Alert.objects.filter(pk=alert.pk, reminded_at=alert.reminded_at).update(reminded_at=now)
            if claimed:
                _deliveries(alert, REMINDER)
                reminded += 1
    return reminded


def alert_acknowledge(*, alert: Alert, actor: str) -> Alert:
    if alert.acknowledged_at is None:
        with transaction.atomic():
            Alert.objects.filter(pk=alert.pk, acknowledged_at__isnull=True).update(
                acknowledged_by=actor, acknowledged_at=timezone.now()
            )
            audit_record(tenant=alert.tenant_id, collection=alert.collection, action=AuditAction.UPDATE,
                         object_type=EvaluationAuditObject.ALERT, object_id=alert.pk, actor=actor,
                         changes={"acknowledged": [False, True]})  # fmt: skip
        alert.refresh_from_db()
    return alert


def alert_get(*, tenant: Tenant, alert_id: str) -> Alert:
    pk = uuid_or_not_found(alert_id, "Alert")
    found = Alert.objects.select_related("schedule", "collection").filter(tenant=tenant, pk=pk).first()
    if found is None:
        raise NotFound("Alert", alert_id)
    return found


# --- what is sent --------------------------------------------------------------------------------------------


def alert_payload(alert: Alert, event: str) -> dict:
    """The webhook's JSON body (docs/evaluation.md documents it)."""
    resolved = alert.resolved_by if event == RESOLVED else None
    tick: ScheduleRun = resolved if resolved is not None else alert.fired_by
    runs = EvaluationRun.objects.filter(batch_id=tick.batch_id) if tick.batch_id else []
    return {
        "event": event,
        "alert": {
            "alert_id": str(alert.pk), "state": alert.state, "reasons": alert.reasons,
            "fired_at": _iso(alert.fired_at), "resolved_at": _iso(alert.resolved_at),
            "acknowledged_by": alert.acknowledged_by or None,
        },
        "schedule": {"schedule_id": str(alert.schedule_id), "name": alert.schedule.name},
        "collection_id": alert.collection.slug,
        "tick": {"tick_at": _iso(tick.tick_at), "batch_id": str(tick.batch_id) if tick.batch_id else None,
                 "passed": tick.passed},
        "runs": [{"run_id": str(r.pk), "label": r.label, "status": r.status, "metrics": r.metrics} for r in runs],
    }  # fmt: skip


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def alert_text(alert: Alert, event: str) -> tuple[str, str]:
    """(subject, body) of an e-mail, and a chat message's text."""
    what = {FIRING: "failing", REMINDER: "still failing", RESOLVED: "passing again"}[event]
    subject = f"[evalsite] {alert.schedule.name} on {alert.collection.slug}: {what}"
    lines = [subject, ""]
    if event != RESOLVED:
        lines += [f"- {r.get('label', '')}: {r['message']}".replace("- : ", "- ") for r in alert.reasons]
    else:
        lines.append(f"The alert fired at {_iso(alert.fired_at)} resolved at {_iso(alert.resolved_at)}.")
    return subject, "\n".join(lines)


def _send(delivery: Delivery) -> tuple[bool, int | None, str]:
    """One attempt: (sent, HTTP status, error)."""
    alert, channel = delivery.alert, delivery.channel
    subject, text = alert_text(alert, delivery.event)
    if channel["kind"] == "email":
        try:
            send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, channel["to"], fail_silently=False)
        except Exception as exc:  # any backend failure is an attempt that failed, recorded
            return False, None, f"{type(exc).__name__}: {exc}"[:500]
        return True, None, ""
    body = {"text": text} if channel.get("format") == "slack" else alert_payload(alert, delivery.event)
    try:
        check_url(channel["url"], egress_policy(), field_name="url")
        with httpx.Client(transport=GuardedTransport(egress_policy(), limits=httpx.Limits(max_connections=1)), timeout=WEBHOOK_TIMEOUT_SECONDS,
                          follow_redirects=False) as client:  # fmt: skip
            response = client.post(channel["url"], content=json.dumps(body), headers={
                "Content-Type": "application/json", "User-Agent": "evalsite-alerts"})  # fmt: skip
    except EgressRefused as exc:
        return False, None, exc.message[:500]
    except httpx.HTTPError as exc:
        return False, None, f"{type(exc).__name__}: {exc}"[:500]
    ok = 200 <= response.status_code < 300
    return ok, response.status_code, "" if ok else response.text[:300]


def _backoff(attempts: int) -> timedelta:
    return timedelta(seconds=min(LONGEST_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2 ** max(0, attempts - 1)))


def deliver(delivery: Delivery, now: datetime) -> bool:
    """One attempt at a delivery this worker claimed, recorded; the next one scheduled, or given up."""
    began = time.perf_counter()
    try:
        ok, status, error = _send(delivery)
    except Exception as exc:  # a fault of ours must not lose the notification: recorded, tried again later
        logger.exception("delivery %s failed", delivery.pk)
        ok, status, error = False, None, f"{type(exc).__name__}: {exc}"[:500]
    attempt = {"at": _iso(now), "ok": ok, "status": status, "error": error,
               "ms": round((time.perf_counter() - began) * 1000, 1)}  # fmt: skip
    attempts = [*delivery.attempts, attempt]
    if ok:
        state, following = DeliveryState.SENT, None
    elif len(attempts) >= MAX_ATTEMPTS:
        state, following = DeliveryState.FAILED, None
    else:
        state, following = DeliveryState.PENDING, timezone.now() + _backoff(len(attempts))
    Delivery.objects.filter(pk=delivery.pk).update(attempts=attempts, state=state, next_attempt_at=following)
    return ok


def deliver_due(now: datetime | None = None, *, alert: Alert | None = None) -> int:
    """The pending deliveries due by now (of one alert, or all), each claimed by one worker and attempted."""
    now = now or timezone.now()
    due = Delivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=now)
    if alert is not None:
        due = due.filter(alert=alert)
    sent = 0
    for delivery in due.select_related("alert__schedule", "alert__collection", "alert__fired_by")[:100]:
        claimed = Delivery.objects.filter(pk=delivery.pk, next_attempt_at=delivery.next_attempt_at).update(
            next_attempt_at=now + timedelta(seconds=CLAIM_SECONDS)
        )
        if claimed:
            sent += deliver(delivery, now)
    return sent
