"""Indexes published to the database (evaluation.retrieval.index_store): a machine serves what another machine's worker
built, fetched into its own index directory, and no version is built twice. Each "machine" here is an index
directory of its own and an empty memory; the builds are queued (django-q2's inline mode off) and run with the
real job runner, as a worker on one of the machines runs them. The two-server drill on PostgreSQL is in
tests/evalsite/test_two_machines.py."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import pytest
from django_q.conf import Conf

from evalsite.jobs import services as jobs
from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationJobKind, IndexFile, IndexManifest
from evaluation.retrieval import index_files, index_store, indexes
from tests.conftest import add_documents


@pytest.fixture
def machines(monkeypatch, settings, tmp_path):
    """Switch between machines by name: each its own index directory, memory emptied on the switch."""
    monkeypatch.setattr(Conf, "SYNC", False)
    settings.EVALSITE_INDEX_STORE = "database"

    def on(name: str) -> Path:
        settings.EVALSITE_INDEX_DIR = tmp_path / name
        indexes.clear_memory()
        return tmp_path / name

    yield on
    indexes.clear_memory()


def search(world, query: str = "refund"):
    body = {"collection_id": "handbook", "query": query, "search_type": "FullText"}
    return world.client.post("/lmkit/v1/search", body, format="json")


def builds(world) -> list[Job]:
    return list(
        Job.objects.filter(collection=world.collection, kind=EvaluationJobKind.INDEX_BUILD).order_by(
            "created_at"
        )
    )


def run_queued(world) -> None:
    for job in builds(world):
        if job.status == JobStatus.QUEUED:
            jobs.job_run(str(job.pk))


def test_a_machine_serves_the_index_another_machines_worker_built_without_building_it(world, machines):
    machines("a")
    assert search(world).status_code == 503
    run_queued(world)  # a's worker
    built = search(world).json()
    assert [r["document_id"] for r in built["results"]] == ["refunds"]

    folder_b = machines("b")
    answered = search(world)
    assert answered.status_code == 200, answered.json()
    assert answered.json()["results"] == built["results"]
    assert answered.json()["index"]["built"] == 0
    assert len(builds(world)) == 1  # nothing queued by b
    (saved,) = [p for p in folder_b.iterdir() if p.is_dir()]
    assert (saved / index_store.DESCRIPTION).is_file() and (saved / "postings").is_dir()
    assert IndexManifest.objects.get().parts == ["bm25:lucene"]


def test_a_document_added_on_one_machine_is_built_once_and_searchable_on_both(world, machines):
    machines("a")
    search(world)
    run_queued(world)
    machines("b")
    assert search(world).status_code == 200

    add_documents(world.collection, {"returns": "Returned parcels are refunded once they reach our depot."})
    world.collection.refresh_from_db()
    for query in ("refunded parcels", "depot", "refund"):  # b asks, again and again: one build queued
        stale = search(world, query)
        assert stale.status_code == 200 and stale.json()["index"]["stale"] == ["handbook"]
    queued = [j for j in builds(world) if j.status == JobStatus.QUEUED]
    assert len(queued) == 1

    machines("a")
    run_queued(world)  # a's worker: an update of the version a saved (only the new page tokenized)
    done = Job.objects.get(pk=queued[0].pk)
    assert done.result["updated"] == 1 and done.result["pages_tokenized"] == 1
    for machine in ("a", "b"):
        machines(machine)
        found = search(world, "depot").json()
        assert found["results"][0]["document_id"] == "returns", machine
        assert found["index"]["stale"] == []
    assert len(builds(world)) == 2  # one per version
    # The older version is withdrawn once the new one has its parts, as its folders are.
    assert list(IndexManifest.objects.values_list("content_version", flat=True)) == [
        world.collection.content_version
    ]


def test_a_worker_on_a_new_machine_updates_from_the_published_older_version(world, machines):
    machines("a")
    search(world)
    run_queued(world)
    add_documents(world.collection, {"returns": "Returned parcels are refunded once they reach our depot."})
    world.collection.refresh_from_db()
    machines("c")
    search(world, "depot")  # queues the new version's build; c fetched the older version to answer meanwhile
    run_queued(world)  # c's worker
    assert builds(world)[-1].result["updated"] == 1


def test_a_published_file_that_does_not_match_its_digest_is_withdrawn_and_built_again(world, machines):
    machines("a")
    search(world)
    run_queued(world)
    chunk = IndexFile.objects.filter(name=index_store.DESCRIPTION).first()
    assert chunk is not None
    IndexFile.objects.filter(pk=chunk.pk).update(data=bytes(chunk.data)[:-1] + b"!")

    folder = machines("b")
    refused = search(world)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "index-building"
    assert not IndexManifest.objects.exists() and not IndexFile.objects.exists()
    assert not list(folder.glob(f"*/{index_store.DESCRIPTION}"))  # nothing half-written is left to read
    run_queued(world)  # b's own worker builds it again, and publishes it
    assert search(world).status_code == 200
    assert IndexManifest.objects.count() == 1


def test_publishing_a_part_later_sends_only_what_changed(world, machines):
    machines("a")
    index = indexes.get_index(world.collection, parts=["bm25:lucene"], build=True)
    first = {(f.name, f.digest) for f in IndexFile.objects.filter(chunk=0)}
    indexes.get_index(world.collection, parts=["bm25:lucene", "vectors"], build=True)
    second = {(f.name, f.digest) for f in IndexFile.objects.filter(chunk=0)}
    arrays = {pair for pair in first if pair[0] not in index_store.REWRITTEN}
    assert arrays <= second  # kept, not sent again
    assert "vectors.npy" in {name for name, _ in second}
    # One revision of the description: the one the manifest names.
    manifest = IndexManifest.objects.get()
    assert manifest.parts == ["bm25:lucene", "vectors"]
    descriptions = [d for n, d in second if n == index_store.DESCRIPTION]
    assert descriptions == [d for n, d, _ in manifest.files if n == index_store.DESCRIPTION]
    assert index.content_version == manifest.content_version


@pytest.mark.parametrize("store", ["database", "local"])
def test_a_thread_keeping_an_older_read_never_hides_the_newer_saved_file_from_its_process(
    world, machines, settings, store
):
    """Two threads of one web process: one read the FullText-only file, then the vectors were saved and the
    other read the new file; the first, later, keeps its older index in memory. The process must still see
    the new file (before: it took the new file as read, served FullText only for good, and a Hybrid search
    answered 503 index-building, with no job, for as long as the process lived)."""
    machines("a")
    settings.EVALSITE_INDEX_STORE = store
    wanted = frozenset({"bm25:lucene", "vectors"})
    indexes.get_index(world.collection, parts=["bm25:lucene"], build=True)
    key = index_files.index_key(world.collection)
    path = index_files.index_path(key)
    older = indexes._read(path)  # the first thread's read
    assert older is not None and not older.has_part("vectors")
    indexes.get_index(world.collection, parts=sorted(wanted), build=True)  # the worker saves the vectors
    newer = indexes._lookup(world.collection, wanted, indexes.IndexStats(), build=False)  # the second's read
    assert newer is not None and newer.has_part("vectors")
    indexes._remember(key, older)  # the first thread, late
    served = indexes._lookup(world.collection, wanted, indexes.IndexStats(), build=False)
    assert served is not None and served.has_part("vectors")


class Payload:
    """What a forged row holds: a pickle that creates a file when it is unpickled (any code could run instead)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def forge(world, key: str, files: dict[str, bytes], parts: list[str]) -> None:
    """Rows written straight into the store by anything but evalsite: files and a manifest naming them, with
    the right digests (anyone can compute those) and no signature."""
    listed = []
    for name, data in files.items():
        digest = hashlib.sha256(data).hexdigest()
        IndexFile.objects.create(
            collection=world.collection, key=key, name=name, digest=digest, chunk=0, data=data
        )
        listed.append([name, digest, len(data)])
    IndexManifest.objects.create(
        collection=world.collection,
        key=key,
        family=index_store._family(key),
        content_version=world.collection.content_version,
        parts=parts,
        files=listed,
    )


@pytest.mark.parametrize("name", ["index.pickle", index_store.DESCRIPTION])
def test_a_row_forged_into_the_store_is_never_read_and_the_search_answers_from_a_build(
    world, machines, tmp_path, caplog, name
):
    folder = machines("a")
    marker = tmp_path / "executed"
    payload = pickle.dumps(Payload(marker))
    key = index_files.index_path(index_files.index_key(world.collection)).parent.name
    forge(world, key, {"parts.json": b'["bm25:lucene"]', name: payload}, ["bm25:lucene"])

    first = search(world)
    run_queued(world)  # the build its refusal queued
    answered = search(world)
    assert not marker.exists()  # never unpickled
    assert answered.status_code == 200, answered.json()
    assert [r["document_id"] for r in answered.json()["results"]] == ["refunds"]
    assert first.status_code == 503 and first.json()["error"]["code"] == "index-building"
    assert "refused a published index (no signature)" in caplog.text
    planted = folder / key / name  # nothing of it fetched: the description there is the build's own
    assert planted.read_bytes().startswith(b"{") if name == index_store.DESCRIPTION else not planted.exists()
    # The build's own publication replaced the forged rows.
    assert index_store.published(key) is not None
    assert not IndexFile.objects.filter(digest=hashlib.sha256(payload).hexdigest()).exists()


def test_an_index_published_under_another_secret_key_is_refused_and_built_here(
    world, machines, settings, caplog
):
    machines("a")
    search(world)
    ours = settings.SECRET_KEY
    settings.SECRET_KEY = "another deployment's secret key, not this one's"
    run_queued(world)  # a's worker, under another SECRET_KEY, publishes it signed with that one
    settings.SECRET_KEY = ours
    key = index_files.index_path(index_files.index_key(world.collection)).parent.name
    assert IndexManifest.objects.get(key=key).signature

    folder_b = machines("b")
    refused = search(world)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "index-building"
    assert "its signature is not this SECRET_KEY's" in caplog.text
    assert not list(folder_b.glob(f"*/{index_store.DESCRIPTION}"))  # nothing fetched
    run_queued(world)  # b's worker builds its own, and publishes it under this key
    answered = search(world)
    assert answered.status_code == 200 and answered.json()["results"][0]["document_id"] == "refunds"
    assert index_store.published(key) is not None


def test_the_family_of_a_key_drops_only_its_version():
    uid = "0b6f8c1e-4f1a-4c53-9b1e-2f2d7b3c9a10"
    assert index_store._family(f"{uid}-v12-e4-abc123") == f"{uid}-e4-abc123"


def test_publishing_under_a_new_engine_withdraws_the_older_engines_files(world, machines):
    """An engine change (index_files.ENGINE_VERSION) makes every saved index unreadable to the new release: once a
    build under the new engine is published, the old engine's manifests and files of that collection go."""
    machines("a")
    first = search(world)
    assert first.status_code == 503
    run_queued(world)
    [manifest] = IndexManifest.objects.filter(collection=world.collection)
    old_key = manifest.key.replace(f"-e{index_files.ENGINE_VERSION}-", f"-e{index_files.ENGINE_VERSION - 1}-")
    files = list(IndexFile.objects.filter(key=manifest.key).values("name", "digest", "chunk", "data"))
    IndexManifest.objects.create(
        key=old_key,
        collection=world.collection,
        family=index_store._family(old_key),
        content_version=manifest.content_version,
        parts=manifest.parts,
        files=manifest.files,
        signature="",
    )
    for row in files:
        IndexFile.objects.create(collection=world.collection, key=old_key, **row)
    other_engine_newer = manifest.key.replace(
        f"-e{index_files.ENGINE_VERSION}-", f"-e{index_files.ENGINE_VERSION + 1}-"
    )
    assert index_store._engine(old_key) == index_files.ENGINE_VERSION - 1
    assert index_store._engine(other_engine_newer) == index_files.ENGINE_VERSION + 1
    add_documents(world.collection, {"late": "a page about refunds added later"})
    machines("b")
    assert search(world).status_code == 200  # the published older version answers while the new one builds
    run_queued(world)
    keys = set(IndexManifest.objects.filter(collection=world.collection).values_list("key", flat=True))
    assert old_key not in keys and not IndexFile.objects.filter(key=old_key).exists()
    assert any(f"-e{index_files.ENGINE_VERSION}-" in key for key in keys)
