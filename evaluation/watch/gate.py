"""A schedule's gate, decided for one scheduled run. Plain Python: no Django import.

- `min`: the run's mean of the metric must be at least this.
- `max_drop`: against the last run of the schedule that passed, on the questions both scored, the mean may drop
  by at most this much, judged by the paired randomization test the runs are compared with everywhere
  (evaluation.runs.stats): a drop beyond it fails the gate only when the test calls it significant (p < 0.05), so
  the noise of a few questions never fires an alert. Without `max_drop` a significant drop of any size fails it
  (the issue's "drops significantly"); `max_drop: null` with `check_drop: false` turns the comparison off.
- `max_drift`: the golden entries drifted under the collection (an expected document deleted, changed since a
  person last looked, or expired; goldenset.services.drift) may be at most this many.
- A run that failed (its questions' calls failing beyond its error rate, or its job) fails the gate as an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evaluation.runs.stats import align_by_question, paired_randomization_test

__all__ = ["ALPHA", "Gate", "Verdict", "verdict"]

ALPHA = 0.05
ERROR, BELOW_MIN, DROPPED, DRIFTED = "error", "below-min", "dropped", "drifted"  # why a gate failed


@dataclass(frozen=True)
class Gate:
    metric: str
    minimum: float | None = None
    max_drop: float | None = None
    check_drop: bool = True
    max_drift: int | None = None  # golden entries drifted (goldenset.services.drift) beyond which it fails

    def as_dict(self) -> dict:
        return {
            "metric": self.metric,
            "min": self.minimum,
            "max_drop": self.max_drop,
            "check_drop": self.check_drop,
            "max_drift": self.max_drift,
        }


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reasons: list[dict] = field(
        default_factory=list
    )  # each {"reason": ERROR | BELOW_MIN | DROPPED, "message", ...}
    value: float | None = None  # the run's mean of the gate's metric
    baseline: dict | None = None  # the comparison with the last passing run, when there was one

    def as_dict(self) -> dict:
        return {
            "passed": self.passed,
            "reasons": self.reasons,
            "value": self.value,
            "baseline": self.baseline,
        }

    def summary(self) -> str:
        return "passed" if self.passed else "; ".join(r["message"] for r in self.reasons)


def verdict(
    gate: Gate,
    *,
    error: str = "",
    mean: float | None,
    per_question: Mapping[str, float | None],
    baseline: Mapping[str, float | None] | None = None,
    baseline_label: str = "",
) -> Verdict:
    """The gate's verdict on a run: `mean` its mean of the metric, `per_question` its value per question (entry
    id), `baseline` the last passing run's (None when the schedule has none yet)."""
    if error:
        return Verdict(False, [{"reason": ERROR, "message": f"the run failed: {error}"}])
    reasons: list[dict] = []
    if mean is None:
        return Verdict(False, [{"reason": ERROR, "message": f"the run has no {gate.metric}"}])
    if gate.minimum is not None and mean < gate.minimum:
        reasons.append(
            {
                "reason": BELOW_MIN,
                "message": f"{gate.metric} {mean:.4f} is below the minimum {gate.minimum:g}",
            }
        )
    compared = None
    if baseline is not None and gate.check_drop:
        compared = _compare(gate, per_question, baseline, baseline_label)
        if compared is not None and compared["fails"]:
            reasons.append({"reason": DROPPED, "message": compared["message"]})
    return Verdict(not reasons, reasons, mean, compared)


def drift_reason(gate: Gate, drifted: int) -> dict | None:
    """Why the golden set's drift fails the gate, or None."""
    if gate.max_drift is None or drifted <= gate.max_drift:
        return None
    return {
        "reason": DRIFTED,
        "message": f"{drifted} golden entries drifted, more than the {gate.max_drift} allowed",
    }


def _compare(gate: Gate, current, baseline, label: str) -> dict | None:
    aligned = align_by_question([current, baseline])
    if not aligned.keys:
        return None
    now, then = aligned.matrix
    drop = float(then.mean() - now.mean())
    p_value = paired_randomization_test(now, then)
    allowed = gate.max_drop if gate.max_drop is not None else 0.0
    fails = drop > allowed and p_value < ALPHA
    message = (
        f"{gate.metric} dropped {drop:.4f} against {label or 'the last passing run'} on the {len(aligned.keys)} "
        f"questions both scored (p = {p_value:.4f}"
        + (f", more than the {allowed:g} allowed)" if gate.max_drop is not None else ", significant)")
    )
    return {"questions": len(aligned.keys), "drop": drop, "p_value": p_value, "allowed": allowed, "fails": fails,
            "message": message}  # fmt: skip
