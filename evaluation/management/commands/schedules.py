"""`manage.py schedules`: a tenant's schedules, created from a file, run now, and their alerts.

    manage.py schedules list --cluster C --tenant T [--collection X]
    manage.py schedules create --cluster C --tenant T --collection X --request schedule.json
    manage.py schedules run NAME --cluster C --tenant T
    manage.py schedules alerts --cluster C --tenant T [--collection X]

`create` takes the body POST /lmkit/v1/search/evaluate/schedules takes (checked the same way: a bad field exits 2
naming it). `run` queues the schedule now, as its API's run does, and prints the job (a worker runs it; its gate
and alerts are decided as on a tick). Ticks themselves are every worker's: `manage.py worker` (or `serve`) runs
them on its heartbeat."""

from __future__ import annotations

import json
from pathlib import Path

from evalsite.audit.services import actor_command
from evalsite.errors import EvalsiteError
from evalsite.management.base import EvalsiteCommand
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.models import Alert, Schedule
from evaluation.watch import schedules
from goldenset.selectors import collection_get


class Command(EvalsiteCommand):
    help = "List, create and run a tenant's scheduled evaluations, and list their alerts."
    required_permissions = needs(Perm.EVALUATE)

    def add_arguments(self, parser):
        parser.add_argument("action", choices=("list", "create", "run", "alerts"))
        parser.add_argument("name", nargs="?", help="run: the schedule's name")
        self.add_scope_arguments(parser, collection=False)
        parser.add_argument("--collection", help="collection_id (create: required)")
        parser.add_argument("--request", help="create: a JSON file holding the body the API takes")

    def handle(self, *args, **options):
        tenant = self.tenant(options)
        collection = (
            collection_get(tenant=tenant, collection_id=options["collection"])
            if options["collection"]
            else None
        )
        action = options["action"]
        if action == "create":
            if collection is None or not options["request"]:
                raise EvalsiteError("usage", "create: --collection and --request are required.")
            data = _read(Path(options["request"]))
            data.pop("collection_id", None)
            schedule = schedules.schedule_create(
                tenant=tenant, collection=collection, data=data, actor=actor_command("schedules")
            )
            self.stdout.write(
                f"schedule {schedule.name} ({schedule.pk}): next run {schedule.next_run_at:%Y-%m-%d %H:%M} UTC"
            )
        elif action == "run":
            found = Schedule.objects.filter(tenant=tenant, name=options["name"] or "").first()
            if found is None:
                raise EvalsiteError("not-found", f"no schedule named {options['name']!r} in this tenant.")
            tick = schedules.schedule_run_now(schedule=found, actor=actor_command("schedules"))
            self.stdout.write(f"queued: job {tick.job_id} for schedule {found.name}")
        elif action == "alerts":
            found_alerts = Alert.objects.filter(tenant=tenant).select_related("schedule", "collection")
            if collection is not None:
                found_alerts = found_alerts.filter(collection=collection)
            for alert in found_alerts.order_by("-fired_at")[:100]:
                why = "; ".join(r["message"] for r in alert.reasons)
                acked = f", acknowledged by {alert.acknowledged_by}" if alert.acknowledged_by else ""
                self.stdout.write(
                    f"{alert.fired_at:%Y-%m-%d %H:%M} {alert.state:9} {alert.schedule.name}: {why}{acked}"
                )
        else:
            found_schedules = Schedule.objects.filter(tenant=tenant).select_related("collection")
            if collection is not None:
                found_schedules = found_schedules.filter(collection=collection)
            for schedule in found_schedules.order_by("name"):
                cadence = schedules.cadence(schedule).describe()
                upcoming = (
                    f"{schedule.next_run_at:%Y-%m-%d %H:%M} UTC"
                    if schedule.next_run_at
                    else "never (disabled)"
                )
                self.stdout.write(
                    f"{schedule.name} on {schedule.collection.slug}: {cadence}, next {upcoming}"
                )


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise EvalsiteError(
            "file-unreadable", f"{path}: {exc.strerror}.", details={"path": str(path)}
        ) from None
    except ValueError as exc:
        raise EvalsiteError("usage", f"--request: {path} is not JSON ({exc}).") from None
    if not isinstance(data, dict):
        raise EvalsiteError("usage", f"--request: {path} does not hold a JSON object.")
    return data
