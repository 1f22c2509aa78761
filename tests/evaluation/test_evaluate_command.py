"""`manage.py evaluate`, the CI gate: report, exit codes 0 / 1 / 2, JSON output, and parity with the API."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation import configs as config_parser
from evaluation.management.commands.evaluate import config_from_cli
from evaluation.models import EvaluationRun
from evaluation.reports.presenter import run_summary
from evaluation.retrieval.read_path import available_rerankers
from goldenset.models import GoldenEntry
from goldenset.services import EntryInput
from tests.support import add_entries, handbook_entries

ROOT = Path(__file__).resolve().parents[2]
SCOPE = {"cluster": "acme", "tenant": "search", "collection": ["handbook"]}
ARGV_SCOPE = ["--cluster", "acme", "--tenant", "search", "--collection", "handbook"]
NO_EXPECTED = "warning: 1 golden entries have no expected documents and were not evaluated."


@pytest.fixture
def golden(world):
    """Every expected document is the top FullText hit: every metric is 1.0."""
    return handbook_entries(world.collection, unanswerable=True)


@pytest.fixture
def hard(golden, world):
    """Two harder questions: FullText ranks q5's document second and cannot find q6's at all.

    FullText then scores mrr = (1 + 1 + 1 + 1/2 + 0) / 5 = 0.7 and recall@10 = 4/5; cut to top_k=1, mrr = 0.6.
    """
    add_entries(
        world.collection,
        EntryInput(
            question="Can I return my express order for a refund?",
            expected_document_ids=["shipping"],
            key="q5",
        ),
        EntryInput(question="Who repairs broken devices?", expected_document_ids=["refunds"], key="q6"),
    )


def run(*args, **options) -> tuple[int, str, str]:
    """Run the command; returns (exit code, stdout, stderr)."""
    out, err = StringIO(), StringIO()
    code = 0
    try:
        call_command("evaluate", *args, stdout=out, stderr=err, **options)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def fails(**options) -> str:
    """A usage or data error: exit 2, nothing on stdout, one line on stderr (returned), no run stored."""
    code, out, err = run(**{**SCOPE, **options})
    assert code == 2, (out, err)
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert EvaluationRun.objects.count() == 0
    return err.splitlines()[0]


def table(out: str) -> list[list[str]]:
    """The report's table rows (header first), split into cells."""
    lines = out.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(("per slice:", "warning:", "gate:")))
    return [re.split(r"\s{2,}", line.strip()) for line in lines[:end]]


# --- exit 0 and 1 ---------------------------------------------------------------------------------------


def test_a_passing_bar_exits_0_reports_a_table_and_stores_the_runs(world, golden):
    code, out, err = run(**SCOPE, config=["FullText", "hybrid"], fail_under="0.7")
    assert (code, err) == (0, "gate passed: ndcg@10 >= 0.7: FullText 1.0000, Hybrid Rrf 1.0000\n")
    rows = table(out)
    header = ["label", "recall@1", "recall@5", "recall@10", "ndcg@1", "ndcg@5", "ndcg@10", "mrr"]
    holes = [
        "judged@1",
        "judged@5",
        "judged@10",
        "ndcg_cond@1",
        "ndcg_cond@5",
        "ndcg_cond@10",
        "bpref",
        "map_cond",
    ]
    assert rows[0] == [*header, *holes, "questions", "ms", "gate"]
    assert [row[0] for row in rows[1:]] == ["FullText", "Hybrid Rrf"]
    for row in rows[1:]:
        assert row[1:8] == ["1.0000"] * 7
        assert row[8] == "1.0000" and row[9:11] != ["1.0000"] * 2  # the top 1 is judged, the top 5 not all
        assert (
            row[11:16] == ["1.0000"] * 5
        )  # condensed nDCG, bpref and condensed MAP: every relevant one first
        assert row[16] == "3" and re.fullmatch(r"\d+\.\d", row[17]) and row[18] == "PASS"
    assert out.splitlines()[-2:] == [NO_EXPECTED, "gate: ndcg@10 >= 0.7 for every configuration: PASS"]

    runs = EvaluationRun.objects.order_by("created_at")
    assert [r.label for r in runs] == ["FullText", "Hybrid Rrf"]
    assert len({r.batch_id for r in runs}) == 1
    assert runs[1].config["search_type"] == "Hybrid" and runs[1].ks == [1, 5, 10]
    listed = world.client.get("/lmkit/v1/search/evaluate/runs").json()
    assert sorted(r["label"] for r in listed["results"]) == ["FullText", "Hybrid Rrf"]


def test_without_a_bar_it_reports_and_exits_0(world, hard):
    code, out, err = run(**SCOPE, ks="1,3", metric="mrr")
    assert (code, err) == (0, "gate passed: every run complete (no --fail-under; mrr reported only)\n")
    rows = table(out)
    assert rows[0] == ["label", "recall@1", "recall@3", "ndcg@1", "ndcg@3", "mrr"] + [
        "judged@1", "judged@3", "ndcg_cond@1", "ndcg_cond@3", "bpref", "map_cond", "questions", "ms",
    ]  # fmt: skip
    assert rows[1][0] == "FullText" and rows[1][5] == "0.7000"
    assert out.splitlines()[-1] == "gate: none (no --fail-under); mrr reported only"
    assert EvaluationRun.objects.count() == 1


def test_a_bar_above_the_score_exits_1_and_names_the_configuration(world, hard):
    code, out, err = run(**SCOPE, metric="recall@10", fail_under=0.9)
    assert (code, err) == (1, "gate failed: recall@10 >= 0.9: FullText 0.8000 < 0.9\n")
    assert table(out)[1][3] == "0.8000" and table(out)[1][-1] == "FAIL"
    assert (
        out.splitlines()[-1]
        == "gate: recall@10 >= 0.9 for every configuration: FAIL (FullText: 0.8000 < 0.9)"
    )
    assert EvaluationRun.objects.get().metrics["recall@10"] == pytest.approx(0.8)  # failing runs are kept too


def test_two_configurations_one_passing_one_failing_exit_1_naming_the_failing_one(world, hard):
    code, out, err = run(
        **SCOPE,
        config=["FullText", "FullText:top_k=1,label=top-1"],
        ks="1,3",
        metric="MRR",
        fail_under="0.65",
    )
    assert (code, err) == (1, "gate failed: mrr >= 0.65: top-1 0.6000 < 0.65\n")
    rows = table(out)
    assert [(row[0], row[5], row[-1]) for row in rows[1:]] == [
        ("FullText", "0.7000", "PASS"),
        ("top-1", "0.6000", "FAIL"),
    ]
    assert out.splitlines()[-1] == "gate: mrr >= 0.65 for every configuration: FAIL (top-1: 0.6000 < 0.65)"
    assert sorted(EvaluationRun.objects.values_list("label", flat=True)) == ["FullText", "top-1"]


def test_the_bar_is_inclusive(world, hard):
    code, out, _ = run(**SCOPE, ks="1,3", metric="mrr", fail_under="0.7")
    assert code == 0
    assert out.splitlines()[-1] == "gate: mrr >= 0.7 for every configuration: PASS"


# --- JSON -----------------------------------------------------------------------------------------------


def test_json_output_is_one_document_with_the_run_summaries(world, hard):
    code, out, err = run(
        **SCOPE, config=["FullText", "Vector"], ks="1,3", metric="mrr", fail_under="0.65", format="json"
    )
    assert (code, err) == (1, "gate failed: mrr >= 0.65: Vector 0.5667 < 0.65\n")
    body = json.loads(out)
    assert set(body) == {"batch_id", "metric", "fail_under", "passed", "runs"}
    assert (body["metric"], body["fail_under"], body["passed"]) == ("mrr", 0.65, False)
    runs = EvaluationRun.objects.filter(batch_id=body["batch_id"]).order_by("created_at")
    assert body["runs"] == [json.loads(json.dumps(run_summary(r))) for r in runs]
    assert [r["label"] for r in body["runs"]] == ["FullText", "Vector"]
    assert body["runs"][0]["metrics"]["mrr"] == pytest.approx(0.7)


def test_json_output_passes_and_without_a_bar_has_a_null_bar(world, golden):
    code, out, _ = run(**SCOPE, format="json", fail_under="0.5")
    assert code == 0 and json.loads(out)["passed"] is True
    code, out, _ = run(**SCOPE, format="json")
    assert code == 0
    assert {k: v for k, v in json.loads(out).items() if k in ("metric", "fail_under", "passed")} == {
        "metric": "ndcg@10",
        "fail_under": None,
        "passed": True,
    }


# --- configurations: the same as the API's ----------------------------------------------------------------

API_CONFIG = {
    "search_type": "Hybrid",
    "fusion": "Weighted",
    "rerank": True,
    "bm25_variant": "okapi",
    "top_k": 5,
    "as_of": "2030-01-01",
    "include_superseded": True,
    "fulltext_weight": 0.3,
}
KEY_VALUE = (
    "hybrid:fusion=weighted,rerank=true,bm25_variant=okapi,top_k=5,as_of=2030-01-01,"
    "include_superseded=true,fulltext_weight=0.3,label={label}"
)


def test_the_key_value_and_json_forms_normalize_as_the_api_does(world, golden):
    assert config_from_cli("Hybrid:fusion=Weighted,rerank=true,label=hybrid-w", 0) == {
        "search_type": "Hybrid",
        "fusion": "Weighted",
        "rerank": "true",
        "label": "hybrid-w",
    }
    code, _, err = run(
        **SCOPE,
        config=[KEY_VALUE.format(label="kv"), json.dumps({**API_CONFIG, "label": "json"}), "VECTOR"],
        fail_under="0",
    )
    assert (code, err) == (0, "gate passed: ndcg@10 >= 0: kv 1.0000, json 1.0000, Vector 0.7540\n")
    response = world.client.post(
        "/lmkit/v1/search/evaluate",
        {"collection_id": "handbook", "configs": [{**API_CONFIG, "label": "api"}, {"search_type": "Vector"}]},
        format="json",
    )
    assert response.status_code == 200, response.json()
    stored = {r.label: r.config for r in EvaluationRun.objects.all()}
    api, kv, from_json = (
        {k: v for k, v in stored[label].items() if k != "label"} for label in ("api", "kv", "json")
    )
    assert kv == from_json == api
    assert api["rerank"] == "proximity" and api["as_of"] == "2030-01-01T00:00:00Z"
    assert [
        c["label"]
        for c in EvaluationRun.objects.filter(config__search_type="Vector").values_list("config", flat=True)
    ] == ["Vector", "Vector"]
    expected = config_parser.parse_config({**API_CONFIG, "label": "kv"}, 0, available_rerankers())
    assert stored["kv"] == expected.as_dict()


def test_without_a_config_it_evaluates_fulltext(world, golden):
    code, _, _ = run(**SCOPE)
    assert code == 0
    assert EvaluationRun.objects.get().config == config_parser.parse_configs(None, ["proximity"])[0].as_dict()


# --- exit 2: usage and data errors, one line each -----------------------------------------------------------


def test_an_unknown_tenant_or_collection_exits_2(world, golden):
    assert fails(tenant="nobody") == "error [not-found] Tenant acme/nobody not found."
    assert fails(cluster="elsewhere") == "error [not-found] Tenant elsewhere/search not found."
    assert fails(collection=["handbook", "nope"]) == "error [not-found] Collection nope not found."


def test_the_tenant_scopes_the_collection(world, golden):
    """The rival tenant's own "handbook" has no golden set; acme's golden entries never cross over."""
    assert (
        fails(tenant="rival", collection=["handbook"])
        == "error [empty-golden-set] No golden entries with expected documents in handbook."
    )
    assert fails(tenant="rival", collection=["nope"]) == "error [not-found] Collection nope not found."


def test_bad_configs_exit_2_naming_the_field(world, golden):
    assert fails(config=["Fulltxt"]) == (
        "error [unknown-search-type] configs[0].search_type: expected one of FullText, Vector, Hybrid, got 'Fulltxt'."
    )
    assert fails(config=["FullText", "Hybrid:fusion=Max"]) == (
        "error [unknown-fusion] configs[1].fusion: expected one of Rrf, Weighted, got 'Max'."
    )
    assert (
        fails(config=["Hybrid:colour=blue"]) == "error [validation-error] configs[0].colour: unknown field."
    )
    assert fails(config=["Hybrid:rerank=monot5"]) == (
        "error [reranker-unavailable] configs[0].rerank: reranker 'monot5' is not available here; available: proximity."
    )
    assert fails(config=["FullText:top_k=0"]) == (
        "error [invalid-number] configs[0].top_k: expected an integer from 1 to 1000, got 0."
    )
    assert fails(config=["Hybrid:rerank"]) == (
        "error [validation-error] configs[0]: expected key=value after 'Hybrid:', got 'rerank'."
    )
    assert (
        fails(config=["Hybrid:label=a,label=b"]) == "error [validation-error] configs[0].label: given twice."
    )
    assert fails(config=["Hybrid:search_type=Vector"]) == (
        "error [validation-error] configs[0].search_type: given twice."
    )
    assert fails(config=["rerank=true"]) == (
        "error [validation-error] configs[0]: expected TYPE, TYPE:key=value,... or a JSON object, got 'rerank=true'."
    )
    assert fails(config=["FullText", "fulltext"]) == (
        "error [duplicate-label] configs[1].label: label 'FullText' repeats configs[0]; labels name runs, so each must differ."
    )
    assert fails(config=['{"search_type": "Hybrid", "colour": "blue"}']) == (
        "error [validation-error] configs[0].colour: unknown field."
    )
    assert fails(config=['["Hybrid"]']) == "error [validation-error] configs[0]: expected an object."


def test_unparsable_config_json_exits_2(world, golden):
    assert fails(config=["FullText", '{"search_type": "Hybrid" "rerank": true}']) == (
        "error [invalid-json] configs[1]: --config is not valid JSON: Expecting ',' delimiter at column 26."
    )


def test_bad_ks_exit_2(world, golden):
    assert fails(ks="1,x") == "error [invalid-ks] ks[1]: expected a positive integer, got 'x'."
    assert fails(ks="1,0") == "error [invalid-ks] ks[1]: expected an integer from 1 to 1000, got 0."
    assert fails(ks=" , ") == "error [invalid-ks] ks: expected a non-empty list of positive integers."


def test_an_unknown_metric_exits_2_naming_the_available_ones(world, golden):
    assert fails(metric="ndcg@20") == (
        "error [unknown-metric] metric: 'ndcg@20' is not computed for ks 1,5,10; "
        "available: recall@1, recall@5, recall@10, ndcg@1, ndcg@5, ndcg@10, mrr, judged@1, judged@5, judged@10, "
        "ndcg_cond@1, ndcg_cond@5, ndcg_cond@10, bpref, map_cond."
    )
    assert fails(ks="1,3") == (  # the default metric, ndcg@10, needs k=10
        "error [unknown-metric] metric: 'ndcg@10' is not computed for ks 1,3; "
        "available: recall@1, recall@3, ndcg@1, ndcg@3, mrr, judged@1, judged@3, ndcg_cond@1, ndcg_cond@3, bpref, "
        "map_cond."
    )
    assert fails(metric="map").startswith("error [unknown-metric] metric: 'map' is not computed")


def test_a_bad_bar_exits_2(world, golden):
    assert (
        fails(fail_under="high")
        == "error [invalid-number] fail_under: expected a number from 0 to 1, got 'high'."
    )
    assert (
        fails(fail_under="1.01")
        == "error [invalid-number] fail_under: expected a number from 0 to 1, got '1.01'."
    )
    assert (
        fails(fail_under="nan")
        == "error [invalid-number] fail_under: expected a number from 0 to 1, got 'nan'."
    )


def test_an_empty_golden_set_exits_2(world):
    assert fails() == "error [empty-golden-set] No golden entries with expected documents in handbook."
    GoldenEntry.objects.create(collection=world.collection, question="Nothing expected?")
    assert fails() == "error [empty-golden-set] No golden entries with expected documents in handbook."


def test_argparse_usage_errors_carry_exit_code_2(world, golden):
    """Called from Python, argparse errors are Django's CommandError, with returncode 2 (the CLI exits 2)."""
    with pytest.raises(CommandError) as info:
        call_command(
            "evaluate", tenant="search", collection=["handbook"], stdout=StringIO(), stderr=StringIO()
        )
    assert info.value.returncode == 2
    assert str(info.value) == "Error: the following arguments are required: --cluster"
    with pytest.raises(CommandError) as info:
        call_command("evaluate", *ARGV_SCOPE, "--format", "xml", stdout=StringIO(), stderr=StringIO())
    assert info.value.returncode == 2
    assert (
        fails(format="xml") == "error [usage] format: expected one of text, json, junit, markdown, got 'xml'."
    )
    assert fails(collection=[]) == "error [usage] the following arguments are required: --collection"


# --- the real process -------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_real_command_exits_0_1_and_2(world, hard, manage_env):
    env = manage_env

    def manage(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", "evaluate", *argv],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    passing = manage(*ARGV_SCOPE, "--ks", "1,3", "--metric", "mrr", "--fail-under", "0.7")
    assert passing.returncode == 0, passing.stderr
    assert passing.stdout.splitlines()[-1] == "gate: mrr >= 0.7 for every configuration: PASS"

    failing = manage(*ARGV_SCOPE, "--config", "FullText", "--config", "Hybrid:rerank=true,label=hybrid-r",
                     "--config", '{"search_type": "FullText", "top_k": 1, "label": "top-1"}',
                     "--ks", "1,3", "--metric", "mrr", "--fail-under", "0.65", "--format", "json")  # fmt: skip
    assert failing.returncode == 1, failing.stderr
    body = json.loads(failing.stdout)
    assert body["passed"] is False
    assert [(r["label"], round(r["metrics"]["mrr"], 4)) for r in body["runs"]][::2] == [
        ("FullText", 0.7),
        ("top-1", 0.6),
    ]
    assert EvaluationRun.objects.filter(batch_id=body["batch_id"]).count() == 3

    unknown = manage(*ARGV_SCOPE, "--collection", "nope")
    assert (unknown.returncode, unknown.stdout, unknown.stderr) == (
        2,
        "",
        "error [not-found] Collection nope not found.\n",
    )

    usage = manage("--tenant", "search", "--collection", "handbook", "--fail-under", "0.5")
    assert (usage.returncode, usage.stdout) == (2, "")
    assert usage.stderr == (
        "error [usage] the following arguments are required: --cluster (see manage.py evaluate --help)\n"
    )
