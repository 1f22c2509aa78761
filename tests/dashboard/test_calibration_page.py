"""The collection's Calibration tab: labels uploaded (all or nothing), the raters' agreement, each judge's
figures with ROC and reliability charts, a calibrated threshold applied; the answer run page then says how far
its judge agrees with people and where its threshold came from."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation.answers import judge
from evaluation.answers.configs import parse_answer_configs
from evaluation.answers.evaluate import evaluate_answers
from evaluation.dashboard.calibration_views import apply_note
from evaluation.models import HumanLabel, JudgeThreshold
from evaluation.retrieval.read_path import available_rerankers
from goldenset import services
from tests.answer_support import scripted_rag
from tests.dashboard.conftest import text_of
from tests.llm_server import llm_server_fixture  # noqa: F401
from tests.support import add_entries

REFUNDS = [
    {"document_id": "refunds", "title": "Refunds", "text": "Customers get a full refund within 30 days."}
]
COPY, OFF = "Customers get a full refund within 30 days.", "Orders ship by express courier overnight."


def label_file(rows) -> SimpleUploadedFile:
    return SimpleUploadedFile("labels.json", json.dumps(rows).encode())


def test_labels_uploaded_calibrate_the_judge_shown_on_later_runs(alice, world):
    add_entries(
        world.collection,
        *(
            services.EntryInput(question=q, key=k, expected_document_ids=["refunds"])
            for k, q in (
                ("c1", "How many days do customers have to get a full refund?"),
                ("c2", "Where do refunds go?"),
                ("c3", "Can I return a gift?"),
            )
        ),  # fmt: skip
    )
    url = reverse("dashboard:collection-calibration", args=["handbook"])
    assert "No labels yet" in text_of(alice.get(url))
    rows = [
        {"question_id": q, "rater": r, "metric": "faithfulness", "label": label, "answer": answer,
         "passages": REFUNDS}
        for q, label, answer in (("c1", "pass", COPY), ("c2", "pass", COPY + " "), ("c3", "fail", OFF))
        for r in ("ann", "bob")
    ]  # fmt: skip
    bad = alice.post(url, {"file": label_file([*rows, {**rows[0], "question_id": "zz"}])})
    assert bad.status_code == 400 and "record 7: question_id: 'zz' is no golden entry" in text_of(bad)
    assert not HumanLabel.objects.exists()
    uploaded = alice.post(url, {"file": label_file(rows)})
    assert uploaded.status_code == 302
    page = alice.get(url)
    text = text_of(page)
    assert "6 labels of 3 items by 2 raters (ann, bob)" in text
    html = page.content.decode()
    assert 'id="roc-faithfulness-question"' in html and 'id="reliability-faithfulness-question"' in html
    assert "/static/plotly/plotly.min.js" in html and "cdn" not in html.lower()
    assert "Apply 0.500" in text
    applied = alice.post(
        reverse("dashboard:calibration-threshold", args=["handbook"]),
        {"metric": "faithfulness", "judge": "heuristic"},
    )
    assert applied.status_code == 302 and JudgeThreshold.objects.get().value == 0.5
    assert "now passes at 0.5" in text_of(alice.get(applied["Location"]))
    configs = parse_answer_configs([{"label": "calibrated"}], available_rerankers())
    _, (run,) = evaluate_answers(tenant=world.tenant, collections=[world.collection], configs=configs)
    run_page = text_of(alice.get(reverse("dashboard:run", args=[run.pk])))
    assert "AUC 1.00 against 3 human labels" in run_page
    assert "faithfulness ≥ 0.5 (calibrated)" in run_page


def test_another_tenants_calibration_is_404(alice, world):
    services.collection_create(tenant=world.other_tenant, slug="theirs", actor="test")
    assert alice.get(reverse("dashboard:collection-calibration", args=["theirs"])).status_code == 404
    assert (
        alice.post(
            reverse("dashboard:calibration-threshold", args=["theirs"]), {"metric": "faithfulness"}
        ).status_code
        == 404
    )


def test_an_llm_judges_calibration_shows_on_the_tab_and_its_run(alice, world, llm_server, settings):
    """End to end with the scripted server as the judge: an answer run judged by it, people's statement labels
    of that run uploaded on the tab, the judge's row and charts on the tab and its AUC on the run's page."""
    settings.EVALSITE_LLM_BASE_URL = llm_server.url
    settings.EVALSITE_LLM_MODEL = "scripted"
    settings.EVALSITE_LLM_MAX_ATTEMPTS = 1
    llm_server.reply(r".", scripted_rag)  # answers from passage [1]; judges every statement supported
    add_entries(
        world.collection,
        services.EntryInput(question="How many days do customers have to get a full refund?", key="d1",
                            expected_document_ids=["refunds"]),
        services.EntryInput(question="How quickly do orders ship?", key="d2", expected_document_ids=["shipping"]),
    )  # fmt: skip
    configs = parse_answer_configs([{"label": "judged"}], available_rerankers())
    _, (run,) = evaluate_answers(
        tenant=world.tenant, collections=[world.collection], configs=configs, judge_model="scripted"
    )
    results = {r.entry_key: r for r in run.results.all()}
    rows = [
        {"question_id": key, "rater": "ann", "metric": "faithfulness", "label": label, "run_id": str(run.pk),
         "statement": results[key].judgements["faithfulness"]["detail"]["statements"][0]["text"]}
        for key, label in (("d1", "supported"), ("d2", "not supported"))
    ]  # fmt: skip
    url = reverse("dashboard:collection-calibration", args=["handbook"])
    assert alice.post(url, {"file": label_file(rows)}).status_code == 302
    page = alice.get(url)
    html = page.content.decode()
    assert 'id="roc-faithfulness-statement"' in html
    table = text_of(page)
    assert "llm-judge:scripted 2 0.50" in table  # supports both: no better than chance on these two
    assert "heuristic 2" in table  # the heuristic judged the same stored answers
    run_page = text_of(alice.get(reverse("dashboard:run", args=[run.pk])))
    assert "AUC 0.50 against 2 human statement labels" in run_page


def test_the_tab_leaves_the_reports_rows_as_the_api_answers_them(alice, world):
    """The report is cached per process and shared: the tab's own row fields never leak into the API's."""
    add_entries(world.collection, services.EntryInput(question="Refund days?", key="e1"), services.EntryInput(
        question="Shipping days?", key="e2"))  # fmt: skip
    rows = [
        {"question_id": q, "rater": "ann", "metric": "faithfulness", "label": label, "answer": answer,
         "passages": REFUNDS}
        for q, label, answer in (("e1", "pass", COPY), ("e2", "fail", OFF))
    ]  # fmt: skip
    assert alice.post(
        reverse("dashboard:collection-calibration", args=["handbook"]), {"file": label_file(rows)}
    )
    assert "Apply" in text_of(alice.get(reverse("dashboard:collection-calibration", args=["handbook"])))
    report = world.client.get("/lmkit/v1/search/evaluate/calibration", {"collection_id": "handbook"}).json()
    assert "can_apply" not in report["judges"][0] and "applied" not in report["judges"][0]


def test_the_tab_says_what_kind_of_answers_the_default_cut_was_chosen_on(alice, world):
    page = alice.get(reverse("dashboard:collection-calibration", args=[world.collection.slug]))
    assert 'id="default-threshold"' in page.content.decode()
    note = text_of(page)
    assert f"supported when its support score is {judge.SUPPORT_MIN} or more. That cut was chosen on" in note
    assert "chosen on abstractive answers" in note and "LFQA-Verification" in note


def test_a_section_without_an_apply_button_says_why(alice, world):
    """The demo's labels judge statements: they offer no Apply, and the section says why; answer labels of a
    metric the pass rule does not threshold, or all passed, say theirs."""
    add_entries(
        world.collection, *(services.EntryInput(question=f"Refund days {i}?", key=f"s{i}") for i in range(3))
    )
    rows = [
        {"question_id": f"s{i}", "rater": "ann", "metric": "faithfulness", "label": label, "answer": COPY + " " + OFF,
         "passages": REFUNDS, "statement": statement}
        for i, (label, statement) in enumerate((("supported", COPY), ("not supported", OFF), ("supported", COPY)))
    ] + [
        {"question_id": f"s{i}", "rater": "ann", "metric": "answer_relevancy", "label": "pass", "answer": COPY,
         "passages": REFUNDS} for i in range(2)
    ]  # fmt: skip
    url = reverse("dashboard:collection-calibration", args=["handbook"])
    assert alice.post(url, {"file": label_file(rows)}).status_code == 302
    page = alice.get(url)
    sections = {(s["metric"], s["level"]): s for s in page.context["sections"]}
    statement = sections[("faithfulness", "statement")]
    assert not any(row["can_apply"] for row in statement["rows"])
    text = text_of(page)
    assert "Apply" not in text.replace("Apply sets", "")  # no button anywhere on this page
    assert "these labels judge single statements" in statement["apply_note"]
    assert f"supported at {judge.SUPPORT_MIN:g}" in text
    assert "people passed all or none" in sections[("answer_relevancy", "question")]["apply_note"]
    assert text.count("No threshold to apply") == 2
    # A metric the pass rule does not threshold (context recall: the heuristic does not judge it from labels).
    unthresholded = apply_note("context_recall", "question", [{"can_apply": False, "applied": None}])
    assert "the pass rule does not threshold context_recall" in unthresholded
