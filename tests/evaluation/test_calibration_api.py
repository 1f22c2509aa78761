"""POST /lmkit/v1/search/evaluate/labels, GET .../calibration, POST/DELETE .../calibration/thresholds and the
commands import_labels and calibration: human labels stored, the judges' agreement with them reported, a
calibrated threshold applied to the collection's evaluations."""

from __future__ import annotations

import io
import json
import threading

import pytest
from django.core.management import call_command
from django.db import connection

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job, JobStatus
from evaluation.judgments import calibration
from evaluation.models import EvaluationRun, HumanLabel, JudgeThreshold
from evaluation.warmup import warm_up
from goldenset import services
from tests.answer_support import scripted_rag
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.support import add_entries, answer_entries

LABELS = "/lmkit/v1/search/evaluate/labels"
CALIBRATION = "/lmkit/v1/search/evaluate/calibration"
THRESHOLDS = "/lmkit/v1/search/evaluate/calibration/thresholds"
ANSWERS = "/lmkit/v1/search/evaluate/answers"
REFUNDS = [
    {"document_id": "refunds", "title": "Refunds", "text": "Customers get a full refund within 30 days."}
]


@pytest.fixture
def golden(world):
    answer_entries(
        world.collection,
        "refund",
        "shipping",
        "warranty",
        keys={"refund": "q1", "shipping": "q2", "warranty": "q3"},
    )
    return world


def faithful(question_id: str, rater: str, label: str, answer: str) -> dict:
    return {"question_id": question_id, "rater": rater, "metric": "faithfulness", "label": label,
            "answer": answer, "passages": REFUNDS}  # fmt: skip


# Five items the heuristic scores 1.0, 1.0, 0.0, 0.0, 0.0 (the answer copies the passage, or shares nothing
# with it); people pass the first three.
COPY, OFF = "Customers get a full refund within 30 days.", "Orders ship by express courier overnight."
ITEMS = [("q1", "pass", COPY), ("q2", "pass", COPY + " "), ("q3", "pass", OFF), ("q1", "fail", OFF + " "),
         ("q2", "fail", OFF + "  ")]  # fmt: skip


def post_labels(client, rows, **body):
    return client.post(LABELS, {"collection_id": "handbook", "labels": rows, **body}, format="json")


def test_labels_are_stored_per_rater_and_a_raters_new_label_replaces_the_old(golden):
    rows = [faithful(q, "ann", label, answer) for q, label, answer in ITEMS]
    response = post_labels(golden.client, rows)
    assert response.status_code == 201, response.json()
    assert response.json() == {"labels": 5, "created": 5, "updated": 0, "raters": ["ann"],
                               "metrics": {"faithfulness": 5}, "dry_run": False}  # fmt: skip
    again = post_labels(golden.client, [{**rows[0], "label": "fail"}, faithful("q1", "bob", "pass", COPY)])
    assert again.json()["created"] == 1 and again.json()["updated"] == 1
    stored = HumanLabel.objects.filter(collection=golden.collection, entry__key="q1", answer=COPY)
    assert sorted((h.rater, h.passed) for h in stored) == [("ann", False), ("bob", True)]
    assert len({h.item_key for h in stored}) == 1  # one item, two raters
    assert AuditEvent.objects.filter(object_type="labels", object_id="handbook").count() == 2


def test_a_dry_run_counts_and_writes_nothing(golden):
    response = post_labels(golden.client, [faithful("q1", "ann", "pass", COPY)], dry_run=True)
    assert response.status_code == 200 and response.json()["created"] == 1
    assert not HumanLabel.objects.exists()


def test_the_report_measures_each_judge_against_the_raters_majority(golden):
    rows = [faithful(q, r, label, answer) for q, label, answer in ITEMS for r in ("ann", "bob")]
    rows[-1] = {**rows[-1], "label": "pass"}  # bob passes the last item: a tie, left out
    assert post_labels(golden.client, rows).status_code == 201
    report = golden.client.get(CALIBRATION, {"collection_id": "handbook"}).json()
    (row,) = report["judges"]
    assert (row["judge"], row["metric"], row["level"], row["n"]) == (
        "heuristic",
        "faithfulness",
        "question",
        4,
    )
    # scores 1, 1, 0 (passed) against 0 (failed): 2 wins and 1 tie of 3 pairs
    assert row["auc"] == round(2.5 / 3, 4)
    assert (row["threshold"], row["threshold_source"]) == (0.6, "default")
    assert row["confusion"] == {"tp": 2, "fp": 0, "tn": 1, "fn": 1}
    (agreement,) = report["agreement"]
    assert agreement["items"] == 5 and agreement["items_rated_twice"] == 5 and agreement["tied_items"] == 1
    # 4 agreeing items of 5: alpha from the coincidences (pass-pass 6, fail-fail 2, pass-fail 1 + 1)
    assert agreement["krippendorff_alpha"] == round(1 - 9 * 2 / (7 * 3 * 2), 4)
    assert report["warnings"] == [
        "faithfulness (question): 1 item(s) the raters split evenly on are left out of the judges' figures"
    ]
    assert (
        golden.client.get(CALIBRATION, {"collection_id": "handbook", "metric": "context_recall"}).json()[
            "judges"
        ]
        == []
    )


def test_bad_labels_are_refused_whole_naming_each_row(golden):
    rows = [
        faithful("q1", "ann", "pass", COPY),
        faithful("nope", "ann", "pass", COPY),
        faithful("q9", "bob", "pass", COPY),
    ]
    response = post_labels(golden.client, rows)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "import-invalid"
    assert [e["where"] for e in error["details"]["errors"]] == ["labels[1]", "labels[2]"]
    assert "labels[1]: question_id: 'nope' is no golden entry of handbook" in error["message"]
    assert not HumanLabel.objects.exists()
    misread = post_labels(golden.client, [{**rows[0], "label": "great"}])
    assert misread.json()["error"]["message"].startswith(
        "labels[0]: label: 'great' is not one of pass or fail"
    )
    unknown = post_labels(golden.client, [faithful("q1", "ann", "pass", COPY)], colour="red")
    assert unknown.status_code == 400 and unknown.json()["error"]["details"]["field"] == "colour"
    neither = golden.client.post(LABELS, {"collection_id": "handbook"}, format="json")
    assert neither.status_code == 400 and neither.json()["error"]["details"]["field"] == "labels"


def test_another_tenants_collection_and_runs_are_invisible(golden, django_capture_on_commit_callbacks):
    rival = golden.other_client
    assert post_labels(rival, [faithful("q1", "ann", "pass", COPY)]).status_code == 400  # its handbook: no q1
    assert rival.get(CALIBRATION, {"collection_id": "missing"}).status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        job = golden.client.post(ANSWERS, {"collection_id": "handbook"}, format="json").json()
    run_id = Job.objects.get(pk=job["job_id"]).result["runs"][0]["run_id"]
    services.collection_create(tenant=golden.other_tenant, slug="manual", actor="test")
    add_entries(
        golden.other_tenant.collections.get(slug="manual"), services.EntryInput(question="Q?", key="q1")
    )
    row = {"question_id": "q1", "rater": "r", "metric": "faithfulness", "label": "pass", "run_id": run_id}
    found = rival.post(LABELS, {"collection_id": "manual", "labels": [row]}, format="json")
    assert found.status_code == 400
    assert found.json()["error"]["details"]["field"] == "run_id"  # the other tenant's run is no run here


def test_a_csv_file_uploads_as_json_rows_do(golden):
    out = io.StringIO()
    out.write("question_id,rater,metric,label,answer,passages\n")
    for q, label, answer in ITEMS:
        out.write(
            f'{q},ann,faithfulness,{label},{answer},"{json.dumps(REFUNDS).replace(chr(34), chr(34) * 2)}"\n'
        )
    upload = io.BytesIO(out.getvalue().encode())
    upload.name = "labels.csv"
    response = golden.client.post(LABELS, {"collection_id": "handbook", "file": upload}, format="multipart")
    assert response.status_code == 201, response.json()
    assert response.json()["labels"] == 5
    bad = io.BytesIO(b"question_id,rater,metric,label\nq1,ann,faithfulness,\n")
    bad.name = "bad.csv"
    refused = golden.client.post(LABELS, {"collection_id": "handbook", "file": bad}, format="multipart")
    assert refused.status_code == 400 and refused.json()["error"]["message"].startswith("line 2: label:")


def test_a_calibrated_threshold_is_applied_to_later_evaluations_and_recorded(
    golden, django_capture_on_commit_callbacks
):
    assert post_labels(golden.client, [faithful(q, "ann", lab, a) for q, lab, a in ITEMS]).status_code == 201
    applied = golden.client.post(
        THRESHOLDS, {"collection_id": "handbook", "metric": "faithfulness"}, format="json"
    )
    assert applied.status_code == 200, applied.json()
    assert (
        applied.json()["value"] == 0.5 and applied.json()["calibrated_from"]["labels"] == 5
    )  # between 0 and 1
    with django_capture_on_commit_callbacks(execute=True):
        job = golden.client.post(ANSWERS, {"collection_id": "handbook"}, format="json").json()
    run = EvaluationRun.objects.get(pk=Job.objects.get(pk=job["job_id"]).result["runs"][0]["run_id"])
    assert run.config["thresholds"]["faithfulness"] == 0.5
    source = run.config["threshold_sources"]
    assert source["faithfulness"]["source"] == "calibrated" and source["faithfulness"]["labels"] == 5
    assert source["answer_relevancy"] == {"source": "default"}
    report = golden.client.get(CALIBRATION, {"collection_id": "handbook"}).json()
    assert report["judges"][0]["threshold_source"] == "calibrated"
    assert report["thresholds"][0]["metric"] == "faithfulness"
    no_threshold = golden.client.post(
        THRESHOLDS, {"collection_id": "handbook", "metric": "context_recall"}, format="json"
    )
    assert no_threshold.status_code == 400 and no_threshold.json()["error"]["details"]["field"] == "metric"
    no_labels = golden.client.post(
        THRESHOLDS, {"collection_id": "handbook", "metric": "answer_relevancy"}, format="json"
    )
    assert no_labels.json()["error"]["code"] == "no-calibration"
    query = "?collection_id=handbook&metric=faithfulness"
    assert golden.client.delete(THRESHOLDS + query).status_code == 204
    assert golden.client.delete(THRESHOLDS + query).status_code == 404
    assert not JudgeThreshold.objects.exists()


@pytest.fixture
def llm(llm_server, settings):
    settings.EVALSITE_LLM_BASE_URL = llm_server.url
    settings.EVALSITE_LLM_MODEL = "scripted"
    settings.EVALSITE_LLM_MAX_ATTEMPTS = 1
    return llm_server


def test_an_llm_judge_is_calibrated_from_the_runs_it_judged(golden, llm, django_capture_on_commit_callbacks):
    llm.reply(
        r".", scripted_rag
    )  # answers with passage [1]'s first sentence; judges every statement supported
    with django_capture_on_commit_callbacks(execute=True):
        job = golden.client.post(
            ANSWERS, {"collection_id": "handbook", "judge_model": "scripted"}, format="json"
        ).json()
    assert Job.objects.get(pk=job["job_id"]).status == JobStatus.COMPLETED
    run = EvaluationRun.objects.get(pk=Job.objects.get(pk=job["job_id"]).result["runs"][0]["run_id"])
    results = {r.entry_key: r for r in run.results.all()}
    rows = []
    for key, label in (("q1", "supported"), ("q2", "supported"), ("q3", "not supported")):
        statement = results[key].judgements["faithfulness"]["detail"]["statements"][0]["text"]
        rows.append({"question_id": key, "rater": "ann", "metric": "faithfulness", "label": label,
                     "statement": statement, "run_id": str(run.pk)})  # fmt: skip
    assert post_labels(golden.client, rows).status_code == 201
    report = golden.client.get(
        CALIBRATION, {"collection_id": "handbook", "judge": "llm-judge:scripted"}
    ).json()
    (row,) = report["judges"]
    assert (row["metric"], row["level"], row["n"], row["positives"]) == ("faithfulness", "statement", 3, 2)
    # the scripted judge supports everything: no better than chance, and it passes the unsupported one
    assert row["auc"] == 0.5 and row["confusion"] == {"tp": 2, "fp": 1, "tn": 0, "fn": 0}
    heuristic = golden.client.get(CALIBRATION, {"collection_id": "handbook", "judge": "heuristic"}).json()
    assert heuristic["judges"][0]["n"] == 3  # the heuristic judged the same stored answers, now
    detail = golden.client.get(f"/lmkit/v1/search/evaluate/runs/{run.pk}").json()
    assert detail["calibration"] == {
        "faithfulness": {"judge": "llm-judge:scripted", "level": "statement", "auc": 0.5, "n": 3}
    }


def test_the_commands_import_and_report(golden, tmp_path):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps([faithful(q, "ann", label, answer) for q, label, answer in ITEMS]))
    scope = ["--cluster", "acme", "--tenant", "search", "--collection", "handbook"]
    out = io.StringIO()
    call_command("import_labels", str(path), *scope, stdout=out)
    assert "5 labels -> 5 created, 0 updated; raters: ann" in out.getvalue()
    out = io.StringIO()
    call_command("calibration", *scope, stdout=out)
    text = out.getvalue()
    assert "heuristic faithfulness (question): n 5, AUC 0.83; at 0.6 (default)" in text
    out = io.StringIO()
    call_command("calibration", *scope, "--format", "json", stdout=out)
    assert json.loads(out.getvalue())["judges"][0]["auc"] == round(5 / 6, 4)
    out = io.StringIO()
    call_command("calibration", *scope, "--apply", "faithfulness", stdout=out)
    assert "heuristic faithfulness passes at 0.5 now" in out.getvalue()
    assert JudgeThreshold.objects.get().value == 0.5


def test_a_sampled_judges_statement_scores_are_the_share_of_samples_that_agreed(
    golden, llm, django_capture_on_commit_callbacks
):
    supported = json.dumps({"verdicts": [{"statement": 1, "supported": True, "reason": "yes"}]})
    unsupported = json.dumps({"verdicts": [{"statement": 1, "supported": False, "reason": "no"}]})
    llm.reply_by_seed(r"Answer statements:", {0: supported, 1: supported, 2: unsupported})
    llm.reply(r".", scripted_rag)
    with django_capture_on_commit_callbacks(execute=True):
        job = golden.client.post(
            ANSWERS,
            {"collection_id": "handbook", "judge_model": "scripted", "judge_samples": 3},
            format="json",
        ).json()
    run = EvaluationRun.objects.get(pk=Job.objects.get(pk=job["job_id"]).result["runs"][0]["run_id"])
    results = {r.entry_key: r for r in run.results.all()}
    rows = [
        {"question_id": key, "rater": "ann", "metric": "faithfulness", "label": label, "run_id": str(run.pk),
         "statement": results[key].judgements["faithfulness"]["detail"]["statements"][0]["text"]}
        for key, label in (("q1", "supported"), ("q2", "not supported"))
    ]  # fmt: skip
    assert post_labels(golden.client, rows).status_code == 201
    report = golden.client.get(
        CALIBRATION, {"collection_id": "handbook", "judge": "llm-judge:scripted"}
    ).json()
    (row,) = report["judges"]
    (filled,) = [b for b in row["reliability"] if b["count"]]
    assert (filled["count"], filled["mean_score"]) == (2, 0.6667)  # 2 of 3 samples said supported, twice


@pytest.mark.django_db(transaction=True)
def test_threads_asking_at_once_wait_for_one_build_and_a_warmed_server_inherits_the_report(
    golden, monkeypatch
):
    rows = [faithful(q, "ann", label, answer) for q, label, answer in ITEMS]
    assert post_labels(golden.client, rows).status_code == 201
    built: list[str] = []
    real_build = calibration._build_report

    def counted(collection):  # the real build, counted
        built.append(collection.slug)
        return real_build(collection)

    monkeypatch.setattr(calibration, "_build_report", counted)
    calibration._REPORTS.clear()
    barrier = threading.Barrier(4)
    reports: list[dict] = []

    def ask() -> None:
        try:
            barrier.wait()
            reports.append(calibration.calibration_report(collection=golden.collection))
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert built == ["handbook"] and len(reports) == 4
    assert all(report["judges"] == reports[0]["judges"] for report in reports)

    calibration._REPORTS.clear()  # what gunicorn's master does before it forks the web processes
    warmed = warm_up(collections=5)
    assert warmed["calibrated"] == [f"{golden.tenant.pk}/handbook"] and built == ["handbook"] * 2
    assert calibration.calibration_report(collection=golden.collection)["judges"] == reports[0]["judges"]
    assert built == ["handbook"] * 2  # served from what the warm-up built
