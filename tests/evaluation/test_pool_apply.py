"""A pool's grades into the golden set (issue 26, item 3): shown first per stored run with every metric before and
after, written all or nothing and audited, a judged-not-relevant document stored as grade 0 and read as judged,
and taken back while nobody changed the entries since."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from evalsite.audit.models import AuditEvent
from evaluation.judgments.lexical import LEXICAL_RATER
from evaluation.models import EvaluationRun, PoolApplication, RelevanceJudgment
from goldenset.models import GoldenEntry
from tests.conftest import person_client
from tests.evaluation.test_assessors import SCOPE
from tests.evaluation.test_judgment_pools import POOLS, judge, make_pool, named_field
from tests.support import db_state, lucene_and_okapi_runs


@pytest.fixture
def judged_pool(world, runs):
    """A pool of the two runs' unjudged top 3 (two documents per question), every item graded by alice: 0, but 2
    for q1's first item."""
    pool_id = make_pool(world, runs).json()["pool_id"]
    items = []
    while (item := person_client(world, "alice").get(f"{POOLS}/{pool_id}/next").json()["item"]) is not None:
        first_of_q1 = item["question_id"] == "q1" and all(q != "q1" for q, _, _ in items)
        grade = 2 if first_of_q1 else 0
        assert judge(world, pool_id, item["question_id"], item["document_id"], grade).status_code == 201
        items.append((item["question_id"], item["document_id"], grade))
    return pool_id, items


def apply(world, pool_id, **body):
    return world.client.post(f"{POOLS}/{pool_id}/apply", body, format="json")


def golden(world) -> dict[str, tuple[list[str], dict]]:
    return {
        e.key: (list(e.expected_document_ids), dict(e.grades))
        for e in GoldenEntry.objects.filter(collection=world.collection)
    }


def rerun(world) -> dict[str, dict[str, float]]:
    return {run.label: run.metrics for run in lucene_and_okapi_runs(world)}


def test_a_dry_run_shows_every_runs_metrics_before_and_after_and_writes_nothing(world, judged_pool):
    pool_id, items = judged_pool
    questions = {q for q, _, _ in items}
    assert len(items) >= 3 and len(questions) >= 2 and [g for _, _, g in items].count(2) == 1
    before = db_state()
    response = apply(world, pool_id, dry_run=True)
    assert response.status_code == 200, response.json()
    body = response.json()
    summary = (body["judgments"], body["relevant"], body["not_relevant"], body["entries"])
    assert summary == (len(items), 1, len(items) - 1, len(questions))
    assert (body["ungraded"], body["judged_since"], body["application_id"], body["splits"]) == (
        0,
        0,
        None,
        [],
    )
    assert sorted(r["label"] for r in body["runs"]) == ["lucene", "okapi"]
    assert all(r["in_pool"] for r in body["runs"]) and body["runs_not_shown"] == 0
    for run in body["runs"]:
        stored = EvaluationRun.objects.get(pk=run["run_id"]).results.all()
        # Before: only each question's expected document (found first) is judged, so one of every top 3.
        assert run["before"]["judged@3"] == pytest.approx(1 / 3)
        # After: every document the runs rank in their top 3 has a grade, 0 mostly (a top 3 may hold fewer).
        assert run["after"]["judged@3"] == pytest.approx(sum(len(r.ranked[:3]) / 3 for r in stored) / 3)
        assert run["questions_before"] == run["questions_after"] == 3
        # q1 gains a relevant document: its recall@1 can only fall (two relevant documents, one place).
        assert run["after"]["recall@1"] < run["before"]["recall@1"]
    assert db_state() == before  # nothing written, nothing audited


def test_applying_writes_grade_0_as_judged_not_relevant_and_the_preview_is_what_a_new_run_measures(
    world, judged_pool
):
    pool_id, items = judged_pool
    preview = {r["label"]: r["after"] for r in apply(world, pool_id, dry_run=True).json()["runs"]}
    response = apply(world, pool_id)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["dry_run"] is False and body["application_id"] and body["judgments"] == len(items)
    state = golden(world)
    (q1_doc,) = [d for q, d, g in items if g > 0]
    assert q1_doc in state["q1"][0] and state["q1"][1][q1_doc] == 2
    for question, document, grade in items:
        if grade == 0:
            assert document not in state[question][0] and state[question][1][document] == 0
    # A new evaluation over the golden set as written measures exactly what the preview said.
    measured = rerun(world)
    assert set(measured) == set(preview)
    for label, values in measured.items():
        assert values == pytest.approx(preview[label], abs=1e-12), label
    # Audited: one update per entry changed, naming the pool, and the pool's own event.
    events = AuditEvent.objects.filter(object_type="golden-entry", action="update")
    assert events.count() == len({q for q, _, _ in items})
    assert all(e.changes["pool"] == [None, pool_id] for e in events)
    applied = AuditEvent.objects.get(object_type="pool", action="update")
    assert applied.changes["applied"] == body["application_id"] and applied.changes["judgments"] == len(items)
    listed = world.client.get(f"{POOLS}/{pool_id}").json()["applications"]
    assert [a["application_id"] for a in listed] == [body["application_id"]] and listed[0][
        "reverted_at"
    ] is None
    # Applied twice: every document is judged in the golden set now, and the pool never overwrites a judgment.
    again = apply(world, pool_id).json()
    assert (again["judgments"], again["judged_since"], again["application_id"]) == (0, len(items), None)


def test_a_new_pool_leaves_out_what_an_application_judged_grade_0_included(world, runs, judged_pool):
    pool_id, _ = judged_pool
    assert apply(world, pool_id).status_code == 200
    response = make_pool(world, runs)
    assert response.status_code == 400 and response.json()["error"]["code"] == "empty-pool"


def test_an_application_is_taken_back_whole_and_only_while_its_entries_are_as_it_left_them(
    world, judged_pool
):
    pool_id, items = judged_pool
    key = items[-1][0]  # a question the application changes
    original = golden(world)
    application_id = apply(world, pool_id).json()["application_id"]
    written = golden(world)
    revert = f"{POOLS}/{pool_id}/applications/{application_id}/revert"

    # Someone changes the entry's judgments since: nothing is taken back, the 409 names the entry.
    q2 = GoldenEntry.objects.get(key=key)
    q2.grades = {}
    q2.save()
    response = world.client.post(revert, {}, format="json")
    assert response.status_code == 409 and response.json()["error"]["code"] == "changed-since"
    assert response.json()["error"]["details"]["entry_ids"] == [str(q2.pk)]
    assert PoolApplication.objects.get().reverted_at is None
    after_refusal = golden(world)
    assert {k: v for k, v in after_refusal.items() if k != key} == {
        k: v for k, v in written.items() if k != key
    }

    # Put back as the application left it, with an edit of what it did not write (the reference answer): the
    # revert restores every entry's judgments and leaves that edit.
    q2.expected_document_ids, q2.grades = written[key]
    q2.reference_answer = "edited since"
    q2.save()
    response = world.client.post(revert, {}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["reverted_at"] and golden(world) == original
    assert AuditEvent.objects.filter(object_type="pool", changes__reverted=application_id).count() == 1
    again = world.client.post(revert, {}, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "already-reverted"


def test_split_grades_combine_to_the_lower_median_and_are_listed_for_review(world, runs):
    pool_id = make_pool(world, runs, raters_per_item=2).json()["pool_id"]
    first = person_client(world, "alice").get(f"{POOLS}/{pool_id}/next").json()["item"]
    assert judge(world, pool_id, first["question_id"], first["document_id"], 3).status_code == 201
    assert (
        judge(world, pool_id, first["question_id"], first["document_id"], 1, rater="bob").status_code == 201
    )
    body = apply(world, pool_id, dry_run=True).json()
    items = world.client.get(f"{POOLS}/{pool_id}").json()["items"]
    assert (body["judgments"], body["relevant"], body["ungraded"]) == (1, 1, items - 1)
    assert body["splits"] == [{"question_id": first["question_id"], "document_id": first["document_id"]}]
    apply(world, pool_id)
    entry = GoldenEntry.objects.get(key=first["question_id"])
    assert first["document_id"] in entry.expected_document_ids
    assert entry.grade(first["document_id"]) == 1  # alice 3, bob 1: the lower middle grade


def test_a_machine_raters_grades_are_applied_only_when_named_and_never_mixed_with_peoples(world, runs):
    pool_id = make_pool(world, runs).json()["pool_id"]
    item = person_client(world, "alice").get(f"{POOLS}/{pool_id}/next").json()["item"]
    entry = GoldenEntry.objects.get(key=item["question_id"])
    RelevanceJudgment.objects.create(
        tenant=world.tenant, collection=world.collection, entry=entry, document_id=item["document_id"],
        grade=3, rater="llm-relevance:m", pool_id=pool_id,
    )  # fmt: skip
    people = apply(world, pool_id, dry_run=True).json()
    items = world.client.get(f"{POOLS}/{pool_id}").json()["items"]
    assert (people["judgments"], people["ungraded"]) == (0, items)  # the model's grade is not the people's
    machine = apply(world, pool_id, dry_run=True, source="llm-relevance:m").json()
    assert (machine["source"], machine["judgments"], machine["relevant"]) == ("llm-relevance:m", 1, 1)
    # Once a person grades that document, it is the people's to apply: the machine's grade is never taken for it.
    assert judge(world, pool_id, item["question_id"], item["document_id"], 0).status_code == 201
    machine = apply(world, pool_id, dry_run=True, source="llm-relevance:m").json()
    assert (machine["judgments"], machine["ungraded"]) == (0, items)
    people = apply(world, pool_id, dry_run=True).json()
    assert (people["judgments"], people["not_relevant"]) == (1, 1)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"source": "bob"}, "source"),
        ({"source": "llm-relevance:never-ran"}, "source"),
        ({"dry_run": "maybe"}, "dry_run"),
        ({"mode": "fast"}, "mode"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(world, judged_pool, body, field):
    pool_id, _ = judged_pool
    before = db_state()
    response = apply(world, pool_id, **body)
    assert response.status_code == 400, response.json()
    assert named_field(response.json()["error"]) == field
    assert db_state() == before


def test_another_tenants_pool_and_applications_are_404_and_nothing_is_written(world, judged_pool):
    pool_id, _ = judged_pool
    application_id = apply(world, pool_id).json()["application_id"]
    before = db_state()
    for body in ({}, {"dry_run": True}):
        assert world.other_client.post(f"{POOLS}/{pool_id}/apply", body, format="json").status_code == 404
    revert = f"{POOLS}/{pool_id}/applications/{application_id}/revert"
    assert world.other_client.post(revert, {}, format="json").status_code == 404
    assert world.client.post(f"{POOLS}/{pool_id}/applications/x/revert", {}, format="json").status_code == 404
    assert db_state() == before


def test_a_run_over_machine_judgments_says_which_assessor_and_version_wrote_them(world, runs):
    pool_id = make_pool(world, runs).json()["pool_id"]
    out = StringIO()
    call_command("judge", *SCOPE, "--pool", pool_id, "--assessor", "lexical", stdout=out)
    body = apply(world, pool_id, source=LEXICAL_RATER).json()
    assert body["judgments"] > 0 and body["application_id"]
    application = PoolApplication.objects.get()
    assert application.source_detail == [{"version": "evalsite-lexical-1"}]
    measured = lucene_and_okapi_runs(world)
    for run in measured:
        (used,) = run.summary["machine_judgments"]
        assert used["rater"] == LEXICAL_RATER and used["versions"] == [{"version": "evalsite-lexical-1"}]
        assert used["questions"] == body["entries"]
        assert any(LEXICAL_RATER in w and "a machine assessor, not people" in w for w in run.warnings)
        assert run.metric_methods["ndcg@3"] == "trec_eval"
        assert run.metric_methods["ndcg_cond@3"] == "trec_eval -J (condensed list)"
        assert run.metric_methods["judged@3"].startswith("judged share")
    # Taken back: the next runs read people's judgments only, and say nothing of machines.
    revert = f"{POOLS}/{pool_id}/applications/{application.pk}/revert"
    assert world.client.post(revert, {}, format="json").status_code == 200
    for run in lucene_and_okapi_runs(world):
        assert "machine_judgments" not in run.summary
        assert not any("machine assessor" in w for w in run.warnings)
