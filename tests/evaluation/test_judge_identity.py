"""The judge a run records (model, version, a hash of every prompt) and what Compare says when runs were judged
by different ones (issue 27, item 4)."""

from __future__ import annotations

import hashlib

from evaluation.answers import judge_llm
from evaluation.answers.judge import HEURISTIC_VERSION
from evaluation.answers.judge_identity import NOT_RECORDED, judge_mismatch, recorded
from goldenset.vocabulary.metric_names import JUDGED_METRICS


def llm_config(model: str = "m", **changes) -> dict:
    return {"judge_model": model, **recorded(model), **changes}


def test_every_judged_metric_has_one_versioned_prompt_and_its_hash():
    assert tuple(judge_llm.PROMPTS) == JUDGED_METRICS
    for metric, prompt in judge_llm.PROMPTS.items():
        assert judge_llm.PROMPT_SHA256[metric] == hashlib.sha256(prompt.encode()).hexdigest()
    assert len(set(judge_llm.PROMPT_SHA256.values())) == len(JUDGED_METRICS)
    assert judge_llm.PROMPT_VERSION == "evalsite-judge-1"


def test_a_run_records_the_heuristic_version_or_the_chat_judges_prompts():
    assert (
        recorded(None) == recorded("heuristic") == {"judge_version": HEURISTIC_VERSION, "judge_prompts": None}
    )
    chat = recorded("qwen2.5:7b")
    assert chat == {"judge_version": "evalsite-judge-1", "judge_prompts": judge_llm.PROMPT_SHA256}
    chat["judge_prompts"]["faithfulness"] = "changed"  # a copy: a run's config cannot change the module's
    assert judge_llm.PROMPT_SHA256["faithfulness"] != "changed"


def test_runs_of_one_judge_are_not_flagged():
    assert judge_mismatch({"a": llm_config(), "b": llm_config()}) is None
    heuristic = {"judge_model": "heuristic", **recorded(None)}
    assert judge_mismatch({"a": heuristic, "b": dict(heuristic)}) is None
    assert judge_mismatch({"only": llm_config()}) is None


def test_a_different_model_or_version_is_named_with_each_runs_judge():
    found = judge_mismatch({"a": llm_config("m1"), "b": llm_config("m2")})
    assert found is not None
    assert found.differs == ("model",) and found.prompts == ()
    assert found.judges == {"a": "m1 (version evalsite-judge-1)", "b": "m2 (version evalsite-judge-1)"}
    assert found.older == ()  # both judged as this release judges: only a model to choose

    heuristic = {"judge_model": "heuristic", **recorded(None)}
    found = judge_mismatch({"chat": llm_config("m"), "offline": heuristic})
    assert found is not None and found.differs == ("model", "version")
    assert found.judges["offline"] == f"heuristic (version {HEURISTIC_VERSION})"
    assert found.older == ()

    # A run stored before versions were recorded: its version is unknown, so it differs from a recorded one.
    old = {"judge_model": "m", "judge_samples": 1}
    found = judge_mismatch({"old": old, "new": llm_config("m")})
    assert found is not None and found.differs == ("version",)
    assert found.judges["old"] == f"m (version {NOT_RECORDED})"
    assert found.older == ("old",)  # the run to evaluate again


def test_a_prompt_edited_without_a_new_version_is_caught_by_its_hash():
    edited = llm_config()
    edited["judge_prompts"] = {**edited["judge_prompts"], "citation_precision": "0" * 64}
    found = judge_mismatch({"before": llm_config(), "after": edited})
    assert found is not None
    assert found.differs == ("prompts",) and found.prompts == ("citation_precision",)
    assert found.older == ("after",)
