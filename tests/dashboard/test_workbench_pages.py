"""The workbench's pages and their JSON calls, through the real database, as the people of each role use them."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from evalsite.audit.models import AuditEvent
from evaluation.configs import parse_configs
from evaluation.models import ConfigPreset, EvaluationRun, RelevanceJudgment
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset.models import GoldenEntry
from goldenset.services import EntryInput
from tests.support import add_entries, member_of

LIST = "/collections/handbook/workbench/"
PAGE = "/collections/handbook/workbench/question/"
COLUMNS = "/collections/handbook/workbench/columns/"
GRADE = "/collections/handbook/workbench/grade/"
UNDO = "/collections/handbook/workbench/undo/"


def _person(world, name: str, role: str) -> Client:
    client = Client()
    client.force_login(member_of(world.tenant, name, role=role))
    return client


@pytest.fixture
def entries(world) -> list[GoldenEntry]:
    return add_entries(
        world.collection,
        EntryInput(question="How long is the refund window?", expected_document_ids=["refunds"], key="refund",
                   tags=["money"]),
        EntryInput(question="refunds, shipping days and the warranty", expected_document_ids=["warranty"],
                   key="broad", tags=["mixed"]),
        EntryInput(question="When does express shipping arrive?", expected_document_ids=["shipping"], key="ship"),
    )  # fmt: skip


def _post(client: Client, url: str, body: dict):
    return client.post(url, json.dumps(body), content_type="application/json")


def test_the_questions_are_listed_worst_first_with_filters_and_the_change_since_a_run(world, entries):
    viewer = _person(world, "vic", "viewer")
    configs = parse_configs([{"label": "k1 low", "bm25_k1": 0.1}], available_rerankers())
    _, (before,) = evaluate_retrieval(
        tenant=world.tenant, collections=[world.collection], ks=[1, 5], configs=configs
    )
    _, (after,) = evaluate_retrieval(tenant=world.tenant, collections=[world.collection], ks=[1, 5],
                                     configs=parse_configs([{"label": "plain"}], available_rerankers()))  # fmt: skip
    page = viewer.get(LIST, {"run": str(after.pk), "metric": "ndcg@5", "since": str(before.pk)})
    assert page.status_code == 200
    rows = page.context["rows"]
    values = [r.value("ndcg@5") for r in rows]
    assert values == sorted(values) and len(rows) == 3
    assert all(r.changed is not None for r in rows)
    broad = next(r for r in rows if r.key == "broad")
    assert broad.metrics == after.results.get(entry_key="broad").metrics
    only_money = viewer.get(LIST, {"run": str(after.pk), "tag": "money"}).context["rows"]
    assert [r.key for r in only_money] == ["refund"]
    misses = viewer.get(LIST, {"diagnosis": "miss"}).context["rows"]
    assert all(r.diagnosis == "miss" for r in misses)
    assert b"workbench-questions" in page.content and b"change since" in page.content


def test_columns_answer_as_the_rest_api_and_name_a_bad_field(world, entries):
    viewer = _person(world, "vic", "viewer")
    state = {"entry": "broad", "configs": [{"label": "a"}, {"label": "b", "bm25_k1": 0.3}], "top": 10}
    answer = _post(viewer, COLUMNS, state)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    rest = world.client.post(
        "/lmkit/v1/search/evaluate/question",
        {"collection_id": "handbook", "entry_id": "broad", "configs": state["configs"], "ks": [1, 5, 10]},
        format="json",
    ).json()
    assert body["metrics"] == [c["metrics"] for c in rest["configs"]]
    assert "entry=broad" in body["url"] and body["configs"][1]["bm25_k1"] == 0.3
    assert 'class="wb-result"' in body["html"] and "<mark>" in body["html"]
    bad = _post(viewer, COLUMNS, {**state, "configs": [{"bm25_b": 7}]})
    assert bad.status_code == 400 and bad.json()["error"]["details"]["field"] == "configs[0].bm25_b"
    assert viewer.post(COLUMNS, "not json", content_type="application/json").status_code == 400
    page = viewer.get(PAGE, {"entry": "broad", "c": json.dumps({"label": "x", "search_type": "Hybrid"})})
    assert page.status_code == 200 and b'id="wb-columns"' in page.content


def test_a_rater_grades_where_they_look_and_undoes_it(world, entries):
    rater = _person(world, "rita", "rater")
    state = {"entry": "broad", "configs": [{"label": "a"}], "top": 10}
    first = _post(rater, COLUMNS, state).json()["metrics"][0]
    stored = _post(rater, GRADE, {"entry": "broad", "document_id": "refunds", "grade": 3})
    assert stored.status_code == 200, stored.content
    judgment = RelevanceJudgment.objects.get(entry__key="broad", document_id="refunds")
    assert (judgment.rater, judgment.grade, judgment.pool) == ("user:rita", 3, None)
    after = _post(rater, COLUMNS, state)
    assert after.json()["metrics"][0] == first  # the golden set's figures do not move ...
    assert "→" in after.json()["html"]  # ... the page shows them with the rater's grade beside
    _post(rater, GRADE, {"entry": "broad", "document_id": "refunds", "grade": 1})
    assert _post(rater, UNDO, {}).json() == {"undone": True, "document_id": "refunds"}
    assert RelevanceJudgment.objects.get(entry__key="broad", document_id="refunds").grade == 3
    assert _post(rater, UNDO, {}).json()["undone"] is True
    assert not RelevanceJudgment.objects.filter(entry__key="broad", document_id="refunds").exists()
    assert AuditEvent.objects.filter(object_type="judgment", action="delete").count() == 1
    assert _post(rater, UNDO, {}).json() == {"undone": False}
    bad = _post(rater, GRADE, {"entry": "broad", "document_id": "refunds", "grade": 9})
    assert bad.status_code == 400 and bad.json()["error"]["details"]["field"] == "grade"


def test_a_viewer_may_look_not_grade_and_another_tenant_sees_nothing(world, entries):
    viewer = _person(world, "vic", "viewer")
    refused = _post(viewer, GRADE, {"entry": "broad", "document_id": "refunds", "grade": 2})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    stranger = Client()
    stranger.force_login(member_of(world.other_tenant, "rob"))
    # The rival tenant has a collection of the same name: theirs is shown, never ours or our entries.
    assert stranger.get(LIST).context["total"] == 0
    assert _post(stranger, COLUMNS, {"entry": "broad"}).status_code == 404
    assert _post(stranger, COLUMNS, {"entry": str(entries[0].pk)}).status_code == 404
    assert stranger.get("/collections/nope/workbench/").status_code == 404


def test_a_curator_applies_people_s_grades_adds_a_query_saves_a_preset_and_evaluates_all(
    world, entries, django_capture_on_commit_callbacks
):
    rater, curator = _person(world, "rita", "rater"), _person(world, "cora", "curator")
    _post(rater, GRADE, {"entry": "broad", "document_id": "refunds", "grade": 2})
    entry = GoldenEntry.objects.get(key="broad")
    assert curator.post("/collections/handbook/workbench/apply/", {"entry": "broad"}).status_code == 302
    entry.refresh_from_db()
    assert entry.qrels() == {"warranty": 1, "refunds": 2}
    added = curator.post(
        "/collections/handbook/workbench/add/",
        {"question": "next day delivery", "grades": json.dumps({"shipping": 3, "refunds": 0})},
    )
    new = GoldenEntry.objects.get(question="next day delivery")
    assert added["Location"].startswith(f"{PAGE}?entry={new.pk}")
    assert new.qrels() == {"shipping": 3, "refunds": 0}
    assert RelevanceJudgment.objects.filter(entry=new, rater="user:cora").count() == 2
    configs = json.dumps([{"label": "tuned", "bm25_k1": 0.8}])
    curator.post("/collections/handbook/workbench/preset/", {"configs": configs, "name": "k1 0.8"})
    assert ConfigPreset.objects.get(tenant=world.tenant, name="k1 0.8").config["bm25_k1"] == 0.8
    evaluator = _person(world, "eve", "evaluator")
    both = json.dumps([{"label": "baseline"}, {"preset": "k1 0.8"}])
    with django_capture_on_commit_callbacks(execute=True):  # the job runs inline once its launch commits
        launched = evaluator.post("/collections/handbook/workbench/evaluate/", {"configs": both, "top": "10"})
    assert launched.status_code == 302 and "/jobs/" in launched["Location"]
    followed = evaluator.get(launched["Location"])
    runs = EvaluationRun.objects.filter(tenant=world.tenant, label__in=["baseline", "k1 0.8"])
    assert runs.count() == 2 and len({r.batch_id for r in runs}) == 1
    assert followed.status_code == 302 and "/compare/?batch=" in followed["Location"]
    assert rater.post("/collections/handbook/workbench/apply/", {"entry": "broad"}).status_code == 403


def test_grades_follow_the_collection_s_scale(world, entries):
    """On a binary collection the workbench offers 0 and 1 and refuses 2, naming the scale."""
    world.collection.grade_scale = "binary"
    world.collection.save(update_fields=["grade_scale"])
    rater = _person(world, "rita", "rater")
    html = _post(rater, COLUMNS, {"entry": "broad", "configs": [{"label": "a"}]}).json()["html"]
    assert 'data-grade-value="1"' in html and 'data-grade-value="2"' not in html
    refused = _post(rater, GRADE, {"entry": "broad", "document_id": "refunds", "grade": 2})
    assert refused.status_code == 400 and "binary scale" in refused.json()["error"]["message"]
    assert _post(rater, GRADE, {"entry": "broad", "document_id": "refunds", "grade": 1}).status_code == 200
    stored = RelevanceJudgment.objects.get(entry__key="broad", document_id="refunds")
    assert stored.detail["scale"] == "binary"
    page = rater.get(PAGE, {"entry": "broad"})
    assert b"binary scale" in page.content


def test_a_question_opened_from_the_list_knows_its_place_and_a_blank_query_searches_nothing(world, entries):
    viewer = _person(world, "vic", "viewer")
    listed = viewer.get(LIST, {"metric": "ndcg@10"})
    order = [item["row"].entry_id for item in listed.context["shown"]]
    page = viewer.get(PAGE, {"entry": order[1], "list": "metric=ndcg@10"})
    around = page.context["around"]
    assert (around["place"], around["count"]) == (2, 3)
    assert around["previous_id"] == order[0] and around["next_id"] == order[2]
    assert f"entry={order[2]}" in around["next"] and "list=metric" in around["next"]
    blank = viewer.get(PAGE, {"q": ""})
    assert blank.status_code == 200 and b"Type a query above." in blank.content
    assert 'class="wb-result"' not in _post(viewer, COLUMNS, {"question": "   "}).json()["html"]


def test_the_list_under_a_workbench_column_and_a_run_of_another_tenant_or_kind_is_not_found(world, entries):
    viewer = _person(world, "vic", "viewer")
    column = {"label": "tuned", "bm25_k1": 0.4, "bm25_b": 0.2}
    page = viewer.get(LIST, {"c": json.dumps(column), "metric": "mrr"})
    assert page.status_code == 200 and page.context["custom"] is True
    configs = parse_configs([column], available_rerankers())
    _, (run,) = evaluate_retrieval(
        tenant=world.tenant, collections=[world.collection], ks=[1, 5, 10], configs=configs
    )
    stored = {r.entry_key: r.metrics["mrr"] for r in run.results.all()}
    assert {r.key: r.value("mrr") for r in page.context["rows"]} == stored
    assert "the workbench's column <strong>tuned</strong>" in page.content.decode()
    assert viewer.get(LIST, {"c": "{not json"}).context["error"] == "c: a configuration as JSON."
    assert viewer.get(LIST, {"run": str(run.pk)}).context["run"] == run
    stranger = Client()
    stranger.force_login(member_of(world.other_tenant, "rob"))
    assert stranger.get(LIST, {"run": str(run.pk)}).status_code == 404
    assert viewer.get(LIST, {"run": "not-a-run"}).status_code == 404


def test_a_0_4_collection_takes_a_grade_of_4(world, entries):
    """The top grade of the widest scale is stored (the database's check allowed 0-3 only before)."""
    world.collection.grade_scale = "0-4"
    world.collection.save(update_fields=["grade_scale"])
    rater = _person(world, "rita", "rater")
    assert _post(rater, GRADE, {"entry": "broad", "document_id": "refunds", "grade": 4}).status_code == 200
    assert RelevanceJudgment.objects.get(entry__key="broad", document_id="refunds").grade == 4
