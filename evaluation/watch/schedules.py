"""Schedules: read strictly, created, changed and deleted (audited); their ticks claimed exactly once however many
workers and machines tick (`schedules_tick`, run by every worker's heartbeat); a tick's job evaluates the
schedule's configurations as one batch, labelled with the schedule, and hands the verdict of its gate to the
alerts (evaluation.watch.alerts).

Exactly once per tick: a due schedule is claimed by moving its `next_run_at` from the value read to the next tick
after now with one conditional UPDATE (only one worker's matches), and the tick's row (unique per schedule and
tick) and its job are written in that same transaction, so a worker dying in between leaves nothing claimed
and nothing queued. A job whose worker dies is re-queued by the jobs' recovery and finds its tick's batch, if
stored, already there. After downtime the next tick is the first one after now: one run catches up."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evalsite.egress import EgressRefused, check_url
from evalsite.errors import EvalsiteError, NotFound
from evalsite.jobs.models import Job
from evalsite.jobs.services import job_create
from evalsite.tenancy.models import Tenant
from evaluation import configs as config_parser
from evaluation.models import (
    EvaluationAuditObject,
    EvaluationRun,
    QuestionResult,
    RunStatus,
    Schedule,
    ScheduleRun,
    WatchJobKind,
)
from evaluation.presets import with_presets
from evaluation.reports.presenter import batch_result
from evaluation.request_fields import parse_ks
from evaluation.retrieval import metrics
from evaluation.retrieval.read_path import available_rerankers
from evaluation.retrieval.request import RetrievalRequest
from evaluation.targets.services import egress_policy, resolve_targets
from evaluation.watch.alerts import after_tick
from evaluation.watch.cadence import Cadence, CadenceError, cadence_of
from evaluation.watch.gate import DRIFTED, Gate, Verdict, drift_reason, verdict
from goldenset.models import Collection
from goldenset.selectors import uuid_or_not_found
from goldenset.services.drift import drift_count

MAX_CHANNELS = 10
CHANNEL_KINDS = ("webhook", "email")
WEBHOOK_FORMATS = ("json", "slack")
TICK_BATCH = 100  # schedules one tick claims at most (the rest the next one)
FIELDS = {"name", "configs", "ks", "tags", "origin", "reviewed_only", "skip_unreviewed_generated", "cron",
          "every_minutes", "timezone", "gate", "channels", "remind_after_minutes", "enabled"}  # fmt: skip


def _invalid(field: str, message: str) -> EvalsiteError:
    return EvalsiteError("validation-error", f"{field}: {message}", details={"field": field})


def cadence(schedule: Schedule) -> Cadence:
    return cadence_of(
        cron=schedule.cron or None, every_minutes=schedule.every_minutes, timezone=schedule.timezone,
        anchor=schedule.created_at or timezone.now(),
    )  # fmt: skip


def _gate(raw: Any, ks: list[int]) -> dict:
    if not isinstance(raw, Mapping):
        raise _invalid("gate", 'an object: {"metric": "ndcg@10", "min": 0.5, "max_drop": 0.02}.')
    unknown = sorted(set(raw) - {"metric", "min", "max_drop", "check_drop", "max_drift"})
    if unknown:
        raise _invalid(f"gate.{unknown[0]}", "unknown field.")
    known = list(metrics.evaluate_query([], {"d": 1}, ks))
    metric = raw.get("metric")
    if metric not in known:
        raise _invalid("gate.metric", f"one of the metrics these ks give: {', '.join(known)}.")
    found: dict[str, Any] = {"metric": metric, "check_drop": True}
    for name in ("min", "max_drop"):
        value = raw.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1
        ):
            raise _invalid(f"gate.{name}", "a number from 0 to 1, or null.")
        found[name] = None if value is None else float(value)
    if "check_drop" in raw:
        found["check_drop"] = config_parser.parse_bool(raw["check_drop"], "gate.check_drop")
    drift = raw.get("max_drift")
    if drift is not None and (isinstance(drift, bool) or not isinstance(drift, int) or drift < 0):
        raise _invalid("gate.max_drift", "a whole number of golden entries from 0, or null.")
    found["max_drift"] = drift
    return found


def gate_of(schedule: Schedule) -> Gate:
    g = schedule.gate
    return Gate(g["metric"], g.get("min"), g.get("max_drop"), g.get("check_drop", True), g.get("max_drift"))


def _channels(raw: Any) -> list[dict]:
    if not isinstance(raw, list) or len(raw) > MAX_CHANNELS:
        raise _invalid("channels", f"a list of at most {MAX_CHANNELS} channels.")
    found = []
    for i, channel in enumerate(raw):
        field = f"channels[{i}]"
        if not isinstance(channel, Mapping) or channel.get("kind") not in CHANNEL_KINDS:
            raise _invalid(f"{field}.kind", f"one of {', '.join(CHANNEL_KINDS)}.")
        if channel["kind"] == "webhook":
            if set(channel) - {"kind", "url", "format"}:
                raise _invalid(field, "a webhook has kind, url and format (json or slack).")
            form = channel.get("format", "json")
            if form not in WEBHOOK_FORMATS:
                raise _invalid(f"{field}.format", f"one of {', '.join(WEBHOOK_FORMATS)}.")
            url = channel.get("url")
            if not isinstance(url, str) or len(url) > 2000:
                raise _invalid(f"{field}.url", "a URL.")
            try:
                check_url(url, egress_policy(), field_name=f"{field}.url")
            except EgressRefused as exc:  # as a target's base_url is refused (evaluation.targets.services)
                code = "validation-error" if exc.rule in ("url", "scheme", "userinfo") else "url-not-allowed"
                raise EvalsiteError(
                    code, exc.message, details={"field": f"{field}.url", "rule": exc.rule}
                ) from None
            found.append({"kind": "webhook", "url": url, "format": form})
        else:
            if set(channel) - {"kind", "to"}:
                raise _invalid(field, "an e-mail channel has kind and to.")
            to = channel.get("to")
            addresses = [to] if isinstance(to, str) else to
            if not isinstance(addresses, list) or not 1 <= len(addresses) <= 20:
                raise _invalid(f"{field}.to", "an address or a list of up to 20.")
            for address in addresses:
                try:
                    validate_email(address)
                except (ValidationError, TypeError):
                    raise _invalid(f"{field}.to", f"{address!r} is no e-mail address.") from None
            found.append({"kind": "email", "to": list(addresses)})
    return found


def _checked(tenant: Tenant, collection: Collection, data: dict, now: datetime) -> dict:
    """The schedule's fields as stored, every one checked (a 400 naming the first bad one)."""
    name = data.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise _invalid("name", "1 to 100 characters.")
    ks = parse_ks(data.get("ks"))
    subset = config_parser.parse_subset(data)
    configs = config_parser.parse_configs(
        with_presets(tenant, data.get("configs")), available_rerankers(), subset
    )
    resolve_targets(tenant, [collection], configs)
    try:
        cadence_of(cron=data.get("cron"), every_minutes=data.get("every_minutes"),
                   timezone=data.get("timezone") or "UTC", anchor=now)  # fmt: skip
    except CadenceError as exc:
        field = str(exc).split(":")[0].split()[0]
        raise _invalid(
            field if field in ("cron", "every_minutes", "timezone") else "cron", str(exc)
        ) from None
    remind = data.get("remind_after_minutes", 24 * 60)
    if isinstance(remind, bool) or not isinstance(remind, int) or not 1 <= remind <= 60 * 24 * 90:
        raise _invalid("remind_after_minutes", "minutes from 1 to 129600 (90 days).")
    enabled = config_parser.parse_bool(data.get("enabled", True), "enabled")
    return {
        "name": name.strip(), "configs": data.get("configs") or [{"label": "FullText"}], "ks": ks,
        "subset": {k: data[k] for k in ("tags", "origin", "reviewed_only", "skip_unreviewed_generated") if k in data},
        "cron": data.get("cron") or "", "every_minutes": data.get("every_minutes"),
        "timezone": data.get("timezone") or "UTC", "gate": _gate(data.get("gate"), ks),
        "channels": _channels(data.get("channels", [])), "remind_after_minutes": remind, "enabled": enabled,
    }  # fmt: skip


def _unknown(data: Mapping, allowed: set[str]) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise EvalsiteError("validation-error", f"{unknown[0]}: unknown field.",
                            details={"field": unknown[0], "allowed": sorted(allowed)})  # fmt: skip


def schedule_create(*, tenant: Tenant, collection: Collection, data: Mapping, actor: str) -> Schedule:
    _unknown(data, FIELDS)
    now = timezone.now()
    fields = _checked(tenant, collection, dict(data), now)
    try:
        with transaction.atomic():
            schedule = Schedule.objects.create(
                tenant=tenant, collection=collection, created_by=actor, **fields
            )
            schedule.next_run_at = cadence(schedule).next_after(now) if schedule.enabled else None
            schedule.save(update_fields=["next_run_at"])
            audit_record(tenant=tenant, collection=collection, action=AuditAction.CREATE,
                         object_type=EvaluationAuditObject.SCHEDULE, object_id=schedule.pk, actor=actor,
                         changes={"name": schedule.name})  # fmt: skip
    except IntegrityError:
        raise EvalsiteError("schedule-exists", f"name: a schedule named {fields['name']!r} exists already.",
                            status=409, details={"field": "name"}) from None  # fmt: skip
    return schedule


def schedule_update(*, schedule: Schedule, changes: Mapping, actor: str) -> Schedule:
    """Change some fields; the schedule is checked whole again and its next tick computed anew."""
    _unknown(changes, FIELDS)
    current = {**schedule_fields(schedule), **changes}
    if "cron" in changes and changes["cron"] is not None:
        current["every_minutes"] = None
    if "every_minutes" in changes and changes["every_minutes"] is not None:
        current["cron"] = None
    fields = _checked(schedule.tenant, schedule.collection, current, timezone.now())
    with transaction.atomic():
        for name, value in fields.items():
            setattr(schedule, name, value)
        schedule.next_run_at = cadence(schedule).next_after(timezone.now()) if schedule.enabled else None
        try:
            schedule.save()
        except IntegrityError:
            raise EvalsiteError("schedule-exists", f"name: a schedule named {schedule.name!r} exists already.",
                                status=409, details={"field": "name"}) from None  # fmt: skip
        audit_record(tenant=schedule.tenant, collection=schedule.collection, action=AuditAction.UPDATE,
                     object_type=EvaluationAuditObject.SCHEDULE, object_id=schedule.pk, actor=actor,
                     changes={"fields": sorted(changes)})  # fmt: skip
    return schedule


def schedule_delete(*, schedule: Schedule, actor: str) -> None:
    with transaction.atomic():
        audit_record(tenant=schedule.tenant, collection=schedule.collection, action=AuditAction.DELETE,
                     object_type=EvaluationAuditObject.SCHEDULE, object_id=schedule.pk, actor=actor,
                     changes={"name": schedule.name})  # fmt: skip
        schedule.delete()


def schedule_fields(schedule: Schedule) -> dict:
    """The schedule as a request would set it (what an update starts from)."""
    return {
        "name": schedule.name, "configs": schedule.configs, "ks": schedule.ks, **schedule.subset,
        "cron": schedule.cron or None, "every_minutes": schedule.every_minutes, "timezone": schedule.timezone,
        "gate": schedule.gate, "channels": schedule.channels, "remind_after_minutes": schedule.remind_after_minutes,
        "enabled": schedule.enabled,
    }  # fmt: skip


def schedule_get(*, tenant: Tenant, schedule_id: str) -> Schedule:
    pk = uuid_or_not_found(schedule_id, "Schedule")
    found = Schedule.objects.select_related("collection", "tenant").filter(tenant=tenant, pk=pk).first()
    if found is None:
        raise NotFound("Schedule", schedule_id)
    return found


# --- ticks ---------------------------------------------------------------------------------------------------


def _actor(schedule: Schedule) -> str:
    """Who the audit trail and the runs name for a tick: the schedule, and the person who set it."""
    return f"schedule:{schedule.name} ({schedule.created_by or 'unknown'})"


def _queue(schedule: Schedule, tick_at: datetime, *, manual: bool) -> ScheduleRun:
    tick = ScheduleRun.objects.create(schedule=schedule, tick_at=tick_at, manual=manual)
    job = job_create(tenant=schedule.tenant, kind=WatchJobKind.SCHEDULED, collection=schedule.collection,
                     input={"schedule_run": str(tick.pk)}, actor=_actor(schedule))  # fmt: skip
    ScheduleRun.objects.filter(pk=tick.pk).update(job=job)
    tick.job = job
    return tick


def schedules_tick(now: datetime | None = None) -> list[ScheduleRun]:
    """Every enabled schedule due by now queued once: claimed by a conditional update of its next tick, its tick
    row and job written in the same transaction (the module's docstring)."""
    now = now or timezone.now()
    queued = []
    due = Schedule.objects.filter(enabled=True, next_run_at__lte=now).values_list("pk", "next_run_at")
    for pk, tick_at in list(due[:TICK_BATCH]):
        assert tick_at is not None  # filtered on it
        schedule = Schedule.objects.select_related("tenant", "collection").get(pk=pk)
        try:
            following = cadence(schedule).next_after(now)
        except CadenceError:
            following = None  # a cron with no tick left: it stops
        try:
            with transaction.atomic():
                claimed = Schedule.objects.filter(pk=pk, enabled=True, next_run_at=tick_at).update(
                    next_run_at=following
                )
                if claimed:
                    queued.append(_queue(schedule, tick_at, manual=False))
        except IntegrityError:
            continue  # the tick's row exists: another worker queued it
    return queued


def schedule_run_now(*, schedule: Schedule, actor: str) -> ScheduleRun:
    with transaction.atomic():
        audit_record(tenant=schedule.tenant, collection=schedule.collection, action=AuditAction.LAUNCH,
                     object_type=EvaluationAuditObject.SCHEDULE, object_id=schedule.pk, actor=actor,
                     changes={"run": "now"})  # fmt: skip
        return _queue(schedule, timezone.now(), manual=True)


# --- a tick's job ----------------------------------------------------------------------------------------------


def _request(schedule: Schedule) -> RetrievalRequest:
    """The schedule's configurations as an evaluation takes them, each labelled with the schedule."""
    subset = config_parser.parse_subset(schedule.subset)
    raw = with_presets(schedule.tenant, schedule.configs)
    configs = config_parser.parse_configs(raw, available_rerankers(), subset)
    labelled = [
        replace(c, label=f"{schedule.name} · {c.label}"[: config_parser.MAX_LABEL_CHARS]) for c in configs
    ]
    return RetrievalRequest(ks=schedule.ks, configs=labelled)


def per_question(run_pk, metric: str) -> dict[str, float | None]:
    """A stored run's value of the metric per question (entry id); a failed question None (left out)."""
    rows = QuestionResult.objects.filter(run_id=run_pk).values_list("entry_id", "metrics", "error")
    return {str(entry): None if error else values.get(metric) for entry, values, error in rows}


def tick_verdict(tick: ScheduleRun, runs) -> Verdict:
    """The gate on every run of the tick (a configuration each): it passes when all do; against each label's run
    of the schedule's last tick that passed."""
    gate = gate_of(tick.schedule)
    last = (
        ScheduleRun.objects.filter(schedule=tick.schedule, passed=True, batch_id__isnull=False)
        .exclude(pk=tick.pk).order_by("-tick_at").first()
    )  # fmt: skip
    before: dict[str, EvaluationRun] = {}
    when = ""
    if last is not None and last.batch_id is not None:
        before = {r.label: r for r in EvaluationRun.objects.filter(batch_id=last.batch_id)}
        when = f"{last.tick_at:%Y-%m-%d %H:%M}"
    found = []
    for run in runs:
        baseline = before.get(run.label)
        found.append(
            verdict(
                gate,
                error="; ".join(run.warnings[-1:]) if run.status == RunStatus.FAILED else "",
                mean=run.metrics.get(gate.metric),
                per_question=per_question(run.pk, gate.metric),
                baseline=per_question(baseline.pk, gate.metric) if baseline else None,
                baseline_label=f"{baseline.label} of {when}" if baseline else "",
            )  # fmt: skip
        )
    reasons = [{**r, "label": run.label} for run, v in zip(runs, found, strict=True) for r in v.reasons]
    drifted = drift_count(tick.schedule.collection) if gate.max_drift is not None else None
    if drifted is not None and (reason := drift_reason(gate, drifted)) is not None:
        reasons.append(reason)
    detail = {"runs": [v.as_dict() for v in found], "drifted": drifted}
    return Verdict(all(v.passed for v in found) and not any(r["reason"] == DRIFTED for r in reasons), reasons,
                   None, detail)  # fmt: skip


def scheduled_job(job: Job, progress) -> dict:
    """A tick's job: the batch evaluated (or found, when a lost worker's job runs again), its gate decided and
    the alerts told (evaluation.watch.alerts)."""
    tick = ScheduleRun.objects.select_related("schedule__tenant", "schedule__collection").get(
        pk=job.input["schedule_run"]
    )
    schedule = tick.schedule
    # The tick's batch has the tick's id: stored whole or not at all (evaluation.retrieval.evaluate), so a job run
    # again after its worker died finds it, or evaluates it, never twice.
    if not EvaluationRun.objects.filter(batch_id=tick.pk).exists():
        try:
            _request(schedule).evaluate(
                tenant=schedule.tenant, collections=[schedule.collection], job=job, progress=progress,
                actor=_actor(schedule), batch_id=tick.pk,
            )  # fmt: skip
        except EvalsiteError as exc:
            failed = Verdict(False, [{"reason": "error", "message": f"the run failed: {exc.message}"}])
            after_tick(tick, failed)
            raise
    ScheduleRun.objects.filter(pk=tick.pk).update(batch_id=tick.pk)
    tick.batch_id = tick.pk
    runs = list(EvaluationRun.objects.filter(batch_id=tick.batch_id).order_by("created_at", "id"))
    decided = tick_verdict(tick, runs)
    after_tick(tick, decided)
    return {**batch_result(tick.batch_id, runs), "schedule_run": str(tick.pk), "gate": decided.as_dict()}
