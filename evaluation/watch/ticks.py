"""What every worker's heartbeat runs for schedules (registered with evalsite.jobs.kinds.register_tick): the
schedules due queued once, reminders of the alerts nobody acknowledged, the notifications due sent."""

from __future__ import annotations

from evaluation.watch.alerts import deliver_due, reminders_tick
from evaluation.watch.schedules import schedules_tick


def watch_tick() -> None:
    schedules_tick()
    reminders_tick()
    deliver_due()
