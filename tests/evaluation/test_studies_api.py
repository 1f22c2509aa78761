"""Studies over REST, on the demo's ClapNQ sample (597 passages, 300 answerable questions) with jobs run inline:
the trials see only the tuning part, the winner and the baseline are two ordinary runs over the confirmation part,
and every number the study reports can be recomputed from those runs."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest

from evaluation.models import ConfigPreset, EvaluationRun, QuestionResult, Study
from evaluation.runs.stats import bootstrap_ci, paired_randomization_test
from evaluation.studies.request import STUDY_METRICS
from goldenset.beir_import import beir_import
from goldenset.vocabulary.metric_names import (
    BPREF,
    JUDGED_METRICS,
    JUDGED_SHARE,
    MAP_COND,
    MRR,
    NDCG,
    NDCG_COND,
    RECALL,
    REFUSAL_METRICS,
)
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.schema_support import conforms, served_schema

URL = "/lmkit/v1/search/evaluate/studies"
SCHEMA = functools.cache(served_schema)  # real responses hold to the served OpenAPI schema
CLAPNQ = Path(__file__).resolve().parents[2] / "demo" / "clapnq"


@pytest.fixture
def clapnq(world):
    beir_import(folder=CLAPNQ, tenant=world.tenant, collection_id="clapnq", actor="test")
    return world


@pytest.fixture
def post_study(clapnq, django_capture_on_commit_callbacks):
    """POST a study (the test's fields over a small one of BM25's k1 and b); its job runs inline once the
    request commits, as a worker would take it."""

    def post(**fields):
        with django_capture_on_commit_callbacks(execute=True):
            return clapnq.client.post(URL, {**STUDY, **fields}, format="json")

    return post


STUDY = {
    "collection_id": "clapnq",
    "base": {"search_type": "FullText"},
    "space": {"bm25_k1": {"low": 0.3, "high": 2.4, "step": 0.3}, "bm25_b": [0.3, 0.6, 0.9]},
    "metric": "ndcg@10",
    "budget": {"trials": 12},
    "seed": 7,
}


def test_a_study_tunes_on_one_part_and_confirms_on_the_other_as_ordinary_runs(clapnq, post_study):
    response = post_study()
    assert response.status_code == 202, response.json()
    accepted = conforms(SCHEMA(), response, "/lmkit/v1/search/evaluate/studies", "post", 202)
    path = "/lmkit/v1/search/evaluate/studies/{study_id}"
    study = conforms(SCHEMA(), clapnq.client.get(f"{URL}/{accepted['study_id']}"), path, "get", 200)
    assert study["status"] == "Completed", study["error"]
    assert study["split"] == {"tuning": 150, "confirmation": 150}
    assert len(study["trials"]) == 12
    for trial in study["trials"]:
        assert set(trial["values"]) == {"bm25_k1", "bm25_b"}
        assert trial["config"]["bm25_k1"] == trial["values"]["bm25_k1"]
        assert trial["questions"] in (38, 75, 150) and (trial["questions"] == 150 or trial["pruned"])
    complete = [t for t in study["trials"] if not t["pruned"]]
    best = max(complete, key=lambda t: (t["value"], -t["number"]))
    assert study["best"]["number"] == best["number"] and study["best"]["tuning_value"] == best["value"]
    assert study["evaluations"] <= sum(t["questions"] for t in study["trials"])

    confirmation = study["confirmation"]
    baseline = EvaluationRun.objects.get(pk=confirmation["baseline"]["run_id"])
    winner = EvaluationRun.objects.get(pk=confirmation["winner"]["run_id"])
    assert baseline.batch_id == winner.batch_id and baseline.question_count == winner.question_count == 150
    assert winner.config["bm25_k1"] == study["best"]["values"]["bm25_k1"]
    assert "bm25_k1" not in baseline.config  # the base: BM25's defaults
    # the confirmation part is the questions no trial saw: disjoint from the tuning part, the rest of the set
    confirmed = set(QuestionResult.objects.filter(run=winner).values_list("entry_id", flat=True))
    assert len(confirmed) == 150
    # every number is the runs' own, recomputed here
    scores = {
        run.pk: np.array(
            [m["ndcg@10"] for m in QuestionResult.objects.filter(run=run).order_by("entry_id").values_list(
                "metrics", flat=True)]
        )
        for run in (baseline, winner)
    }  # fmt: skip
    assert confirmation["winner"]["value"] == pytest.approx(winner.metrics["ndcg@10"], abs=1e-12)
    assert confirmation["baseline"]["value"] == pytest.approx(baseline.metrics["ndcg@10"], abs=1e-12)
    assert confirmation["winner"]["ci"] == list(bootstrap_ci(scores[winner.pk], seed=7))
    assert confirmation["p_value"] == paired_randomization_test(
        scores[winner.pk], scores[baseline.pk], seed=7
    )
    assert confirmation["difference"] == pytest.approx(
        confirmation["winner"]["value"] - confirmation["baseline"]["value"], abs=1e-12
    )
    assert confirmation["significant"] == (confirmation["difference"] > 0 and confirmation["p_value"] < 0.05)
    assert 1 <= confirmation["configurations_tried"] <= 12
    assert confirmation["verdict"].startswith("Better" if confirmation["significant"] else "Not shown better")

    # the same request and seed give the same trials
    again = clapnq.client.get(f"{URL}/{post_study().json()['study_id']}").json()
    assert [t["values"] for t in again["trials"]] == [t["values"] for t in study["trials"]]


def test_the_winner_saved_as_a_preset_once_per_name_and_only_for_its_tenant(clapnq, post_study):
    study_id = post_study(budget={"trials": 3}).json()["study_id"]
    study = Study.objects.get(pk=study_id)
    assert study.confirmation["significant"] is False  # three trials of BM25: not shown better
    # a winner not shown better is saved only when the client says it knows
    refused = clapnq.client.post(f"{URL}/{study_id}/save", {"name": "tuned bm25"}, format="json")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "winner-not-better"
    assert refused.json()["error"]["details"]["field"] == "accept_not_better"
    assert "was not shown better than the baseline" in refused.json()["error"]["message"]
    assert not ConfigPreset.objects.exists()
    body = {"name": "tuned bm25", "accept_not_better": True}
    saved = clapnq.client.post(f"{URL}/{study_id}/save", body, format="json")
    assert saved.status_code == 201, saved.json()
    assert (
        conforms(SCHEMA(), saved, "/lmkit/v1/search/evaluate/studies/{study_id}/save", "post", 201)["verdict"]
        == study.confirmation["verdict"]
    )
    preset = ConfigPreset.objects.get(tenant=clapnq.tenant, name="tuned bm25")
    assert preset.config == {k: v for k, v in study.best["config"].items() if k != "label"}
    again = clapnq.client.post(f"{URL}/{study_id}/save", body, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "preset-exists"
    assert clapnq.other_client.get(f"{URL}/{study_id}").status_code == 404
    assert clapnq.other_client.post(f"{URL}/{study_id}/save", {"name": "x"}, format="json").status_code == 404
    assert clapnq.other_client.get(URL).json()["count"] == 0
    listed = conforms(SCHEMA(), clapnq.client.get(URL, {"collection_id": "clapnq"}), URL, "get", 200)
    assert [s["study_id"] for s in listed["results"]] == [study_id] and "trials" not in listed["results"][0]
    assert listed["results"][0]["best"] == study.best


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"space": {"bm25_k": [1.0]}}, "space.bm25_k", "not a field a study varies"),
        ({"space": {"bm25_k1": {"low": 0.5, "high": 30}}}, "space.bm25_k1", "outside 0 to 10"),
        ({"space": {"fusion": ["Rrf", "Max"]}}, "space.fusion", "'Max' is not one of"),
        ({"space": {}}, "space", "at least one"),
        ({"metric": "ndcg@0"}, "metric", "expected ndcg@K"),
        ({"metric": "map"}, "metric", "expected ndcg@K"),
        ({"budget": {"trials": 0}}, "budget.trials", "from 1 to 2000"),
        ({"budget": {"trials": 5, "hours": 1}}, "budget", "expected {trials, seconds"),
        ({"seed": -1}, "seed", "from 0 to"),
        ({"seed": True}, "seed", "from 0 to"),
        ({"confirm_share": 0.99}, "confirm_share", "0.05 to 0.95"),
        ({"sampler": "cmaes"}, "sampler", "expected one of"),
        ({"sampler": "grid", "prune": True}, "prune", "every point"),
        ({"base": {"search_type": "FullText", "k": 3}}, "base.k", "unknown field"),
        ({"base": {"target": "prod"}}, "space.bm25_k1", "a target searches as it is configured"),
        (
            {"base": {"bm25_b": 0.5}, "space": {"params.boost": [1]}},
            "space.params.boost",
            "the base names no target",
        ),
        ({"baseline": {"bm25_b": 2}}, "baseline.bm25_b", "from 0 to 1"),
        ({"max_p95_ms": "fast"}, "max_p95_ms", "expected a number"),
        ({"space": {"rerank": ["proximity"]}}, "space.rerank", "is not one of False, True"),
        ({"colection_id": "clapnq"}, "colection_id", "unknown field"),
        # a field no trial can move: it would spend the budget on nothing
        (
            {"space": {"fulltext_weight": {"low": 0.1, "high": 0.9}}},
            "space.fulltext_weight",
            "has no effect in any trial: it matters only when search_type is Hybrid and fusion is Weighted, and "
            "the trials have search_type FullText (the base's); fusion Rrf (the base's).",
        ),
        (
            {"base": {"search_type": "Hybrid"}, "space": {"fulltext_weight": [0.3, 0.7]}},
            "space.fulltext_weight",
            "fusion Rrf (the base's)",
        ),
        (
            {"base": {"search_type": "Hybrid", "fusion": "Weighted"}, "space": {"rrf_k": [20, 60]}},
            "space.rrf_k",
            "fusion Weighted (the base's)",
        ),
        (
            {"base": {"search_type": "Vector"}, "space": {"bm25_b": [0.3, 0.9]}},
            "space.bm25_b",
            "search_type Vector",
        ),
        (
            {"space": {"search_type": ["Vector"], "bm25_k1": [1.0, 2.0]}},
            "space.bm25_k1",
            "search_type Vector. Set that",
        ),
        (
            {"space": {"top_k": [10, 20, 50]}},
            "space.top_k",
            "the metric reads the top 10, and every top_k asked is 10 or more",
        ),
    ],
)
def test_a_bad_study_is_a_400_naming_its_field_and_starts_nothing(post_study, fields, field, message):
    response = post_study(**fields)
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["details"]["field"] == field and message in error["message"], error
    assert not Study.objects.exists()


def test_a_golden_set_too_small_to_split_is_a_400(world):
    from tests.support import handbook_entries

    handbook_entries(world.collection)  # three questions with expected documents
    response = world.client.post(
        URL,
        {"collection_id": "handbook", "base": {}, "space": {"bm25_b": [0.5, 0.75]}},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "golden-set-too-small"
    assert (
        world.other_client.post(
            URL, {"collection_id": "clapnq", "base": {}, "space": {"bm25_b": [0.5]}}, format="json"
        ).status_code
        == 404
    )


def test_the_command_runs_a_study_in_place_and_prints_what_the_api_gives(clapnq, capsys):
    import json

    from django.core.management import call_command

    space = json.dumps({"bm25_b": [0.4, 0.75, 1.0]})
    scope = {"cluster": "acme", "tenant": "search", "collection": "clapnq"}
    call_command(
        "study", space=space, trials="3", seed="3", sampler="grid", no_prune=True, format="json", **scope
    )
    printed = json.loads(capsys.readouterr().out)
    study = Study.objects.get(pk=printed["study_id"])
    assert study.job is None and printed["status"] == "Completed"
    assert printed == json.loads(json.dumps(clapnq.client.get(f"{URL}/{study.pk}").json()))
    assert sorted(t["values"]["bm25_b"] for t in printed["trials"]) == [0.4, 0.75, 1.0]
    assert printed["confirmation"]["questions"] == 150

    # two trials: not shown better, so --save keeps it only with --accept-not-better
    call_command("study", space=space, trials="2", save="from the command", **scope)
    printed = capsys.readouterr()
    assert "best on the tuning part: trial" in printed.out and "Not shown better:" in printed.out
    assert "saved as preset" not in printed.out
    assert printed.err.startswith(
        "not saved as 'from the command': The winner was not shown better than the baseline on the held-out "
        "questions (p = "
    ) and printed.err.strip().endswith("--accept-not-better saves it.")
    assert not ConfigPreset.objects.exists()
    call_command("study", space=space, trials="2", save="from the command", accept_not_better=True, **scope)
    out = capsys.readouterr().out
    assert "Not shown better:" in out and "saved as preset 'from the command'" in out
    assert ConfigPreset.objects.filter(tenant=clapnq.tenant, name="from the command").exists()


def test_the_command_refuses_a_bad_request_naming_the_field(clapnq, capsys):
    from django.core.management import call_command

    scope = {"cluster": "acme", "tenant": "search", "collection": "clapnq"}
    with pytest.raises(SystemExit) as exited:
        call_command("study", space='{"bm25_b": [0.5, 7]}', **scope)
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "error [validation-error] space.bm25_b: a choice 7 is outside 0 to 1."
    )
    with pytest.raises(SystemExit):
        call_command("study", **scope)
    assert "needs a space" in capsys.readouterr().err
    assert not Study.objects.exists()

    # every trial slower than 0.001 ms at p95: no winner; the study says Failed, and why
    with pytest.raises(SystemExit) as exited:
        call_command("study", space='{"bm25_b": [0.5, 0.7]}', max_p95_ms="0.001", trials="2", **scope)
    assert exited.value.code == 2 and "[no-trial-succeeded]" in capsys.readouterr().err
    failed = clapnq.client.get(f"{URL}/{Study.objects.get().pk}").json()
    assert failed["status"] == "Failed" and failed["error"]["code"] == "no-trial-succeeded"
    assert all(t["infeasible"] for t in failed["trials"]) and failed["finished_at"]


def test_a_saved_preset_is_a_configuration_for_evaluations_the_gate_and_later_studies(
    clapnq, post_study, capsys
):
    from django.core.management import call_command

    study_id = post_study(budget={"trials": 4}).json()["study_id"]
    body = {"name": "tuned", "accept_not_better": True}
    assert clapnq.client.post(f"{URL}/{study_id}/save", body, format="json").status_code == 201
    preset = ConfigPreset.objects.get(name="tuned").config
    body = {
        "collection_id": "clapnq",
        "ks": [10],
        "configs": [{"preset": "tuned"}, {"preset": "tuned", "label": "tuned, deeper b", "bm25_b": 1.0}],
    }
    runs = clapnq.client.post("/lmkit/v1/search/evaluate", body, format="json").json()["runs"]
    assert [r["label"] for r in runs] == ["tuned", "tuned, deeper b"]
    assert {k: v for k, v in runs[0]["config"].items() if k != "label"} == preset
    assert runs[1]["config"]["bm25_b"] == 1.0 and runs[1]["config"]["bm25_k1"] == preset["bm25_k1"]

    unknown = clapnq.client.post(
        "/lmkit/v1/search/evaluate", {**body, "configs": [{"label": "a"}, {"preset": "tunde"}]}, format="json"
    )
    assert unknown.status_code == 400
    assert unknown.json()["error"]["code"] == "unknown-preset"
    assert unknown.json()["error"]["details"] == {"field": "configs[1].preset", "available": ["tuned"]}
    rival = clapnq.other_client.post(
        "/lmkit/v1/search/evaluate", {**body, "collection_id": "handbook"}, format="json"
    )
    assert rival.status_code == 400 and rival.json()["error"]["details"]["available"] == []

    # a later study starts from it, and the CI gate evaluates it by name
    later = post_study(base={"preset": "tuned"}, space={"top_k": [5, 10]}, budget={"trials": 2}).json()
    assert Study.objects.get(pk=later["study_id"]).request["base"]["bm25_k1"] == preset["bm25_k1"]
    scope = {"cluster": "acme", "tenant": "search", "collection": "clapnq"}
    call_command("evaluate", preset=["tuned"], ks="10", format="json", **scope)
    assert "tuned" in capsys.readouterr().out


def test_a_study_of_an_external_target_varies_its_template_parameters(clapnq, post_study, llm_server):
    """An http target on 127.0.0.1 whose template sends {{params.limit}} (default 1): a grid over it finds that
    ten results recall more than one, the trials' calls carry each value, a failed call is counted in its trial,
    and the confirmation runs are the target's runs with the winner's parameter and with its default."""
    import json

    llm_server.documents = {
        d["_id"]: d["text"] for d in map(json.loads, (CLAPNQ / "corpus.jsonl").read_text().splitlines())
    }
    target = {
        "name": "generic", "kind": "http", "base_url": f"{llm_server.url}/search", "concurrency": 2,
        "options": {
            "request_template": {"query": "{{query}}", "limit": "{{params.limit}}"},
            "params": {"limit": 1},
            "response_mapping": {"ids": "data.hits[].id"},
        },
    }  # fmt: skip
    assert clapnq.client.post("/lmkit/v1/targets", target, format="json").status_code == 201
    # the first trial's first calls fail: with two calls at once and three attempts each, one or two questions
    # fail after their retries (counted in that trial, left out of its value, within its max_error_rate)
    llm_server.fail_next(*[500] * 6)
    body = {
        "base": {"target": "generic", "top_k": 10, "max_error_rate": 0.05},
        "space": {"params.limit": [1, 3, 10]},
        "metric": "recall@10", "sampler": "grid", "prune": False, "budget": {"trials": 3},
    }  # fmt: skip
    response = post_study(**body)
    assert response.status_code == 202, response.json()
    study = clapnq.client.get(f"{URL}/{response.json()['study_id']}").json()
    assert study["status"] == "Completed", study["error"]
    by_limit = {t["values"]["params.limit"]: t for t in study["trials"]}
    assert set(by_limit) == {1, 3, 10}
    assert by_limit[1]["value"] < by_limit[3]["value"] < by_limit[10]["value"]
    assert 1 <= sum(t["errors"] for t in study["trials"]) == study["trials"][0]["errors"] <= 2
    assert all(t["p95_ms"] > 0 for t in study["trials"])
    assert study["best"]["values"] == {"params.limit": 10}
    assert {k: v for k, v in by_limit[10]["config"].items() if k != "label"} == {
        **body["base"],
        "params": {"limit": 10},
    }
    sent = [r.body["limit"] for r in llm_server.requests if r.path == "/search"]
    assert {1, 3, 10} <= set(sent)
    winner = EvaluationRun.objects.get(pk=study["confirmation"]["winner"]["run_id"])
    baseline = EvaluationRun.objects.get(pk=study["confirmation"]["baseline"]["run_id"])
    assert winner.config["target"] == baseline.config["target"] == "generic"
    assert winner.config["params"] == {"limit": 10} and "params" not in baseline.config
    assert study["confirmation"]["significant"] and study["confirmation"]["difference"] > 0

    unknown = post_study(base={"target": "generic"}, space={"params.boost": [1, 2]})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["details"]["field"] == "space.params.boost"
    engine_field = post_study(base={"target": "generic"}, space={"bm25_k1": [1.0, 2.0]})
    assert engine_field.status_code == 400
    assert engine_field.json()["error"]["details"]["field"] == "space.bm25_k1"


def test_an_answer_study_tunes_answer_settings_judged_and_confirms_with_answer_runs(clapnq, post_study):
    """metric context_recall: the base is an answer configuration; with the heuristic judge (no model), more
    passages recall more of the reference, and the confirmation runs are answer runs of the two configurations."""
    body = {
        "base": {"search_type": "FullText", "groundedness": "Off"},
        "space": {"top_k": [1, 5], "groundedness": ["Off", "High"]},
        "metric": "context_recall", "sampler": "grid", "prune": False, "budget": {"trials": 4},
        "baseline": {"search_type": "FullText", "top_k": 1},
    }  # fmt: skip
    response = post_study(**body)
    assert response.status_code == 202, response.json()
    study = clapnq.client.get(f"{URL}/{response.json()['study_id']}").json()
    assert study["status"] == "Completed", study["error"]
    assert study["split"] == {"tuning": 150, "confirmation": 150}  # the answerable questions with a reference
    by_k = {}
    for trial in study["trials"]:
        by_k.setdefault(trial["values"]["top_k"], []).append(trial["value"])
    assert min(by_k[5]) > max(by_k[1])
    assert study["best"]["values"]["top_k"] == 5 and study["best"]["config"]["groundedness"] in (
        "Off",
        "High",
    )
    winner = EvaluationRun.objects.get(pk=study["confirmation"]["winner"]["run_id"])
    baseline = EvaluationRun.objects.get(pk=study["confirmation"]["baseline"]["run_id"])
    assert (
        winner.kind == baseline.kind == "answers"
        and winner.config["top_k"] == 5
        and baseline.config["top_k"] == 1
    )
    assert winner.metric_methods["context_recall"] == "heuristic"
    assert study["confirmation"]["winner"]["value"] == pytest.approx(
        winner.metrics["context_recall"], abs=1e-9
    )
    assert study["confirmation"]["significant"] and study["confirmation"]["difference"] > 0

    mixed = post_study(space={"groundedness": ["Off", "High"]}, metric="ndcg@10")
    assert mixed.status_code == 400 and mixed.json()["error"]["details"]["field"] == "space.groundedness"
    judge_without = post_study(judge_model="gpt", metric="ndcg@10")
    assert judge_without.json()["error"]["details"]["field"] == "judge_model"


def test_an_answer_studys_judge_calls_stop_at_its_budget(clapnq, post_study, llm_server, settings):
    """An LLM judge (the scripted server, agreeing with every statement) on a budget of judge calls: the
    trials stop once they have made that many, and the study still confirms its best on the other half."""
    from tests.answer_support import scripted_rag

    settings.EVALSITE_LLM_BASE_URL = llm_server.url
    settings.EVALSITE_LLM_MODEL = "scripted"
    settings.EVALSITE_LLM_MAX_ATTEMPTS = 1
    llm_server.reply(r".", scripted_rag)
    body = {
        "base": {"search_type": "FullText", "top_k": 3},
        "space": {"top_k": [1, 2, 3, 4, 5]},
        "metric": "faithfulness", "judge_model": "scripted", "confirm_share": 0.9, "sampler": "grid",
        "prune": False, "budget": {"trials": 5, "judge_calls": 60},
    }  # fmt: skip
    response = post_study(**body)
    assert response.status_code == 202, response.json()
    study = clapnq.client.get(f"{URL}/{response.json()['study_id']}").json()
    assert study["status"] == "Completed", study["error"]
    assert study["split"]["tuning"] == 30
    # each question of a trial asks the judge about its five metrics: 150 calls a trial, so the budget of 60
    # stops the study after its first trial
    assert len(study["trials"]) == 1
    judged = EvaluationRun.objects.get(pk=study["confirmation"]["winner"]["run_id"])
    assert judged.metric_methods["faithfulness"] == "llm-judge"
    over = post_study(budget={"trials": 3, "judge_calls": 10}, metric="ndcg@10")
    assert over.json()["error"]["details"]["field"] == "budget.judge_calls"


def test_the_split_follows_the_entries_keys_so_the_same_golden_set_elsewhere_splits_the_same(
    clapnq, post_study
):
    """The same golden set imported into a second collection (new entry ids, the same keys): the same seed
    holds out the same questions, and the trials see the same values."""
    beir_import(folder=CLAPNQ, tenant=clapnq.tenant, collection_id="clapnq-copy", actor="test")
    held_out = []
    for collection in ("clapnq", "clapnq-copy"):
        body = {"collection_id": collection, "budget": {"trials": 3}, "seed": 11}
        study = clapnq.client.get(f"{URL}/{post_study(**body).json()['study_id']}").json()
        run = study["confirmation"]["winner"]["run_id"]
        held_out.append(
            (
                sorted(QuestionResult.objects.filter(run_id=run).values_list("entry_key", flat=True)),
                [t["value"] for t in study["trials"]],
            )
        )
    assert held_out[0] == held_out[1] and len(held_out[0][0]) == 150


@pytest.mark.parametrize("metric", ["bpref", "ndcg_cond@5", "mrr"])
def test_a_study_maximises_any_retrieval_measure_its_runs_report(clapnq, post_study, metric):
    study_id = post_study(metric=metric, budget={"trials": 2}).json()["study_id"]
    study = clapnq.client.get(f"{URL}/{study_id}").json()
    assert study["status"] == "Completed" and study["metric"] == metric
    winner = EvaluationRun.objects.get(pk=study["confirmation"]["winner"]["run_id"])
    assert study["confirmation"]["winner"]["value"] == pytest.approx(winner.metrics[metric], abs=1e-12)
    assert max(winner.ks) == {"bpref": 100, "ndcg_cond@5": 10, "mrr": 10}[metric]


def test_a_field_that_matters_in_some_trials_only_is_run_and_said(clapnq, post_study):
    """fusion varied between Rrf and Weighted: fulltext_weight moves only the Weighted trials, rrf_k only the Rrf
    ones. The study runs; its GET says so, on the fields, with the importance and what it rests on."""
    response = post_study(
        base={"search_type": "Hybrid"},
        space={"fusion": ["Rrf", "Weighted"], "fulltext_weight": [0.3, 0.7], "rrf_k": [20, 60]},
        budget={"trials": 3},
    )
    assert response.status_code == 202, response.json()
    path = "/lmkit/v1/search/evaluate/studies/{study_id}"
    study = conforms(SCHEMA(), clapnq.client.get(f"{URL}/{response.json()['study_id']}"), path, "get", 200)
    notes = {n["field"]: n for n in study["space_notes"]}  # PostgreSQL's jsonb keeps no order of the space
    assert sorted((field, n["always"]) for field, n in notes.items()) == [
        ("space.fulltext_weight", False),
        ("space.rrf_k", False),
    ]
    assert notes["space.fulltext_weight"]["message"].startswith(
        "has an effect only when search_type is Hybrid and fusion is Weighted: in the other trials its value is "
        "ignored"
    )
    importance = study["importance"]
    assert importance["shares"] is None and importance["trials"] <= 3 and importance["minimum_trials"] == 41
    assert "withheld below 41 trials" in importance["note"]


def test_a_trials_top_k_cuts_the_ranking_it_is_scored_on_as_its_run_does(clapnq, post_study):
    """top_k 1 against 10 for nDCG@10: the trial of top_k 1 is scored on its one result, as the confirmation's
    run of it would be, never on the ten the metric could read."""
    response = post_study(space={"top_k": [1, 10]}, sampler="grid", prune=False)
    study = clapnq.client.get(f"{URL}/{response.json()['study_id']}").json()
    by_k = {t["values"]["top_k"]: t["value"] for t in study["trials"]}
    assert set(by_k) == {1, 10} and by_k[1] < by_k[10]
    assert study["space_notes"] == []


def _metric_names(text: str) -> set[str]:
    """The metric names a text says, among every metric name evalsite has (a cutoff said as @K)."""
    known = {
        *(f"{name}@K" for name in (RECALL, NDCG, JUDGED_SHARE, NDCG_COND)), MRR, BPREF, MAP_COND,
        *JUDGED_METRICS, *REFUSAL_METRICS,
    }  # fmt: skip
    return {name for name in known if re.search(rf"(?<![\w@]){re.escape(name)}(?![\w@])", text)}


def test_the_commands_help_and_the_docs_name_every_metric_a_study_maximises():
    """One vocabulary (evaluation.studies.request.STUDY_METRICS): `manage.py study --help`, the API's schema and
    docs/evaluation.md's Studies name the same metrics."""
    from evaluation.management.commands.study import Command

    helped = " ".join(Command().create_parser("manage.py", "study").format_help().split())
    docs = (Path(__file__).resolve().parents[2] / "docs" / "evaluation.md").read_text()
    studies = docs[docs.index("\n## Studies") :]
    served = SCHEMA()["components"]["schemas"]["StudyInRequest"]["properties"]["metric"]["description"]
    assert _metric_names(helped) == _metric_names(studies) == _metric_names(served) == set(STUDY_METRICS)
