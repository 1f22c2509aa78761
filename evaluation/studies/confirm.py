"""The winner against the baseline on the confirmation questions, which no trial saw. Plain Python (numpy): no
Django import.

Both are scored on the same confirmation questions; their means get percentile bootstrap intervals (resampling
questions) and their per-question differences the paired randomization test (evaluation.runs.stats, as Compare).
The winner is called better only when it is ahead and p < ALPHA. Choosing the best of many configurations on the
tuning part flatters it there (the winner's curse); on the confirmation part it competes on questions it was not
chosen on, so a configuration no better than the baseline is called better in at most about ALPHA / 2 of studies
(the test is two-sided, the call one-sided), however many configurations were tried.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.runs.stats import bootstrap_ci, paired_randomization_test

ALPHA = 0.05


@dataclass(frozen=True)
class Confirmation:
    winner: float
    winner_ci: tuple[float, float]
    baseline: float
    baseline_ci: tuple[float, float]
    difference: float
    p_value: float
    significant: bool  # ahead, and p < ALPHA
    configurations_tried: int
    questions: int

    def verdict(self, metric: str) -> str:
        """The outcome in one sentence, as the study page, the API and the command say it."""
        seen = f"on the {self.questions} confirmation questions no trial saw"
        tried = (
            f"{self.configurations_tried} configuration{'s' if self.configurations_tried != 1 else ''} tried"
        )
        if self.significant:
            return (f"Better: the winner's {metric} is {self.winner:.4f} against the baseline's {self.baseline:.4f} "
                    f"{seen} ({self.difference:+.4f}, p = {self.p_value:.3g}; {tried}).")  # fmt: skip
        return (f"Not shown better: the winner's {metric} is {self.winner:.4f} against the baseline's "
                f"{self.baseline:.4f} {seen} ({self.difference:+.4f}, p = {self.p_value:.3g}; {tried}); "
                "what the tuning part showed did not hold up.")  # fmt: skip


def confirm(
    winner: np.ndarray, baseline: np.ndarray, *, configurations_tried: int, seed: int = 0
) -> Confirmation:
    """The confirmation of a study's winner against its baseline, from their per-question scores (the same
    confirmation questions, in the same order)."""
    winner, baseline = np.asarray(winner, dtype=float), np.asarray(baseline, dtype=float)
    if winner.shape != baseline.shape or winner.ndim != 1 or winner.size == 0:
        raise ValueError("the winner and the baseline must score the same confirmation questions")
    difference = float(winner.mean() - baseline.mean())
    p_value = paired_randomization_test(winner, baseline, seed=seed)
    return Confirmation(
        winner=float(winner.mean()),
        winner_ci=bootstrap_ci(winner, seed=seed),
        baseline=float(baseline.mean()),
        baseline_ci=bootstrap_ci(baseline, seed=seed),
        difference=difference,
        p_value=p_value,
        significant=difference > 0 and p_value < ALPHA,
        configurations_tried=configurations_tried,
        questions=int(winner.size),
    )
