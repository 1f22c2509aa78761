"""When a schedule runs: a cron expression in a time zone, or every N minutes. Plain Python: no Django import.

Cron is the five fields of Vixie cron: minute (0-59), hour (0-23), day of month (1-31), month (1-12 or
jan-dec), day of week (0-7 or sun-sat, 0 and 7 both Sunday), each `*`, a value, a range `a-b`, a step `*/n` or
`a-b/n`, or a list of those. When both day fields are restricted a day matches either (cron's rule). Times are
wall-clock times of the schedule's time zone: a time that does not exist there (the hour skipped when clocks go
forward) is skipped, and one that happens twice (the hour repeated when they go back) runs once, the first time.

`next_after(after)` is the first tick strictly after `after`: a scheduler that asks it with the current time
after being down for hours gets the next tick to come, so a schedule runs once to catch up, never once per tick
it missed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["Cadence", "CadenceError", "MAX_EVERY_MINUTES", "MIN_EVERY_MINUTES", "cadence_of", "parse_cron"]

MIN_EVERY_MINUTES, MAX_EVERY_MINUTES = 1, 60 * 24 * 366
_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
_NAMES = {
    3: {
        n: i
        for i, n in enumerate(
            ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1
        )
    },
    4: {n: i for i, n in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])},
}
_SEARCH_DAYS = 366 * 5  # a cron that matches no day in five years (Feb 30) never runs


class CadenceError(ValueError):
    """A cadence that cannot be read; the message says what and where."""


def _value(text: str, position: int) -> int:
    name, low, high = _FIELDS[position]
    number = _NAMES.get(position, {}).get(text.lower())
    if number is None:
        if not text.isdigit():
            raise CadenceError(f"cron {name}: {text!r} is not a number")
        number = int(text)
    if not low <= number <= high:
        raise CadenceError(f"cron {name}: {number} is outside {low}-{high}")
    return number


def _field(text: str, position: int) -> tuple[frozenset[int], bool]:
    """The values a field allows, and whether it restricts anything (`*` does not)."""
    name, low, high = _FIELDS[position]
    allowed: set[int] = set()
    for part in text.split(","):
        if not part:
            raise CadenceError(f"cron {name}: an empty list item in {text!r}")
        base, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) < 1:
                raise CadenceError(f"cron {name}: the step of {part!r} is a whole number from 1")
            step = int(step_text)
        if base == "*":
            first, last = low, high
        elif "-" in base:
            start, _, end = base.partition("-")
            first, last = _value(start, position), _value(end, position)
            if first > last:
                raise CadenceError(f"cron {name}: the range {base!r} runs backwards")
        else:
            first = _value(base, position)
            last = high if step_text else first
        allowed.update(range(first, last + 1, step))
    if position == 4 and 7 in allowed:  # Sunday is 0 and 7
        allowed = (allowed - {7}) | {0}
    return frozenset(allowed), text != "*"


@dataclass(frozen=True)
class Cron:
    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 Sunday ... 6 Saturday
    days_restricted: bool
    weekdays_restricted: bool

    def day_matches(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = (day.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return in_month or in_week
        return in_month and in_week


def parse_cron(expression: str) -> Cron:
    if not isinstance(expression, str) or len(expression) > 200:
        raise CadenceError("cron: a text of five fields, e.g. '0 3 * * *'")
    fields = expression.split()
    if len(fields) != 5:
        raise CadenceError(
            f"cron: five fields (minute hour day-of-month month day-of-week), got {len(fields)}"
        )
    parsed = [_field(text, position) for position, text in enumerate(fields)]
    return Cron(
        " ".join(fields),
        parsed[0][0],
        parsed[1][0],
        parsed[2][0],
        parsed[3][0],
        parsed[4][0],
        parsed[2][1],
        parsed[4][1],
    )


@dataclass(frozen=True)
class Cadence:
    """A cron expression in a time zone, or every `every_minutes` minutes counted from `anchor`."""

    cron: Cron | None
    every_minutes: int | None
    zone: ZoneInfo
    anchor: datetime

    def describe(self) -> str:
        if self.cron is not None:
            return f"cron {self.cron.expression} ({self.zone.key})"
        return f"every {self.every_minutes} minutes"

    def next_after(self, after: datetime) -> datetime:
        """The first tick strictly after `after` (an aware instant), in UTC; a CadenceError for a cron with no
        tick in five years."""
        if self.every_minutes is not None:
            step = timedelta(minutes=self.every_minutes)
            if after < self.anchor:
                return self.anchor.astimezone(UTC)
            passed = (after - self.anchor) // step + 1
            return (self.anchor + passed * step).astimezone(UTC)
        assert self.cron is not None
        return _next_cron(self.cron, self.zone, after)


def _next_cron(cron: Cron, zone: ZoneInfo, after: datetime) -> datetime:
    local = after.astimezone(zone)
    start = local.replace(second=0, microsecond=0, tzinfo=None) + timedelta(minutes=1)
    hours, minutes = sorted(cron.hours), sorted(cron.minutes)
    for offset in range(_SEARCH_DAYS):
        day = start.date() + timedelta(days=offset)
        if not cron.day_matches(day):
            continue
        for hour in hours:
            for minute in minutes:
                wall = datetime(day.year, day.month, day.day, hour, minute)
                if wall < start:
                    continue
                instant = wall.replace(tzinfo=zone, fold=0)
                if instant.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != wall:
                    continue  # a wall time the zone skips (clocks going forward)
                if instant > after:
                    return instant.astimezone(UTC)
    raise CadenceError(f"cron {cron.expression!r} has no tick in the next five years")


def cadence_of(*, cron: str | None, every_minutes: int | None, timezone: str, anchor: datetime) -> Cadence:
    """A cadence from a schedule's fields: exactly one of `cron` and `every_minutes`, and an IANA time zone."""
    if (cron is None) == (every_minutes is None):
        raise CadenceError("cron: give a cron expression or every_minutes, one of the two")
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise CadenceError(
            f"timezone: {timezone!r} is no IANA time zone (e.g. 'Europe/Paris', 'UTC')"
        ) from None
    if every_minutes is not None:
        if isinstance(every_minutes, bool) or not isinstance(every_minutes, int):
            raise CadenceError("every_minutes: a whole number of minutes")
        if not MIN_EVERY_MINUTES <= every_minutes <= MAX_EVERY_MINUTES:
            raise CadenceError(f"every_minutes: from {MIN_EVERY_MINUTES} to {MAX_EVERY_MINUTES}")
        return Cadence(None, every_minutes, zone, anchor)
    parsed = parse_cron(cron or "")
    cadence = Cadence(parsed, None, zone, anchor)
    cadence.next_after(anchor)  # a cron that never fires is refused when it is set, not when it is due
    return cadence
