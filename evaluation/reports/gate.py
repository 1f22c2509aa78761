"""The CI gate's verdict, decided here for every output of `manage.py evaluate` and `evaluate_run`: the text
report's last line, the JSON's `passed`, the markdown's PASS / FAIL, the JUnit gate cases and the one line on
stderr. Plain Python: no Django import.

A gate checks every configuration of a batch: its metric must clear the bar (`--fail-under`), and a retrieval
run must be complete (a target whose questions failed too often fails the gate, bar or no bar). An answer gate
without a bar checks nothing: it is no gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def clears(value: float, bar: float) -> bool:
    """value >= bar, forgiving the last bits of float summation (a mean of 0.7 may sum to 0.69999...)."""
    return round(value, 12) >= bar


def shown_below(value: float, bar: float, places: int = 4) -> str:
    """The value with `places` decimals, or with as many more as it takes to be visibly below the bar."""
    for more in range(places, 13):
        text = f"{value:.{more}f}"
        if float(text) < bar:
            return text
    return repr(value)


def number(value: float) -> str:
    """A bar as typed: 0.7, not 0.700000 or 0.69999999999999996."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


@dataclass(frozen=True)
class Check:
    """One configuration at the gate: its label, the gated value (None: the run failed, or has no score) and
    whether its run failed."""

    label: str
    value: float | None
    run_failed: bool = False


@dataclass(frozen=True)
class Gate:
    """The gate of one batch: the metric (`ndcg@10`, or `score` for answers), the bar (None: none), a check per
    configuration in the batch's order, and how many decimals a value shows (4; 1 for the 0-100 score)."""

    metric: str
    bar: float | None
    checks: Sequence[Check]
    places: int = 4
    requires_complete: bool = True  # retrieval: a failed run fails the gate without a bar

    @property
    def name(self) -> str | None:
        """What the gate checks (`ndcg@10 >= 0.7`, `every run complete`), None when it checks nothing."""
        if self.bar is not None:
            return f"{self.metric} >= {number(self.bar)}"
        return "every run complete" if self.requires_complete else None

    def passes(self, check: Check) -> bool:
        if check.run_failed and self.requires_complete:
            return False
        if self.bar is None:
            return True
        return check.value is not None and clears(check.value, self.bar)

    @property
    def failing(self) -> list[Check]:
        return [c for c in self.checks if not self.passes(c)]

    @property
    def passed(self) -> bool:
        return not self.failing

    def value(self, check: Check) -> str:
        """The check's value as the reports show it: below the bar, with the decimals it takes to show it."""
        if check.run_failed:
            return "run failed"
        if check.value is None:
            return "no value"
        if self.bar is not None and not self.passes(check):
            return shown_below(check.value, self.bar, self.places)
        return f"{check.value:.{self.places}f}"

    def why(self, check: Check) -> str:
        """Why a check fails: `0.7100 < 0.8`, `run failed`, `no value`."""
        shown = self.value(check)
        if check.run_failed or check.value is None or self.bar is None:
            return shown
        return f"{shown} < {number(self.bar)}"

    def report_line(self) -> str:
        """The text report's last line (stdout)."""
        if self.failing:
            reasons = "; ".join(f"{c.label}: {self.why(c)}" for c in self.failing)
            return f"gate: {self.name} for every configuration: FAIL ({reasons})"
        if self.bar is None:
            return f"gate: none (no --fail-under); {self.metric} reported only"
        return f"gate: {self.name} for every configuration: PASS"

    def verdict_line(self) -> str:
        """The one line written to stderr whatever the output format: `gate failed: recall@10 >= 0.8: hybrid
        0.7100 < 0.8`, `gate passed: recall@10 >= 0.8: hybrid 0.8500, fulltext 0.8100`."""
        if self.name is None:
            return f"gate: none (no --fail-under); {self.metric} reported only"
        if self.failing:
            return f"gate failed: {self.name}: " + "; ".join(f"{c.label} {self.why(c)}" for c in self.failing)
        if self.bar is None:
            return f"gate passed: {self.name} (no --fail-under; {self.metric} reported only)"
        return f"gate passed: {self.name}: " + ", ".join(f"{c.label} {self.value(c)}" for c in self.checks)

    def case_message(self, check: Check) -> str:
        """A configuration's gate case: `recall@10 0.7100 < 0.8` (fails), `recall@10 0.8500 >= 0.8` (passes)."""
        if check.run_failed:
            return "the run failed: too many of its questions failed (see the run's warnings)"
        if self.bar is None:
            return "the run is complete"
        if self.passes(check):
            return f"{self.metric} {self.value(check)} >= {number(self.bar)}"
        return f"{self.metric} {self.why(check)}"
