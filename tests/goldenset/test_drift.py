"""Drift (issue 41, item 3): golden entries whose expected documents were deleted, rewritten since the entry was
last reviewed, or whose validity ended, listed by GET /lmkit/v1/search/golden-set/drift with their reasons; runs
marked when their collection's content changed after them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.configs import parse_configs
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset import services
from goldenset.drift import CHANGED, DELETED, EXPIRED, Reason, document_hash, entry_reasons, page_hash
from goldenset.models import Document, GoldenEntry, Page
from goldenset.services.drift import drift_count, drifted_entries
from tests.conftest import add_documents
from tests.support import add_entries, migrate, migration_leaves

URL = "/lmkit/v1/search/golden-set/drift"


def _entries(world):
    add_documents(
        world.collection,
        {"faq": "Questions customers ask often.", "policy-old": "The old returns policy: 14 days."},
    )
    return {
        e.key: e
        for e in add_entries(
            world.collection,
            *(
                services.EntryInput(question=f"Question about {d}?", key=key, expected_document_ids=docs)
                for key, d, docs in [
                    ("deleted", "shipping", ["shipping", "faq"]),
                    ("changed", "refunds", ["refunds"]),
                    ("expired", "warranty", ["warranty"]),
                    ("superseded", "policy", ["policy-old"]),
                    ("steady", "faq", ["faq"]),
                ]
            ),
            services.EntryInput(question="An unanswerable question?", key="none", answerable=False),
        )
    }


def _drift(world):
    collection = world.collection
    services.document_delete(
        document=Document.objects.get(collection=collection, external_id="shipping"), actor="t"
    )
    past = timezone.now() - timedelta(days=1)
    services.documents_upsert(
        collection=collection,
        documents=[
            services.DocumentInput(
                id="refunds", title="Refunds", pages=["Refunds within 60 days now.", "Page 2."]
            ),
            services.DocumentInput(
                id="warranty",
                title="Warranty",
                pages=[
                    Page.objects.get(document__external_id="warranty", document__collection=collection).text
                ],
                valid_until=past,
            ),
            services.DocumentInput(
                id="policy-new", title="Policy", pages=["30 days."], supersedes=["policy-old"]
            ),
        ],
        actor="t",
    )


def test_page_hashes_are_kept_by_every_writer(world):
    pages = Page.objects.filter(document__collection=world.collection)
    assert pages.exists() and all(p.content_hash == page_hash(p.text) for p in pages)
    _entries(world)
    _drift(world)
    refunds = Page.objects.filter(document__external_id="refunds", document__collection=world.collection)
    assert [p.content_hash for p in refunds.order_by("number")] == [
        page_hash("Refunds within 60 days now."),
        page_hash("Page 2."),
    ]
    page = refunds.get(number=2)
    page.text = "Edited in the admin."
    page.save()
    assert Page.objects.get(pk=page.pk).content_hash == page_hash("Edited in the admin.")


def test_the_drift_api_lists_exactly_the_drifted_entries_with_their_reasons(world):
    entries = _entries(world)
    assert world.client.get(URL, {"collection_id": "handbook"}).json() == {
        "collection_id": "handbook",
        "count": 0,
        "next": None,
        "previous": None,
        "entries": [],
    }
    _drift(world)
    body = world.client.get(URL, {"collection_id": "handbook"}).json()
    assert body["count"] == 4
    got = {e["key"]: e["reasons"] for e in body["entries"]}
    assert got == {
        "deleted": [{"reason": DELETED, "document_ids": ["shipping"]}],
        "changed": [{"reason": CHANGED, "document_ids": ["refunds"]}],
        "expired": [{"reason": EXPIRED, "document_ids": ["warranty"]}],
        "superseded": [{"reason": EXPIRED, "document_ids": ["policy-old"]}],
    }
    first = body["entries"][0]
    assert first["entry_id"] == str(entries["deleted"].pk) and first["question"] == "Question about shipping?"
    assert drift_count(world.collection) == 4

    paged = world.client.get(URL, {"collection_id": "handbook", "page_size": 3}).json()
    assert paged["count"] == 4 and len(paged["entries"]) == 3 and paged["next"]
    second = world.client.get(URL, {"collection_id": "handbook", "page_size": 3, "page": 2}).json()
    assert [e["key"] for e in second["entries"]] == ["superseded"]


def test_marking_reviewed_clears_changed_but_not_deleted(world):
    entries = _entries(world)
    _drift(world)
    services.golden_entries_mark_reviewed(
        entries=[entries["changed"], entries["deleted"]], reviewed=True, actor="t"
    )
    reasons = {e.key: e.reasons for e in drifted_entries(world.collection)}
    assert "changed" not in reasons
    assert reasons["deleted"] == [Reason(DELETED, ("shipping",))]
    # Reviewed again (already reviewed): the content changed once more, and is cleared once more.
    services.documents_upsert(
        collection=world.collection,
        documents=[services.DocumentInput(id="refunds", title="Refunds", pages=["90 days."])],
        actor="t",
    )
    assert {e.key for e in drifted_entries(world.collection)} >= {"changed"}
    entry = GoldenEntry.objects.get(pk=entries["changed"].pk)
    services.golden_entries_mark_reviewed(entries=[entry], reviewed=True, actor="t")
    assert "changed" not in {e.key for e in drifted_entries(world.collection)}


def test_an_edit_of_the_expected_documents_remembers_them_as_they_are(world):
    entries = _entries(world)
    _drift(world)
    entry = GoldenEntry.objects.get(pk=entries["changed"].pk)
    services.golden_entry_update(
        entry=entry, changes={"expected_document_ids": ["refunds", "faq"]}, actor="t"
    )
    assert "changed" not in {e.key for e in drifted_entries(world.collection)}
    stored = GoldenEntry.objects.get(pk=entry.pk)
    assert set(stored.reviewed_hashes) == {"refunds", "faq"} and stored.reviewed_at is not None


def test_another_tenants_collection_is_a_404_and_an_unknown_parameter_a_400(world):
    services.collection_create(tenant=world.tenant, slug="private", actor="t")
    assert world.other_client.get(URL, {"collection_id": "private"}).status_code == 404
    assert world.client.get(URL, {"collection_id": "handbook", "colection": "x"}).status_code == 400
    assert world.client.get(URL).status_code == 400


def test_entry_reasons_is_pure_and_ordered():
    assert entry_reasons(["a", "b", "c"], {"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "9"}, {"a"}) == [
        Reason(CHANGED, ("b",)),
        Reason(EXPIRED, ("a",)),
    ]
    assert entry_reasons(["x"], {"x": "1"}, {}) == [Reason(DELETED, ("x",))]
    assert document_hash([page_hash("a"), page_hash("b")]) != document_hash([page_hash("b"), page_hash("a")])


def test_a_run_is_marked_when_its_collection_changed_after_it(world):
    add_entries(
        world.collection, services.EntryInput(question="Refund window?", expected_document_ids=["refunds"])
    )
    configs = parse_configs([{"label": "fulltext", "search_type": "FullText"}], available_rerankers())
    _, (run,) = evaluate_retrieval(
        tenant=world.tenant, collections=[world.collection], ks=[1, 5], configs=configs
    )
    url = f"/lmkit/v1/search/evaluate/runs/{run.pk}"
    assert world.client.get(url).json()["content_changed_since"] is False
    add_documents(world.collection, {"faq": "Questions customers ask often."})
    assert world.client.get(url).json()["content_changed_since"] is True


@pytest.mark.django_db(transaction=True)
def test_entries_written_before_the_hashes_read_as_not_drifted_after_the_upgrade():
    leaves = migration_leaves()
    try:
        apps = migrate([("goldenset", "0013_collection_grade_scale")])
        cluster = apps.get_model("tenancy", "Cluster").objects.create(slug="acme")
        tenant = apps.get_model("tenancy", "Tenant").objects.create(cluster=cluster, slug="search")
        collection = apps.get_model("goldenset", "Collection").objects.create(tenant=tenant, slug="handbook")
        document = apps.get_model("goldenset", "Document").objects.create(
            collection=collection, external_id="d1"
        )
        for number, text in enumerate(["One.", "Two."], 1):
            apps.get_model("goldenset", "Page").objects.create(document=document, number=number, text=text)
        apps.get_model("goldenset", "GoldenEntry").objects.create(
            collection=collection, question="Q?", question_hash="q", expected_document_ids=["d1", "gone"]
        )

        apps = migrate([("goldenset", "0014_drift_hashes")])
        pages = apps.get_model("goldenset", "Page").objects.order_by("number")
        assert [p.content_hash for p in pages] == [page_hash("One."), page_hash("Two.")]
        entry = apps.get_model("goldenset", "GoldenEntry").objects.get()
        assert entry.reviewed_hashes == {"d1": document_hash([page_hash("One."), page_hash("Two.")])}
        assert entry.reviewed_at is not None
    finally:
        migrate(leaves)
    from goldenset.models import Collection  # the current models, once migrated back to the leaves

    collection = Collection.objects.get(slug="handbook", tenant__slug="search")
    # d1 is as remembered; "gone" (expected, never in the collection) reads as deleted, as it is.
    assert [(e.question, e.reasons) for e in drifted_entries(collection)] == [
        ("Q?", [Reason(DELETED, ("gone",))])
    ]
