"""Search indexes are built by jobs, never inside a web request: what a search answers before, while and after.

django-q2 runs tasks inline in the test settings; these tests turn that off (Conf.SYNC), so a queued IndexBuild
job waits in the broker as it does in production until the test runs it with the real job runner.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from django.core.management import call_command
from django_q.conf import Conf

from evalsite.jobs import services as jobs
from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationJobKind
from evaluation.retrieval import index_files, indexes
from tests.conftest import add_documents


@pytest.fixture
def queued_only(monkeypatch):
    monkeypatch.setattr(Conf, "SYNC", False)
    indexes.clear_memory()


def search(world, query: str = "refund", search_type: str = "FullText"):
    body = {"collection_id": "handbook", "query": query, "search_type": search_type}
    return world.client.post("/lmkit/v1/search", body, format="json")


def builds(world) -> list[Job]:
    return list(
        Job.objects.filter(collection=world.collection, kind=EvaluationJobKind.INDEX_BUILD).order_by(
            "created_at"
        )
    )


def test_a_search_before_any_index_answers_503_index_building_and_queues_one_build(world, queued_only):
    first = search(world)
    assert first.status_code == 503, first.json()
    assert first["Retry-After"] == str(indexes.RETRY_AFTER_SECONDS)
    error = first.json()["error"]
    assert error["code"] == "index-building"
    assert error["details"]["content_version"] == world.collection.content_version
    again = search(world, "warranty")
    assert again.status_code == 503
    # One build for the version, however many searches asked.
    queued = builds(world)
    assert [job.status for job in queued] == [JobStatus.QUEUED]
    assert error["details"]["job_id"] == again.json()["error"]["details"]["job_id"] == str(queued[0].pk)

    jobs.job_run(str(queued[0].pk))  # what a worker does
    done = Job.objects.get(pk=queued[0].pk)
    assert done.status == JobStatus.COMPLETED and done.result["parts"] == ["bm25:lucene"]
    answered = search(world)
    assert answered.status_code == 200, answered.json()
    index = answered.json()["index"]
    assert (index["built"], index["parts_built"], index["stale"]) == (0, 0, [])
    assert answered.json()["results"][0]["document_id"] == "refunds"


def test_while_a_new_version_builds_searches_answer_from_the_previous_one_and_say_so(world, queued_only):
    indexes.get_index(world.collection, parts=["bm25:lucene"], build=True)  # the current version, saved
    before = world.collection.content_version
    add_documents(world.collection, {"returns-desk": "The returns desk handles every refund in person."})
    world.collection.refresh_from_db()
    assert world.collection.content_version == before + 1

    stale = search(world, "returns desk")
    assert stale.status_code == 200, stale.json()
    body = stale.json()
    assert body["index"]["content_versions"] == {"handbook": before}
    assert body["index"]["stale"] == ["handbook"]
    assert "returns-desk" not in [r["document_id"] for r in body["results"]]
    (queued,) = [job for job in builds(world) if job.input["content_version"] == before + 1]

    jobs.job_run(str(queued.pk))
    fresh = search(world, "returns desk").json()
    assert fresh["index"]["content_versions"] == {"handbook": before + 1}
    assert fresh["index"]["stale"] == []
    assert fresh["results"][0]["document_id"] == "returns-desk"


def test_a_hybrid_search_waits_for_its_vectors_without_building_them(world, queued_only):
    indexes.get_index(world.collection, parts=["bm25:lucene"], build=True)  # BM25 only
    waiting = search(world, "refund", "Hybrid")
    assert waiting.status_code == 503 and waiting.json()["error"]["code"] == "index-building"
    assert waiting.json()["error"]["details"]["parts"] == ["bm25:lucene", "vectors"]  # what Hybrid reads
    assert search(world, "refund", "FullText").status_code == 200  # FullText is not held up
    (queued,) = [job for job in builds(world) if "vectors" in job.input["parts"]]
    jobs.job_run(str(queued.pk))
    assert search(world, "refund", "Hybrid").status_code == 200


def test_build_index_builds_once_and_then_finds_the_saved_index(world, capsys):
    scope = ["--cluster", "acme", "--tenant", "search", "--collection", "handbook"]
    call_command("build_index", *scope, "--parts", "vectors")
    first = capsys.readouterr().out
    assert "parts bm25:lucene, vectors; built in" in first
    indexes.clear_memory()
    call_command("build_index", *scope)
    assert "parts bm25:lucene, vectors; found saved in" in capsys.readouterr().out


def test_build_index_names_an_unknown_part(world, capsys):
    with pytest.raises(Exception, match="unknown part 'bm26'"):
        call_command(
            "build_index",
            "--cluster",
            "acme",
            "--tenant",
            "search",
            "--collection",
            "handbook",
            "--parts",
            "bm26",
        )


def test_while_a_new_version_has_bm25_only_hybrid_is_answered_by_the_previous_full_version(
    world, queued_only
):
    """An update saves FullText's part first and the vectors after: meanwhile the previous version, which has
    them, stays on disk and answers Hybrid; it goes once the new version has every part it had."""
    indexes.get_index(world.collection, parts=["bm25:lucene", "vectors"], build=True)
    before = world.collection.content_version
    add_documents(world.collection, {"returns-desk": "The returns desk handles every refund in person."})
    world.collection.refresh_from_db()
    assert index_files.saved_parts(world.collection) == {"bm25:lucene", "vectors"}
    indexes.get_index(world.collection, parts=["bm25:lucene"], build=True)  # the update's first save

    fulltext = search(world, "returns desk").json()
    assert fulltext["index"]["content_versions"] == {"handbook": before + 1}
    hybrid = search(world, "returns desk", "Hybrid")
    assert hybrid.status_code == 200, hybrid.json()
    assert hybrid.json()["index"]["content_versions"] == {"handbook": before}
    assert hybrid.json()["index"]["stale"] == ["handbook"]
    # The next build still makes the vectors (the parts of every saved version), and then the old one goes.
    assert index_files.saved_parts(world.collection) == {"bm25:lucene", "vectors"}
    indexes.get_index(world.collection, parts=["bm25:lucene", "vectors"], build=True)
    assert [version for version, _ in index_files.saved_versions(world.collection)] == [before + 1]
    assert search(world, "returns desk", "Hybrid").json()["index"]["stale"] == []


def test_a_build_done_in_another_index_directory_answers_index_not_shared_and_queues_nothing(
    world, queued_only, settings, tmp_path
):
    """The local store, in-process: a web-only "machine" (its own index directory, named before the build) and
    the worker's (another directory). The web side says where the problem is and queues no second build."""
    settings.EVALSITE_INDEX_STORE = "local"
    settings.EVALSITE_INDEX_DIR = tmp_path / "web"
    index_files.directory_id()  # the web server names its directory when it starts (evaluation.warmup)
    assert search(world).status_code == 503  # queues the build
    settings.EVALSITE_INDEX_DIR = tmp_path / "worker"
    jobs.job_run(str(builds(world)[0].pk))  # the worker, elsewhere
    settings.EVALSITE_INDEX_DIR = tmp_path / "web"
    indexes.clear_memory()
    for _ in range(3):
        refused = search(world)
        assert refused.status_code == 503 and "Retry-After" not in refused
        error = refused.json()["error"]
        assert error["code"] == "index-not-shared" and "EVALSITE_INDEX_STORE" in error["message"]
        assert error["details"]["job_id"] == str(builds(world)[0].pk)
    assert len(builds(world)) == 1


def test_a_build_that_ended_before_the_index_directory_was_emptied_is_built_again_once(
    world, queued_only, settings, tmp_path
):
    """One machine, its web and worker sharing a directory that is emptied (removed whole, its name with it):
    the build done before is no sign of another directory. One build is queued, and its index answers."""
    settings.EVALSITE_INDEX_STORE = "local"
    settings.EVALSITE_INDEX_DIR = tmp_path / "indexes"
    search(world)
    jobs.job_run(str(builds(world)[0].pk))
    assert search(world).status_code == 200
    shutil.rmtree(tmp_path / "indexes")
    indexes.clear_memory()
    for _ in range(3):
        waiting = search(world)
        assert waiting.status_code == 503 and waiting.json()["error"]["code"] == "index-building"
    assert [job.status for job in builds(world)] == [JobStatus.COMPLETED, JobStatus.QUEUED]
    jobs.job_run(str(builds(world)[1].pk))
    assert search(world).json()["results"][0]["document_id"] == "refunds"


def test_a_build_job_under_a_small_budget_builds_in_segments_reports_its_progress_and_searches_the_same(
    world, queued_only, settings, monkeypatch
):
    """EVALSITE_INDEX_BUILD_MEMORY cut to a few kilobytes: the job's postings are built in many segments, spilled
    and merged into the index folder, with its progress told as it goes (pages, then postings, to the end), and
    the saved arrays are those of a build in memory; nothing of the build is left beside the index."""
    from evaluation.retrieval.corpus import load_corpus  # the in-memory build to compare with
    from evaluation.retrieval.search import build
    from evaluation.retrieval.search.engine import SearchIndex

    words = ["refund", "warranty", "shipping", "invoice", "return", "battery", "screen", "order"]
    add_documents(
        world.collection,
        {
            f"doc-{i}": " ".join(words[(i * k) % len(words)] + str(k % 7) for k in range(1, 25))
            for i in range(260)
        },
    )
    world.collection.refresh_from_db()
    settings.EVALSITE_INDEX_BUILD_MEMORY = 20_000
    segments = []
    real = build._sorted_segment
    monkeypatch.setattr(build, "_sorted_segment", lambda *a: segments.append(1) or real(*a))
    job = Job.objects.get(pk=indexes.build_schedule(world.collection))
    seen: list[tuple[int, int]] = []
    result = indexes.index_build_job(job, lambda done, total: seen.append((done, total)))
    assert result["parts"] == ["bm25:lucene"] and len(segments) >= 4
    size = len(load_corpus(world.collection).page_ids)
    steps = [done for done, total in seen if total == 2 * size]
    assert (
        steps == sorted(steps) and steps[0] < size < steps[-1] == 2 * size
    )  # counted, then merged, to the end
    folder = index_files.index_path(index_files.index_key(world.collection)).parent
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]
    saved = index_files.read_index(index_files.index_path(index_files.index_key(world.collection)))
    fresh = SearchIndex(load_corpus(world.collection))
    fresh.bm25("lucene")
    for name in (
        "indptr",
        "rows",
        "codes",
        "lengths",
        "term_hashes",
        "term_bytes",
        "first_seen",
        "common_codes",
    ):
        a, b = getattr(saved.postings, name), getattr(fresh.postings, name)
        assert a.dtype == b.dtype and np.asarray(a).tobytes() == np.asarray(b).tobytes(), name
    answered = search(world, "warranty3 refund")
    assert answered.status_code == 200 and answered.json()["results"]
