"""Issue 40's complaint, item 10: the demo's imported answer passages are binary "relevant" (grade 1); a rater
judging a pooled passage relevant with the workspace's top key, applied into the golden set, must not outrank
the original answer passage in nDCG's ideal ranking. The ClapNQ import makes the collection binary, so the
workspace offers 0 and 1 only and apply writes 1; a machine assessor's 0-3 grade is converted on apply."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from evaluation.configs import parse_configs
from evaluation.judgments import apply, pools
from evaluation.models import RelevanceJudgment
from evaluation.retrieval import metrics
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from evaluation.runs.slices import EVERY
from goldenset.beir_import import beir_import
from goldenset.models import GoldenEntry
from tests.support import member_of

DEMO = settings.BASE_DIR / "demo" / "clapnq"


@pytest.fixture
def clapnq_pool(world):
    beir_import(folder=DEMO, tenant=world.tenant, collection_id="clapnq", actor="test")
    collection = world.tenant.collections.get(slug="clapnq")
    _, runs = evaluate_retrieval(
        tenant=world.tenant, collections=[collection], ks=[3],
        configs=parse_configs([{"label": "fulltext", "search_type": "FullText"}], available_rerankers()),
    )  # fmt: skip
    pool = pools.pool_create(
        tenant=world.tenant, collection=collection, run_ids=[str(r.pk) for r in runs], depth=3,
        raters_per_item=1, subset=EVERY, actor="test", adaptive=False,
    )  # fmt: skip
    return collection, pool


def test_a_passage_judged_relevant_never_outranks_the_imported_answer_passage(world, clapnq_pool):
    collection, pool = clapnq_pool
    assert collection.grade_scale == "binary"  # ClapNQ's qrels: every answer passage 1
    alice = Client()
    alice.force_login(member_of(world.tenant, "alice", role="rater"))
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    page = alice.get(url).content.decode()
    position = int(re.search(r'id="judge-item" data-position="(\d+)"', page).group(1))
    top = max(int(g) for g in re.findall(r'name="grade" value="(\d+)"', page))  # the workspace's best grade
    assert alice.post(url, {"position": position, "grade": str(top)}).status_code == 302
    item = pool.items.get(position=position)
    entry = GoldenEntry.objects.get(pk=item.entry_id)
    (original,) = entry.expected_document_ids  # the imported answer passage

    summary = apply.pool_apply(pool=pool, actor="user:alice", dry_run=False)
    assert summary["relevant"] == 1
    entry.refresh_from_db()
    qrels = entry.qrels()
    assert qrels[item.document_id] == qrels[original] == 1  # relevant is relevant, on one scale
    # The ideal ranking gains nothing from putting the judged passage first: both are worth the same.
    assert metrics.ndcg_at([item.document_id, original], qrels, 2) == pytest.approx(1.0)
    assert metrics.ndcg_at([original, item.document_id], qrels, 2) == pytest.approx(1.0)


def test_a_machine_assessors_0_to_3_grade_is_converted_to_the_collections_scale_on_apply(world, clapnq_pool):
    collection, pool = clapnq_pool
    items = list(pool.items.order_by("position")[:3])
    for item, grade in zip(items, (3, 2, 1), strict=True):  # as the chat model grades: 0-3, no scale stored
        RelevanceJudgment.objects.create(
            tenant=world.tenant, collection=collection, entry_id=item.entry_id, document_id=item.document_id,
            grade=grade, rater="llm-relevance:m", pool=pool, detail={"prompt_version": "x"},
        )  # fmt: skip
    grades = {g.document_id: g.grade for g in apply.pool_grades(pool, "llm-relevance:m")[0]}
    # TREC DL's binarization: 2 and 3 relevant, 1 (related, does not answer) not
    assert [grades[i.document_id] for i in items] == [1, 1, 0]


def test_the_api_refuses_a_grade_off_the_collections_scale_naming_the_field(world, clapnq_pool):
    from tests.conftest import person_client  # noqa: PLC0415  (the API's person, made on demand)

    collection, pool = clapnq_pool
    item = pool.items.select_related("entry").first()
    body = {"collection_id": "clapnq", "pool_id": str(pool.pk),
            "judgments": [{"question_id": item.entry.key, "document_id": item.document_id, "grade": 3}]}  # fmt: skip
    response = person_client(world, "alice").post("/lmkit/v1/search/judgments", body, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["details"]["field"] == "judgments[0].grade" and "binary scale" in error["message"]
    body["judgments"][0]["grade"] = 1
    assert (
        person_client(world, "alice").post("/lmkit/v1/search/judgments", body, format="json").status_code
        == 201
    )
    assert RelevanceJudgment.objects.get(rater="user:alice").detail == {"scale": "binary"}
    nxt = (
        person_client(world, "alice").get(f"/lmkit/v1/search/judgments/pools/{pool.pk}/next").json()
    )  # the scale's keys, for a client's workspace
    assert nxt["grade_scale"] == "binary" and list(nxt["grades"]) == ["0", "1"]
