"""`load_demo`: the ClapNQ demo collection, its golden set, real runs to compare, a login and an API key."""

from __future__ import annotations

import re
from io import StringIO

from django.core.management import call_command
from django.test import override_settings

from evalsite.tenancy.models import ApiKey, Membership, hash_api_key
from evaluation.judgments.calibration import run_calibration
from evaluation.models import EvaluationRun, HumanLabel
from goldenset.models import Collection, GoldenEntry


def test_load_demo_loads_everything_once_and_prints_the_same_credentials(db, tmp_path):
    with override_settings(DATA_DIR=tmp_path):
        first = StringIO()
        call_command("load_demo", stdout=first)
        second = StringIO()
        call_command("load_demo", stdout=second)

    collection = Collection.objects.get(tenant__cluster__slug="demo", tenant__slug="demo", slug="clapnq")
    assert collection.documents.count() == 597
    assert GoldenEntry.objects.filter(collection=collection).count() == 600
    runs = EvaluationRun.objects.filter(tenant=collection.tenant, kind="retrieval")
    assert sorted(runs.values_list("label", flat=True)) == [
        "fulltext",
        "fulltext okapi",
        "hybrid rrf",
        "hybrid weighted",
        "vector lsi",
    ]
    assert len(set(runs.values_list("batch_id", flat=True))) == 1
    assert all(run.question_count == 300 for run in runs)  # the answerable questions carry expected documents
    answer_runs = EvaluationRun.objects.filter(tenant=collection.tenant, kind="answers")
    assert sorted(answer_runs.values_list("label", flat=True)) == [
        "answers fulltext",
        "answers hybrid grounded",
    ]
    for run in answer_runs:  # all 600 questions, the 300 unanswerable ones measuring refusal
        assert run.question_count == 600 and run.mode == "heuristic"
        assert run.summary["refusal"]["unanswerable"] == 300 and run.summary["refusal"]["answerable"] == 300
    assert "Loaded ClapNQ" in first.getvalue() and "Evaluated the demo golden set" in first.getvalue()
    assert "Evaluated the demo answers offline" in first.getvalue()
    assert "Loaded ClapNQ" not in second.getvalue() and "Evaluated" not in second.getvalue()
    # a first start says what each step does and how long it took; a second one what it skipped
    steps = [line for line in first.getvalue().splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in steps] == [
        "[1/4",
        "[1/4",
        "[2/4",
        "[2/4",
        "[3/4",
        "[3/4",
        "[4/4",
        "[4/4",
    ]
    assert steps[0].startswith("[1/4] Loading ClapNQ") and re.fullmatch(r"\[1/4\] done in \d+ s\.", steps[1])
    assert [line for line in second.getvalue().splitlines() if line.startswith("[")] == [
        "[1/4] ClapNQ: loaded already.", "[2/4] The search runs: loaded already.",
        "[3/4] The answer runs: loaded already.", "[4/4] The Calibration tab: loaded already.",
    ]  # fmt: skip
    # The held-out half of the judge's labelled statements, once: the Calibration tab and the run pages show
    # the heuristic's agreement with them.
    assert HumanLabel.objects.filter(collection=collection).count() == 265
    assert "Loaded 265 human statement labels" in first.getvalue() and "labels" not in second.getvalue()
    shown = run_calibration(answer_runs.get(label="answers fulltext"))
    assert shown["faithfulness"]["judge"] == "heuristic" and shown["faithfulness"]["level"] == "statement"
    assert shown["faithfulness"]["n"] == 265 and shown["faithfulness"]["auc"] > 0.9

    lines = {out: out.getvalue().strip().splitlines()[-2:] for out in (first, second)}
    assert lines[first] == lines[second]  # the same login and the same key each start
    secret = lines[first][1].rsplit(" ", 1)[1]
    key = ApiKey.objects.get(key_hash=hash_api_key(secret))
    assert key.tenant == collection.tenant and key.revoked_at is None
    assert Membership.objects.filter(user__username="demo", tenant=collection.tenant).exists()
    assert (tmp_path / "demo_api_key").read_text() == secret


def test_the_demo_shows_hybrid_with_rerank_only_with_a_model_reranker():
    from evaluation.demo import demo_configs

    assert "hybrid rrf + rerank" not in [c["label"] for c in demo_configs(["proximity"])]
    assert demo_configs(["minilm", "proximity"])[-1] == {
        "label": "hybrid rrf + rerank",
        "search_type": "Hybrid",
        "fusion": "Rrf",
        "rerank": True,
    }
