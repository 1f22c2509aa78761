"""Raters are people (docs/teams.md): a live judgment's rater is the person behind the call, whatever its body
says; a key with no person cannot judge live; a curator's file names outside raters, kept as imported raters and
never counted among a pool's live raters; rater names compare without case, the stored ones included."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from evalsite.tenancy.services import api_key_create
from evaluation.judgments.grades import imported_rater, live_rater
from evaluation.judgments.pools import pool_create
from evaluation.models import JudgmentPool, PoolAssignment, RelevanceJudgment
from evaluation.runs.slices import EVERY
from tests.conftest import api_client, person_client
from tests.support import db_state, member_of, migrate, migration_leaves

POOLS = "/lmkit/v1/search/judgments/pools"
JUDGMENTS = "/lmkit/v1/search/judgments"


@pytest.fixture
def pool2(world, runs) -> JudgmentPool:
    """A pool asking two raters per item."""
    return pool_create(
        tenant=world.tenant, collection=world.collection, run_ids=[str(r.pk) for r in runs], depth=3,
        raters_per_item=2, subset=EVERY, actor="test",
    )  # fmt: skip


def _one(item, **fields) -> dict:
    return {"question_id": item.entry.key, "document_id": item.document_id, "grade": 2, **fields}


def test_one_key_cannot_fill_a_pool_under_several_names(world, pool2):
    """The abuse the roles issue found: one key judged a pool under three names (two differing only in case),
    filled raters_per_item alone, and the agreement counted three raters."""
    rita = person_client(world, "Rita")
    item = pool2.items.order_by("position").first()
    before = db_state()
    for name in ("bob", "rita-2", "llm-relevance:m"):
        body = {"collection_id": "handbook", "pool_id": str(pool2.pk), "judgments": [_one(item, rater=name)]}
        response = rita.post(JUDGMENTS, body, format="json")
        assert response.status_code == 400, name
        assert response.json()["error"]["details"]["field"] == "judgments[0].rater"
        assert "rater is the caller (user:rita)" in response.json()["error"]["message"]
    assert db_state() == before
    for name in ("rita", "RITA", "user:Rita", None):  # herself, in any case: the same rater every time
        one = _one(item) if name is None else _one(item, rater=name)
        body = {"collection_id": "handbook", "pool_id": str(pool2.pk), "judgments": [one]}
        assert rita.post(JUDGMENTS, body, format="json").status_code == 201
    assert list(RelevanceJudgment.objects.values_list("rater", flat=True)) == ["user:rita"]
    progress = world.client.get(f"{POOLS}/{pool2.pk}").json()["progress"]
    assert progress["raters"] == {"user:rita": 1} and progress["items_done"] == 0  # one rater of the two
    # the item goes to a second person, never back to her
    again = rita.get(f"{POOLS}/{pool2.pk}/next").json()["item"]
    assert again is None or (again["question_id"], again["document_id"]) != (item.entry.key, item.document_id)
    second = person_client(world, "sam").get(f"{POOLS}/{pool2.pk}/next").json()["item"]
    assert (second["question_id"], second["document_id"]) == (item.entry.key, item.document_id)


def test_a_key_with_no_person_cannot_judge_live(world, pool2):
    item = pool2.items.first()
    before = db_state()
    body = {"collection_id": "handbook", "pool_id": str(pool2.pk), "judgments": [_one(item)]}
    for response in (
        world.client.post(JUDGMENTS, body, format="json"),  # the world's key: an admin's, no person
        world.client.get(f"{POOLS}/{pool2.pk}/next"),
    ):
        assert response.status_code == 403
        error = response.json()["error"]
        assert error["code"] == "forbidden" and "no person cannot judge live" in error["message"]
        assert error["details"] == {"permission": "judge", "role": "admin"}
    assert db_state() == before


def test_a_curators_file_names_imported_raters_who_never_fill_the_pool(world, pool2):
    items = list(pool2.items.order_by("position")[:2])
    lines = "question_id,document_id,grade,rater\n" + "".join(
        f"{i.entry.key},{i.document_id},{g},{r}\n"
        for i in items
        for r, g in (("Ann", 2), ("ann", 3), ("Bo", 0))
    )
    upload = {"collection_id": "handbook", "pool_id": str(pool2.pk)}

    # a rater may judge, not import other people's judgments
    refused = person_client(world, "rita").post(
        JUDGMENTS, {**upload, "file": SimpleUploadedFile("j.csv", lines.encode())}, format="multipart"
    )
    assert refused.status_code == 403 and refused.json()["error"]["details"]["permission"] == "curate"

    curator = person_client(world, "cora", role="curator")
    response = curator.post(
        JUDGMENTS, {**upload, "file": SimpleUploadedFile("j.csv", lines.encode())}, format="multipart"
    )
    assert response.status_code == 201, response.json()
    # "Ann" and "ann" are one rater: her later line replaced the earlier
    stored = sorted(RelevanceJudgment.objects.values_list("rater", "document_id", "grade"))
    assert stored == sorted(
        [(imported_rater("ann"), i.document_id, 3) for i in items]
        + [("imported:bo", i.document_id, 0) for i in items]
    )
    assert not PoolAssignment.objects.exists()
    pool_body = world.client.get(f"{POOLS}/{pool2.pk}").json()
    assert pool_body["progress"]["raters"] == {} and pool_body["progress"]["items_done"] == 0
    # they are people, compared with people in the agreement figures, under their imported names
    assert pool_body["agreement"]["raters"] == ["imported:ann", "imported:bo"]


def test_the_dashboard_and_a_key_of_one_person_judge_as_one_rater(world, pool2):
    user = member_of(world.tenant, "Rita", role="rater")
    browser = Client()
    browser.force_login(user)
    url = reverse("dashboard:pool-judge", args=[pool2.pk])
    first = pool2.items.order_by("position").first()
    browser.post(url, {"position": first.position, "grade": "1"})
    _, secret = api_key_create(tenant=world.tenant, role="rater", user=user, actor="test")
    second = pool2.items.order_by("position")[1]
    body = {"collection_id": "handbook", "pool_id": str(pool2.pk), "judgments": [_one(second)]}
    assert api_client(secret).post(JUDGMENTS, body, format="json").status_code == 201
    assert (
        set(RelevanceJudgment.objects.values_list("rater", flat=True))
        == {live_rater("Rita")}
        == {"user:rita"}
    )
    assert set(PoolAssignment.objects.values_list("rater", flat=True)) == {"user:rita"}


@pytest.mark.django_db(transaction=True)
def test_stored_rater_names_are_casefolded_and_a_pairs_latest_judgment_is_kept(world, runs):
    leaves = migration_leaves()
    try:
        apps = migrate([("evaluation", "0017_signed_index_manifests")])
        judgment = apps.get_model("evaluation", "RelevanceJudgment")
        entry = apps.get_model("goldenset", "GoldenEntry").objects.get(key="q1")
        common = {"tenant_id": world.tenant.pk, "collection_id": world.collection.pk, "entry_id": entry.pk}
        judgment.objects.create(**common, document_id="refunds", rater="user:Ann", grade=1)
        judgment.objects.create(**common, document_id="refunds", rater="user:ann", grade=3)  # later: kept
        judgment.objects.create(**common, document_id="shipping", rater="Bob", grade=0)
        judgment.objects.create(**common, document_id="shipping", rater="llm-relevance:Qwen", grade=2)
        apps = migrate(leaves)
        stored = apps.get_model("evaluation", "RelevanceJudgment").objects.values_list(
            "rater", "document_id", "grade"
        )
        assert sorted(stored) == [
            ("bob", "shipping", 0),
            ("llm-relevance:Qwen", "shipping", 2),  # a machine's name is its model's: kept as it is
            ("user:ann", "refunds", 3),
        ]
    finally:
        migrate(leaves)
