"""Tenant isolation on every lmkit endpoint: another tenant's key gets 404, exactly as for a missing object,
and the database is unchanged afterwards."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsite.jobs.models import Job
from evaluation.models import EvaluationRun, QuestionResult
from goldenset import services
from goldenset.models import Collection, Document, GoldenEntry, GoldenJobKind
from tests.support import add_entries, db_state, uploaded

API = "/lmkit/v1"
NEW_DOCUMENTS = {"documents": [{"id": "hijack", "text": "Planted by the rival."}]}
NEW_ENTRIES = {"entries": [{"question": "Planted by the rival?"}]}


@dataclass
class Scene:
    entry: GoldenEntry
    job: Job
    run: EvaluationRun
    rival_entry: GoldenEntry
    rival_job: Job
    rival_run: EvaluationRun


def _run(collection: Collection, entry: GoldenEntry) -> EvaluationRun:
    """A finished retrieval run over the collection, with one question result."""
    run = EvaluationRun.objects.create(
        tenant=collection.tenant,
        collection_ids=[collection.slug],
        batch_id=uuid.uuid4(),
        label="baseline",
        ks=[1],
        metrics={"recall@1": 1.0, "mrr": 1.0},
        question_count=1,
    )
    run.collections.set([collection])
    QuestionResult.objects.create(
        run=run,
        position=0,
        entry_id=entry.pk,
        collection_id=collection.slug,
        question=entry.question,
        expected={"refunds": 1},
        **QuestionResult.ranked_fields([("refunds", 1.5)]),
        first_relevant_rank=1,
    )
    return run


@pytest.fixture
def scene(world) -> Scene:
    """This tenant: handbook (refunds, shipping, warranty), private (secret), an entry, a queued job, a run.
    The rival: its own handbook (refunds only), an entry, a queued job, a run."""
    private = services.collection_create(tenant=world.tenant, slug="private", actor="test")
    services.documents_upsert(
        collection=private,
        documents=[services.DocumentInput(id="secret", pages=["Top secret."])],
        actor="test",
    )
    (entry,) = add_entries(world.collection, "Refund window?", expected_document_ids=["refunds"])
    rival_collection = Collection.objects.get(tenant=world.other_tenant, slug="handbook")
    (rival_entry,) = add_entries(rival_collection, "Rival question?")
    job = Job.objects.create(tenant=world.tenant, kind=GoldenJobKind.INGEST, collection=world.collection)
    rival_job = Job.objects.create(
        tenant=world.other_tenant, kind=GoldenJobKind.INGEST, collection=rival_collection
    )
    return Scene(
        entry, job, _run(world.collection, entry), rival_entry, rival_job, _run(rival_collection, rival_entry)
    )


def _corpus() -> SimpleUploadedFile:
    return uploaded("corpus.jsonl", json.dumps({"_id": "hijack", "text": "Planted."}) + "\n")


def _golden() -> SimpleUploadedFile:
    return uploaded("golden.json", json.dumps([{"question": "Planted by the rival?"}]))


SEARCH = {"cluster_id": "acme", "tenant_id": "search"}

# (method, path, data, format, resource, id): the rival's key asks; the answer is "<resource> <id> not found".
# A query string carries GET/DELETE parameters; a body carries POST/PATCH ones. {entry}/{job} are this tenant's,
# {rival_entry}/{rival_job} the rival's own (reached while naming this tenant).
CASES = {
    "list-collections-naming-tenant": ("get", "collections?tenant_id=search", None, None, "Tenant", "search"),
    "create-collection-naming-tenant": (
        "post",
        "collections",
        {**SEARCH, "collection_id": "planted"},
        "json",
        "Tenant",
        "search",
    ),
    "get-collection": ("get", "collections/private", None, None, "Collection", "private"),
    "get-collection-naming-tenant": (
        "get",
        "collections/handbook?cluster_id=acme&tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
    "delete-collection": ("delete", "collections/private", None, None, "Collection", "private"),
    "delete-collection-naming-tenant": (
        "delete",
        "collections/handbook?tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
    "list-documents": ("get", "collections/private/documents", None, None, "Collection", "private"),
    "list-documents-naming-tenant": (
        "get",
        "collections/handbook/documents?tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
    "add-documents": (
        "post",
        "collections/private/documents",
        NEW_DOCUMENTS,
        "json",
        "Collection",
        "private",
    ),
    "add-documents-naming-tenant": (
        "post",
        "collections/handbook/documents",
        {**SEARCH, **NEW_DOCUMENTS},
        "json",
        "Tenant",
        "search",
    ),
    "upload-documents": (
        "post",
        "collections/private/uploads",
        lambda: {"file": _corpus()},
        "multipart",
        "Collection",
        "private",
    ),
    "upload-documents-naming-tenant": (
        "post",
        "collections/handbook/uploads",
        lambda: {**SEARCH, "file": _corpus()},
        "multipart",
        "Tenant",
        "search",
    ),
    "get-document-of-private-collection": (
        "get",
        "collections/private/documents/secret",
        None,
        None,
        "Collection",
        "private",
    ),
    "get-document": ("get", "collections/handbook/documents/shipping", None, None, "Document", "shipping"),
    "get-document-naming-tenant": (
        "get",
        "collections/handbook/documents/refunds?tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
    "delete-document-of-private-collection": (
        "delete",
        "collections/private/documents/secret",
        None,
        None,
        "Collection",
        "private",
    ),
    "delete-document": (
        "delete",
        "collections/handbook/documents/shipping",
        None,
        None,
        "Document",
        "shipping",
    ),
    "delete-document-naming-tenant": (
        "delete",
        "collections/handbook/documents/refunds?tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
    "list-golden-set": (
        "get",
        "search/golden-set?collection_id=private",
        None,
        None,
        "Collection",
        "private",
    ),
    "list-golden-set-naming-tenant": (
        "get",
        "search/golden-set?tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
    "add-golden-entries": (
        "post",
        "search/golden-set",
        {"collection_id": "private", **NEW_ENTRIES},
        "json",
        "Collection",
        "private",
    ),
    "add-golden-entries-naming-tenant": (
        "post",
        "search/golden-set",
        {**SEARCH, "collection_id": "handbook", **NEW_ENTRIES},
        "json",
        "Tenant",
        "search",
    ),
    "get-golden-entry": ("get", "search/golden-set/{entry}", None, None, "Golden entry", "{entry}"),
    "get-golden-entry-naming-tenant": (
        "get",
        "search/golden-set/{rival_entry}?tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
    "patch-golden-entry": (
        "patch",
        "search/golden-set/{entry}",
        {"question": "Hijacked?", "reviewed": True},
        "json",
        "Golden entry",
        "{entry}",
    ),
    "patch-golden-entry-naming-tenant": (
        "patch",
        "search/golden-set/{rival_entry}",
        {**SEARCH, "question": "Hijacked?"},
        "json",
        "Tenant",
        "search",
    ),
    "delete-golden-entry": ("delete", "search/golden-set/{entry}", None, None, "Golden entry", "{entry}"),
    "delete-golden-entry-naming-tenant": (
        "delete",
        "search/golden-set/{rival_entry}?tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
    "upload-golden-set": (
        "post",
        "search/golden-set/upload",
        lambda: {"collection_id": "private", "file": _golden()},
        "multipart",
        "Collection",
        "private",
    ),
    "upload-golden-set-naming-tenant": (
        "post",
        "search/golden-set/upload",
        lambda: {**SEARCH, "collection_id": "handbook", "file": _golden()},
        "multipart",
        "Tenant",
        "search",
    ),
    "export-golden-set": (
        "get",
        "search/golden-set/export?collection_id=private",
        None,
        None,
        "Collection",
        "private",
    ),
    "export-golden-set-naming-tenant": (
        "get",
        "search/golden-set/export?collection_id=handbook&tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
    "get-job": ("get", "jobs/{job}", None, None, "Job", "{job}"),
    "get-job-naming-tenant": ("get", "jobs/{rival_job}?tenant_id=search", None, None, "Tenant", "search"),
    "cancel-job": ("post", "jobs/{job}/cancel", None, None, "Job", "{job}"),
    "cancel-job-naming-tenant": ("post", "jobs/{rival_job}/cancel", SEARCH, "json", "Tenant", "search"),
    "search": (
        "post",
        "search",
        {"collection_id": "private", "query": "secret"},
        "json",
        "Collection",
        "private",
    ),
    "search-several-collections": (
        "post",
        "search",
        {"collection_ids": ["handbook", "private"], "query": "secret"},
        "json",
        "Collection",
        "private",
    ),
    "search-naming-tenant": (
        "post",
        "search",
        {**SEARCH, "collection_id": "handbook", "query": "refund"},
        "json",
        "Tenant",
        "search",
    ),
    "evaluate": ("post", "search/evaluate", {"collection_id": "private"}, "json", "Collection", "private"),
    "evaluate-naming-tenant": (
        "post",
        "search/evaluate",
        {**SEARCH, "collection_id": "handbook", "ks": [1]},
        "json",
        "Tenant",
        "search",
    ),
    "list-runs": ("get", "search/evaluate/runs?collection_id=private", None, None, "Collection", "private"),
    "list-runs-naming-tenant": (
        "get",
        "search/evaluate/runs?tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
    "get-run": ("get", "search/evaluate/runs/{run}", None, None, "Run", "{run}"),
    "get-run-naming-tenant": (
        "get",
        "search/evaluate/runs/{rival_run}?cluster_id=acme&tenant_id=search",
        None,
        None,
        "Tenant",
        "search",
    ),
}


def _fill(text: str, scene: Scene) -> str:
    return text.format(
        entry=scene.entry.pk,
        job=scene.job.pk,
        run=scene.run.pk,
        rival_entry=scene.rival_entry.pk,
        rival_job=scene.rival_job.pk,
        rival_run=scene.rival_run.pk,
    )


def _send(client, method: str, path: str, data, fmt):
    data = data() if callable(data) else data
    kwargs = {"format": fmt} if fmt else {}
    return getattr(client, method)(f"{API}/{path}", data, **kwargs)


def test_the_table_covers_every_endpoint_and_method():
    covered = {(method, path.split("?")[0]) for method, path, *_ in CASES.values()}
    assert covered == {
        ("get", "collections"),
        ("post", "collections"),
        ("get", "collections/private"),
        ("delete", "collections/private"),
        ("get", "collections/handbook"),
        ("delete", "collections/handbook"),
        ("get", "collections/private/documents"),
        ("get", "collections/handbook/documents"),
        ("post", "collections/private/documents"),
        ("post", "collections/handbook/documents"),
        ("post", "collections/private/uploads"),
        ("post", "collections/handbook/uploads"),
        ("get", "collections/private/documents/secret"),
        ("get", "collections/handbook/documents/shipping"),
        ("get", "collections/handbook/documents/refunds"),
        ("delete", "collections/private/documents/secret"),
        ("delete", "collections/handbook/documents/shipping"),
        ("delete", "collections/handbook/documents/refunds"),
        ("get", "search/golden-set"),
        ("post", "search/golden-set"),
        ("get", "search/golden-set/{entry}"),
        ("patch", "search/golden-set/{entry}"),
        ("delete", "search/golden-set/{entry}"),
        ("get", "search/golden-set/{rival_entry}"),
        ("patch", "search/golden-set/{rival_entry}"),
        ("delete", "search/golden-set/{rival_entry}"),
        ("post", "search/golden-set/upload"),
        ("get", "search/golden-set/export"),
        ("get", "jobs/{job}"),
        ("get", "jobs/{rival_job}"),
        ("post", "jobs/{job}/cancel"),
        ("post", "jobs/{rival_job}/cancel"),
        ("post", "search"),
        ("post", "search/evaluate"),
        ("get", "search/evaluate/runs"),
        ("get", "search/evaluate/runs/{run}"),
        ("get", "search/evaluate/runs/{rival_run}"),
    }


@pytest.mark.parametrize(
    ("method", "path", "data", "fmt", "resource", "object_id"), CASES.values(), ids=CASES
)
def test_another_tenants_key_gets_404_and_changes_nothing(
    world, scene, method, path, data, fmt, resource, object_id
):
    before = db_state()
    response = _send(world.other_client, method, _fill(path, scene), data, fmt)
    assert response.status_code == 404, response.content
    assert response["Content-Type"] == "application/json"
    object_id = _fill(object_id, scene)
    assert response.json() == {
        "error": {
            "code": "not-found",
            "message": f"{resource} {object_id} not found.",
            "details": {"resource": resource, "id": object_id},
        }
    }
    assert db_state() == before


@pytest.mark.parametrize(
    "case",
    [
        "get-collection",
        "delete-collection",
        "list-documents",
        "add-documents",
        "upload-documents",
        "get-document",
        "delete-document",
        "list-golden-set",
        "add-golden-entries",
        "get-golden-entry",
        "patch-golden-entry",
        "delete-golden-entry",
        "upload-golden-set",
        "export-golden-set",
        "get-job",
        "cancel-job",
        "search",
        "evaluate",
        "list-runs",
        "get-run",
    ],
)
def test_the_404_for_another_tenants_object_is_the_404_for_a_missing_one(world, scene, case):
    method, path, data, fmt, *_ = CASES[case]
    path = _fill(path, scene)
    hidden = _send(world.other_client, method, path, data, fmt)

    # Now make the object really missing and ask again: the answer must not differ by one byte.
    Collection.objects.filter(tenant=world.tenant, slug="private").delete()
    Document.objects.filter(collection=world.collection, external_id="shipping").delete()
    GoldenEntry.objects.filter(pk=scene.entry.pk).delete()
    Job.objects.filter(pk=scene.job.pk).delete()
    EvaluationRun.objects.filter(pk=scene.run.pk).delete()
    missing = _send(world.other_client, method, path, data, fmt)

    assert (hidden.status_code, missing.status_code) == (404, 404)
    assert hidden.content == missing.content
    assert hidden["Content-Type"] == missing["Content-Type"] == "application/json"
    assert hidden.json()["error"].keys() == {"code", "message", "details"}


def test_the_rival_still_reaches_its_own_same_named_collection(world, scene):
    before = db_state()
    response = world.other_client.get(f"{API}/collections/handbook/documents")
    assert response.status_code == 200, response.json()
    assert [d["id"] for d in response.json()["results"]] == ["refunds"]
    assert world.other_client.get(f"{API}/collections/handbook/documents/shipping").status_code == 404
    listed = world.other_client.get(f"{API}/search/golden-set").json()
    assert [e["id"] for e in listed["results"]] == [str(scene.rival_entry.pk)]
    collections = world.other_client.get(f"{API}/collections").json()
    assert [(c["collection_id"], c["tenant_id"]) for c in collections["results"]] == [("handbook", "rival")]
    runs = world.other_client.get(f"{API}/search/evaluate/runs?collection_id=handbook").json()
    assert [r["run_id"] for r in runs["results"]] == [str(scene.rival_run.pk)]
    run = world.other_client.get(f"{API}/search/evaluate/runs/{scene.rival_run.pk}").json()
    assert [q["entry_id"] for q in run["results"]] == [str(scene.rival_entry.pk)]
    assert db_state() == before
