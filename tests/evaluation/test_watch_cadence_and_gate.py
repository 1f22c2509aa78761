"""Cadences (cron in a time zone, every N minutes) and a schedule's gate: pure, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evaluation.watch.cadence import CadenceError, cadence_of, parse_cron
from evaluation.watch.gate import BELOW_MIN, DROPPED, ERROR, Gate, verdict

ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)


def nxt(cron: str, after: datetime, zone: str = "UTC") -> datetime:
    return cadence_of(cron=cron, every_minutes=None, timezone=zone, anchor=ANCHOR).next_after(after)


@pytest.mark.parametrize(
    ("cron", "after", "expected"),
    [
        ("0 3 * * *", datetime(2026, 3, 10, 2, 59, tzinfo=UTC), datetime(2026, 3, 10, 3, 0, tzinfo=UTC)),
        ("0 3 * * *", datetime(2026, 3, 10, 3, 0, tzinfo=UTC), datetime(2026, 3, 11, 3, 0, tzinfo=UTC)),
        (
            "*/15 * * * *",
            datetime(2026, 3, 10, 3, 7, 30, tzinfo=UTC),
            datetime(2026, 3, 10, 3, 15, tzinfo=UTC),
        ),
        (
            "30 9 * * mon-fri",
            datetime(2026, 3, 13, 10, 0, tzinfo=UTC),
            datetime(2026, 3, 16, 9, 30, tzinfo=UTC),
        ),
        ("0 0 1 jan *", datetime(2026, 3, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)),
        (
            "0 12 13 * 5",
            datetime(2026, 3, 1, tzinfo=UTC),
            datetime(2026, 3, 6, 12, 0, tzinfo=UTC),
        ),  # 13th or Fri
        ("0 0 29 2 *", datetime(2026, 3, 1, tzinfo=UTC), datetime(2028, 2, 29, tzinfo=UTC)),
        (
            "0 0 * * 7",
            datetime(2026, 3, 10, tzinfo=UTC),
            datetime(2026, 3, 15, tzinfo=UTC),
        ),  # 7 is Sunday too
    ],
)
def test_cron_gives_the_first_tick_strictly_after(cron, after, expected):
    assert nxt(cron, after) == expected


def test_a_time_zone_s_wall_clock_and_its_daylight_saving_changes():
    # 03:00 in Paris is 02:00 UTC in winter, 01:00 UTC in summer.
    assert nxt("0 3 * * *", datetime(2026, 1, 10, tzinfo=UTC), "Europe/Paris") == datetime(
        2026, 1, 10, 2, tzinfo=UTC
    )
    assert nxt("0 3 * * *", datetime(2026, 7, 10, tzinfo=UTC), "Europe/Paris") == datetime(
        2026, 7, 10, 1, tzinfo=UTC
    )
    # 02:30 does not exist in Paris on 29 March 2026 (clocks go from 02:00 to 03:00): that day is skipped.
    assert nxt("30 2 * * *", datetime(2026, 3, 28, 12, tzinfo=UTC), "Europe/Paris") == datetime(
        2026, 3, 30, 0, 30, tzinfo=UTC
    )
    # 02:30 happens twice on 25 October 2026: it runs once, the first time (00:30 UTC), then the next day.
    first = nxt("30 2 * * *", datetime(2026, 10, 24, 12, tzinfo=UTC), "Europe/Paris")
    assert first == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert nxt("30 2 * * *", first, "Europe/Paris") == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)


def test_after_downtime_the_next_tick_is_the_one_to_come_not_each_missed_one():
    every = cadence_of(cron=None, every_minutes=60, timezone="UTC", anchor=ANCHOR)
    assert every.next_after(ANCHOR - timedelta(days=1)) == ANCHOR
    assert every.next_after(ANCHOR + timedelta(hours=5, minutes=1)) == ANCHOR + timedelta(hours=6)
    assert every.next_after(ANCHOR + timedelta(hours=6)) == ANCHOR + timedelta(hours=7)
    down_for_days = datetime(2026, 3, 10, 17, 45, tzinfo=UTC)
    assert nxt("0 3 * * *", down_for_days) == datetime(2026, 3, 11, 3, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cron": "0 3 * *"}, "five fields"),
        ({"cron": "61 3 * * *"}, "cron minute: 61 is outside 0-59"),
        ({"cron": "0 3 * * 8"}, "day of week: 8 is outside 0-7"),
        ({"cron": "0 0 30 2 *"}, "no tick in the next five years"),
        ({"cron": "0 5-1 * * *"}, "runs backwards"),
        ({"cron": "*/0 * * * *"}, "step"),
        ({"cron": "0 3 * * *", "every_minutes": 5}, "one of the two"),
        ({"every_minutes": 0}, "every_minutes: from 1"),
        ({"cron": "0 3 * * *", "timezone": "Mars/Olympus"}, "timezone: 'Mars/Olympus' is no IANA time zone"),
    ],
)
def test_a_cadence_that_cannot_be_read_says_what_and_where(fields, message):
    with pytest.raises(CadenceError, match=message):
        cadence_of(cron=fields.get("cron"), every_minutes=fields.get("every_minutes"),
                   timezone=fields.get("timezone", "UTC"), anchor=ANCHOR)  # fmt: skip


def test_cron_fields_lists_ranges_steps_and_names():
    cron = parse_cron("0,30 9-17/4 1-7 JAN,jul sun")
    assert cron.minutes == {0, 30} and cron.hours == {9, 13, 17} and cron.months == {1, 7}
    assert cron.weekdays == {0} and cron.days == set(range(1, 8))


GATE = Gate("ndcg@10", minimum=0.5, max_drop=0.02)
BASE = {f"q{i}": 0.8 for i in range(40)}


def test_the_gate_passes_fails_on_the_minimum_and_on_a_significant_drop_only():
    assert verdict(GATE, mean=0.8, per_question=BASE, baseline=BASE).passed
    low = verdict(GATE, mean=0.45, per_question={k: 0.45 for k in BASE})
    assert not low.passed and [r["reason"] for r in low.reasons] == [BELOW_MIN]
    dropped = {k: 0.7 for k in BASE}  # 0.1 lower on every question: significant
    failed = verdict(GATE, mean=0.7, per_question=dropped, baseline=BASE, baseline_label="nightly of 03-10")
    assert [r["reason"] for r in failed.reasons] == [DROPPED]
    assert "dropped 0.1000 against nightly of 03-10 on the 40 questions" in failed.reasons[0]["message"]
    assert failed.baseline["p_value"] < 0.05
    noisy = dict(BASE, q0=0.0)  # one question lost: a drop of 0.02 the paired test does not call significant
    assert verdict(Gate("ndcg@10", max_drop=0.01), mean=0.78, per_question=noisy, baseline=BASE).passed
    off = verdict(Gate("ndcg@10", check_drop=False), mean=0.7, per_question=dropped, baseline=BASE)
    assert off.passed and off.baseline is None


def test_a_failed_run_or_a_missing_metric_fails_the_gate_as_an_error():
    assert (
        verdict(GATE, error="12 of 40 questions failed", mean=None, per_question={}).reasons[0]["reason"]
        == ERROR
    )
    assert not verdict(GATE, mean=None, per_question={}).passed
