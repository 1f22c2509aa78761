"""k sampled judgements made one: the judge's sampling settings, the majority verdict per item, the median
rating, and the share of samples that agreed (the judge's confidence). Plain Python: no Django import.

Why sample at all: a chat model asked once at temperature 0 gives one answer whose steadiness nobody sees; asked
k times at a sampling temperature (distinct seeds) it disagrees with itself exactly on the items it is unsure
of. The majority of k is steadier than any single answer (self-consistency), and the share of samples that
agreed with the majority tells the reader how sure the judge was, item by item.

The rules (evaluation.answers.judge_llm applies them per metric):

- `JudgeSampling`: k (`samples`, odd, 1..MAX_SAMPLES) and the sampling `temperature` used when k > 1. One
  judgement (k = 1) is asked at temperature 0 with the judge's own seed: the default, and what runs made before
  sampling existed did. k > 1 asks at `temperature` with seeds base, base+1, ... (base: the judge's seed, or 0),
  so the call cache, whose key holds seed and temperature, keeps k answers, not one answered k times.
- Quorum: the samples are used when more than half of the k are readable (`has_quorum`); the unreadable and
  failed ones are counted, never guessed.
- Per item (statement, citation, passage): the majority verdict of the readable samples; a tie (possible only
  when some samples were unreadable) is the negative verdict (not supported, not relevant): a claim the judge
  cannot agree is supported is not counted as supported. The 1-5 rating takes the median (the lower one of an
  even count, for the same reason).
- Confidence: the share of the readable samples that gave the chosen verdict (votes cast, not k: the samples
  that could not be read are reported beside it). Per item in the detail rows, and per Score the mean over its
  items. With k = 1 there is no confidence to speak of (one answer always agrees with itself), so none is
  recorded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalsite.errors import EvalsiteError
from evaluation.answers.judge import HEURISTIC

MAX_SAMPLES = 9
DEFAULT_SAMPLING_TEMPERATURE = 0.7
MAX_TEMPERATURE = 2.0  # the OpenAI API's upper bound; most servers share it

Verdicts = Mapping[int, tuple[Any, str]]  # one sample's reading: item -> (verdict, reason)


@dataclass(frozen=True)
class JudgeSampling:
    """How many judgements the judge asks per metric, and at what temperature (see the module doc)."""

    samples: int = 1
    temperature: float = DEFAULT_SAMPLING_TEMPERATURE  # used only when samples > 1

    def __post_init__(self) -> None:
        if not (1 <= self.samples <= MAX_SAMPLES and self.samples % 2 == 1):
            raise ValueError(f"samples must be odd, 1..{MAX_SAMPLES}, got {self.samples!r}")
        if not (math.isfinite(self.temperature) and 0.0 <= self.temperature <= MAX_TEMPERATURE):
            raise ValueError(f"temperature must be in 0..{MAX_TEMPERATURE:g}, got {self.temperature!r}")

    @property
    def call_temperature(self) -> float:
        """The temperature every call is sent with: 0 for one judgement, else the sampling temperature."""
        return 0.0 if self.samples == 1 else self.temperature

    def seeds(self, base: int | None) -> list[int | None]:
        """One seed per sample: the judge's own for one judgement, distinct ones from base (or 0) for k > 1."""
        if self.samples == 1:
            return [base]
        start = base if base is not None else 0
        return [start + i for i in range(self.samples)]


def judge_run_config(judge_model: str | None, sampling: JudgeSampling) -> tuple[dict[str, Any], list[str]]:
    """The judge as a run records it, so runs are compared like with like: the model (None: the heuristic),
    the samples per metric and their temperature; and a warning when samples were asked of the heuristic,
    which is deterministic and judges once (it records one sample and no temperature)."""
    if judge_model is None:
        unused = (
            [
                f"judge_samples {sampling.samples} not used: the heuristic judge is deterministic (no chat "
                "endpoint, or judge_model heuristic), so it judged once"
            ]
            if sampling.samples > 1
            else []
        )
        return {"judge_model": HEURISTIC, "judge_samples": 1, "judge_temperature": None}, unused
    config = {"judge_model": judge_model, "judge_samples": sampling.samples}
    return {**config, "judge_temperature": sampling.call_temperature}, []


def _fail(field: str, message: str) -> EvalsiteError:
    return EvalsiteError("validation-error", f"{field}: {message}", details={"field": field})


def parse_judge_sampling(samples: Any = None, temperature: Any = None) -> JudgeSampling:
    """judge_samples and judge_temperature as a request, a form or the CLI gives them (numbers or numeric
    strings; None: the default), or a validation-error naming the field. A temperature without samples > 1 is
    refused: one judgement is always made at temperature 0, and a setting that would be ignored is a mistake."""
    k = 1
    if samples is not None and samples != "":
        number = _number(samples)
        if number is None or not number.is_integer() or not 1 <= number <= MAX_SAMPLES or number % 2 == 0:
            raise _fail(
                "judge_samples", f"expected an odd whole number from 1 to {MAX_SAMPLES}, got {samples!r}."
            )
        k = int(number)
    if temperature is None or temperature == "":
        return JudgeSampling(k)
    value = _number(temperature)
    if value is None or not 0.0 <= value <= MAX_TEMPERATURE:
        raise _fail(
            "judge_temperature", f"expected a number from 0 to {MAX_TEMPERATURE:g}, got {temperature!r}."
        )
    if k == 1:
        raise _fail("judge_temperature", "only with judge_samples above 1 (one judgement is made at 0).")
    return JudgeSampling(k, value)


def _number(value: Any) -> float | None:
    """A finite number from a number or a numeric string; None otherwise (booleans included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


# --- votes -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vote:
    """One item's verdict over the readable samples."""

    verdict: Any  # bool for a verdict, int for a rating
    reason: str  # the reason of the first sample that gave this verdict
    agreement: float  # share of the readable samples that gave it: the judge's confidence in it
    values: tuple[Any, ...]  # every readable sample's verdict, in seed order


def majority(values: Sequence[bool]) -> bool:
    """True when more samples said True than False; a tie is False (see the module doc)."""
    return 2 * sum(1 for v in values if v) > len(values)


def median_rating(values: Sequence[int]) -> int:
    """The median rating; the lower of the two middle ones for an even count."""
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def has_quorum(readable: int, asked: int) -> bool:
    """More than half of the asked samples are readable."""
    return 2 * readable > asked


def tally(samples: Sequence[Verdicts], pick: Callable[[Sequence[Any]], Any]) -> dict[int, Vote]:
    """Per item, `pick` (majority, median_rating) over the samples' verdicts. Every sample reads the same items
    (the reader checks each one against the items asked), so an item is in all of them or in none."""
    if not samples:
        raise ValueError("nothing to tally")
    votes: dict[int, Vote] = {}
    for item in samples[0]:
        values = tuple(sample[item][0] for sample in samples)
        chosen = pick(values)
        reason = next(sample[item][1] for sample in samples if sample[item][0] == chosen)
        agreed = sum(1 for v in values if v == chosen)
        votes[item] = Vote(chosen, reason, agreed / len(values), values)
    return votes


def mean_confidence(votes: Iterable[Vote]) -> float:
    agreements = [v.agreement for v in votes]
    return sum(agreements) / len(agreements) if agreements else 1.0


# --- a run ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplingSummary:
    confidence: dict[str, float]  # metric -> mean confidence over its sampled judgements
    warnings: list[str]


def summarize_sampling(judgements: Iterable[Mapping[str, Mapping[str, Any]]]) -> SamplingSummary:
    """A run's mean judge confidence per metric, over the questions whose judgement was sampled (detail holds
    "confidence"), and a warning per metric whose judgements lost samples (unreadable or failed) on the way.
    `judgements`: per question, {metric: the detail of its Score}."""
    confidences: dict[str, list[float]] = {}
    lost: dict[str, list[int]] = {}  # metric -> [unreadable, failed, asked]
    for per_question in judgements:
        for name, detail in per_question.items():
            confidence = detail.get("confidence")
            if isinstance(confidence, int | float) and not isinstance(confidence, bool):
                confidences.setdefault(name, []).append(float(confidence))
            counts = detail.get("samples")
            if isinstance(counts, Mapping) and "confidence" in detail:
                row = lost.setdefault(name, [0, 0, 0])
                row[0] += int(counts.get("unreadable") or 0)
                row[1] += int(counts.get("failed") or 0)
                row[2] += int(counts.get("asked") or 0)
    warnings = [
        f"{name}: {unreadable} unreadable and {failed} failed of {asked} judge samples; those questions "
        "were judged on the readable majority"
        for name, (unreadable, failed, asked) in lost.items()
        if unreadable or failed
    ]
    return SamplingSummary(
        confidence={name: round(sum(v) / len(v), 4) for name, v in confidences.items()}, warnings=warnings
    )
