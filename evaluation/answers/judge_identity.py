"""Which judge scored an answer run, as the run's config records it, and whether runs compared were judged alike.
Plain Python: no Django.

An answer run's config records its judge: `judge_model` (a chat model, or "heuristic"), `judge_version` (the chat
judge's prompt version, or the heuristic's) and, for a chat judge, `judge_prompts`, the sha256 of each metric's
prompt (evaluation.answers.judge_llm.PROMPT_SHA256): a prompt edited without a new version is still told apart.

Two answer runs judged by different models, versions or prompts do not measure their answers on one scale: a
metric can move because the judge changed. `judge_mismatch` names what differs for Compare to warn. A run stored
before versions were recorded reads "not recorded", which differs from any recorded version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaluation.answers import judge_llm
from evaluation.answers.judge import HEURISTIC, HEURISTIC_VERSION, LLM_JUDGE

__all__ = ["NOT_RECORDED", "JudgeMismatch", "judge_mismatch", "judge_name", "recorded"]

NOT_RECORDED = "not recorded"


def judge_name(judge_model: str | None) -> str:
    """The judge a run or an evaluation uses, as calibration names it (its report, its thresholds):
    "heuristic", or "llm-judge:<model>"."""
    return HEURISTIC if not judge_model or judge_model == HEURISTIC else f"{LLM_JUDGE}:{judge_model}"


def recorded(judge_model: str | None) -> dict[str, Any]:
    """What a run's config records of its judge beside judge_model (None or "heuristic": the heuristic)."""
    if judge_model is None or judge_model == HEURISTIC:
        return {"judge_version": HEURISTIC_VERSION, "judge_prompts": None}
    return {"judge_version": judge_llm.PROMPT_VERSION, "judge_prompts": dict(judge_llm.PROMPT_SHA256)}


@dataclass(frozen=True)
class JudgeMismatch:
    judges: dict[str, str]  # run name -> its judge as shown ("gpt-4o-mini (version evalsite-judge-1)")
    differs: tuple[str, ...]  # of "model", "version", "prompts", in that order
    # The runs judged by an older version or older prompts than this release's judge of the same model: those to
    # evaluate again (empty when only the models differ).
    older: tuple[str, ...]
    # The metrics whose prompts differ between runs of one model and one version (a prompt edited without a new
    # version); empty when the model or the version differs.
    prompts: tuple[str, ...] = ()


def _prompts(config: Mapping[str, Any]) -> Mapping[str, str]:
    found = config.get("judge_prompts")
    return found if isinstance(found, Mapping) else {}


def _shown(config: Mapping[str, Any]) -> str:
    model = config.get("judge_model") or HEURISTIC
    return f"{model} (version {config.get('judge_version') or NOT_RECORDED})"


def _is_current(config: Mapping[str, Any]) -> bool:
    """Whether this release's judge of the run's model would judge it as it was judged."""
    now = recorded(config.get("judge_model") or HEURISTIC)
    return config.get("judge_version") == now["judge_version"] and (config.get("judge_prompts") or None) == (
        now["judge_prompts"] or None
    )


def judge_mismatch(configs: Mapping[str, Mapping[str, Any]]) -> JudgeMismatch | None:
    """What differs between the judges of the named runs' configs, or None when one judge scored them all."""
    models = {c.get("judge_model") or HEURISTIC for c in configs.values()}
    versions = {c.get("judge_version") or NOT_RECORDED for c in configs.values()}
    differs = tuple(
        part for part, split in (("model", len(models) > 1), ("version", len(versions) > 1)) if split
    )
    edited: tuple[str, ...] = ()
    if not differs:  # one model and one version: were its prompts edited without a new version?
        metrics = sorted({metric for c in configs.values() for metric in _prompts(c)})
        edited = tuple(m for m in metrics if len({_prompts(c).get(m) for c in configs.values()}) > 1)
        differs = ("prompts",) if edited else ()
    if not differs:
        return None
    judges = {name: _shown(config) for name, config in configs.items()}
    older = tuple(name for name, config in configs.items() if not _is_current(config))
    return JudgeMismatch(judges, differs, older, edited)
