"""Incremental index updates (issue 12, part 3): a version derived from the previous one and the changed pages
must equal a full rebuild bit for bit (postings, idf, weights, rankings, corpus metadata), for both variants."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import fields

import numpy as np
import pytest

from evalsite.jobs.models import Job
from evaluation.configs import RunConfig
from evaluation.models import EvaluationJobKind
from evaluation.retrieval import index_files, index_updates, indexes
from evaluation.retrieval.corpus import load_corpus
from evaluation.retrieval.read_path import search
from evaluation.retrieval.search.bm25 import BM25Index, BM25Params
from evaluation.retrieval.search.build import build_postings
from evaluation.retrieval.search.engine import SearchIndex
from evaluation.retrieval.search.postings import (
    MERGE_POSTING_BYTES,
    MergeRefused,
    Postings,
    merge_postings,
    open_first_order,
)
from goldenset import services
from goldenset.models import Document, Page
from tests.conftest import add_documents

VARIANTS = ("lucene", "okapi")


def assert_same_postings(got: Postings, want: Postings) -> None:
    for item in fields(Postings):
        if item.name.startswith("_"):  # the lookup memo; first_order, compared where it is kept
            continue
        a, b = getattr(got, item.name), getattr(want, item.name)
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype, item.name
            assert np.array_equal(a, b), item.name
        else:
            assert a == b, item.name


def assert_same_bm25(got: Postings, want: Postings, queries: list[list[str]]) -> None:
    for variant in VARIANTS:
        a, b = BM25Index(got, BM25Params(variant)), BM25Index(want, BM25Params(variant))
        assert a.idf.tobytes() == b.idf.tobytes(), variant  # bit for bit, not approximately
        assert a.parts.tobytes() == b.parts.tobytes(), variant
        assert a.all_weights().tobytes() == b.all_weights().tobytes(), variant
        id_rank = np.arange(got.size, dtype=np.int64)
        for tokens in queries:
            assert a.scores(tokens).tobytes() == b.scores(tokens).tobytes()
            ranked_a = a.top_documents(tokens, 10, id_rank)
            ranked_b = b.top_documents(tokens, 10, id_rank)
            for x, y in zip(ranked_a, ranked_b, strict=True):
                assert np.array_equal(x, y)


# --- the merge itself, against build_postings, on random sequences of changes ------------------------------------


def _random_page(rng: random.Random, words: list[str]) -> list[str]:
    # Zipf-like: a few words on most pages (negative okapi idfs, so the epsilon floor is exercised), a long tail.
    return [words[min(int(rng.paretovariate(0.8)) - 1, len(words) - 1)] for _ in range(rng.randint(0, 25))]


@pytest.mark.parametrize("seed", range(12))
def test_random_adds_changes_and_deletes_merge_to_a_full_builds_arrays_and_rankings(seed):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(rng.choice([5, 40, 300]))]
    pages: dict[tuple[int, int], list[str]] = {}  # (document pk, page number) -> tokens
    next_document = 0
    for _ in range(rng.randint(0, 30)):
        for number in range(1, rng.randint(1, 4) + 1):
            pages[(next_document, number)] = _random_page(rng, words)
        next_document += 1
    current = build_postings(pages[k] for k in sorted(pages))
    queries = [[rng.choice(words) for _ in range(rng.randint(1, 5))] for _ in range(25)] + [["absent"]]
    for _step in range(8):
        changed = dict(pages)
        for key in list(changed):
            draw = rng.random()
            if draw < 0.1:
                del changed[key]  # a page deleted (its document shrank or went)
            elif draw < 0.2:
                changed[key] = _random_page(rng, words)  # its text changed
        for _ in range(rng.randint(0, 4)):
            if rng.random() < 0.6 or not changed:
                for number in range(1, rng.randint(1, 3) + 1):
                    changed[(next_document, number)] = _random_page(rng, words + ["novel", f"new{_step}"])
                next_document += 1
            else:  # a page added to an existing document, anywhere in its numbers
                document = rng.choice([k[0] for k in changed])
                changed[(document, rng.randint(1, 6))] = _random_page(rng, words)
        old_keys, new_keys = sorted(pages), sorted(changed)
        new_row = {key: row for row, key in enumerate(new_keys)}
        # Pages re-read: the new and changed ones, and now and then an unchanged one (its document was written).
        reread = {k for k in new_keys if k not in pages or pages[k] != changed[k] or rng.random() < 0.05}
        new_row_of_old = np.array(
            [new_row[k] if k in changed and k not in reread else -1 for k in old_keys], dtype=np.int64
        )
        added = np.array([new_row[k] for k in new_keys if k in reread], dtype=np.int64)
        merged = merge_postings(
            current,
            current._first_order,
            new_row_of_old,
            len(new_keys),
            added,
            [changed[new_keys[r]] for r in added.tolist()],
        )
        full = build_postings(changed[k] for k in new_keys)
        assert_same_postings(merged, full)
        assert np.array_equal(merged._first_order, full._first_order)
        assert_same_bm25(merged, full, queries)
        current, pages = merged, changed


def test_a_merge_from_a_salted_index_is_refused():
    old = build_postings([["a", "b"], ["b"]])
    old.salt = 1
    with pytest.raises(MergeRefused):
        merge_postings(old, old._first_order, np.array([0, 1]), 3, np.array([2]), [["c"]])


def test_a_new_term_whose_hash_is_an_old_terms_is_refused(monkeypatch):
    from evaluation.retrieval.search import postings as module

    old = build_postings([["a", "b"]])
    real = module.term_hash
    monkeypatch.setattr(
        module, "term_hash", lambda t, salt=0: real("a", salt) if t == "zzz" else real(t, salt)
    )
    with pytest.raises(MergeRefused):
        merge_postings(old, old._first_order, np.array([0]), 2, np.array([1]), [["zzz"]])


# --- through the services and the IndexBuild job -----------------------------------------------------------------

QUERIES = ["refunds card", "shipping express", "warranty defects", "quokka", "policy days", "page two text"]


def _last_build(collection) -> Job:
    collection.refresh_from_db()
    return Job.objects.filter(
        collection=collection,
        kind=EvaluationJobKind.INDEX_BUILD,
        input__content_version=collection.content_version,
    ).latest("queued_at")


def _saved(collection) -> SearchIndex:
    indexes.clear_memory()
    index = indexes.get_index(collection, parts=["bm25:lucene", "bm25:okapi"], build=False)
    assert index.content_version == collection.content_version
    return index


def _full(collection) -> SearchIndex:
    index = SearchIndex(load_corpus(collection))
    for variant in VARIANTS:
        index.bm25(variant)
    return index


def assert_equals_a_full_rebuild(collection) -> None:
    got, want = _saved(collection), _full(collection)
    assert_same_postings(got.postings, want.postings)
    folder = index_files.index_path(index_files.index_key(collection)).parent
    assert np.array_equal(open_first_order(folder / "postings"), want.postings._first_order)
    assert_same_bm25(got.postings, want.postings, [q.split() for q in QUERIES])
    for variant in VARIANTS:
        assert np.asarray(got.bm25_indexes[variant].idf).tobytes() == want.bm25(variant).idf.tobytes()
        assert got.bm25_indexes[variant].all_weights().tobytes() == want.bm25(variant).all_weights().tobytes()
    a, b = got.corpus, want.corpus
    assert np.array_equal(a.page_ids, b.page_ids)
    assert np.array_equal(a.page_document, b.page_document)
    assert a.document_ids == b.document_ids
    assert a.validity == b.validity
    assert a.successors == b.successors
    assert np.array_equal(a.id_rank, b.id_rank)
    assert a.texts_of(range(a.size)) == b.texts_of(range(b.size))
    for query in QUERIES:
        for variant in VARIANTS:
            config = RunConfig(label="t", bm25_variant=variant)
            ranked = got.rank_documents(query, config.search_config(), 10)
            expected = want.rank_documents(query, config.search_config(), 10)
            assert ranked.document_ids == expected.document_ids
            assert ranked.scores.tobytes() == expected.scores.tobytes()


@pytest.mark.django_db(transaction=True)  # the build job runs when the write commits
def test_upserts_changes_and_deletes_update_the_index_to_a_full_rebuilds(world, monkeypatch):
    collection = world.collection
    monkeypatch.setattr(
        index_updates, "UPDATE_MAX_SHARE", 10.0
    )  # a tiny collection: every change is a large share
    # Both variants from now on: the next builds keep the parts the newest saved index has.
    indexes.get_index(collection, parts=["bm25:okapi"], build=True)
    steps = [
        lambda: add_documents(
            collection, {"quokka": "A quokka is a small marsupial. Its refunds policy: none."}
        ),
        lambda: add_documents(collection, {"shipping": "Shipping now takes three days; express is gone."}),
        lambda: services.documents_upsert(  # a title change: page 1's indexed text changes, not its own
            collection=collection,
            documents=[
                services.DocumentInput.from_text(id="warranty", title="Warranty terms", text=_warranty())
            ],
            actor="test",
        ),
        lambda: services.documents_upsert(  # two pages, then one: page 2 deleted, page 1 changed
            collection=collection,
            documents=[
                services.DocumentInput(id="long", title="Long", pages=["page one text", "page two text"]),
                services.DocumentInput(id="refunds", title="Refunds", pages=["Refunds go to the card."]),
            ],
            actor="test",
        ),
        lambda: services.documents_upsert(
            collection=collection,
            documents=[services.DocumentInput(id="long", title="Long", pages=["page one text, again"])],
            actor="test",
        ),
        lambda: services.documents_delete(
            collection=collection, documents=list(Document.objects.filter(external_id="quokka")), actor="test"
        ),
        lambda: services.documents_upsert(  # validity only: same text, new metadata
            collection=collection,
            documents=[
                services.DocumentInput.from_text(
                    id="shipping",
                    title="Shipping",
                    text="Shipping now takes three days; express is gone.",
                    supersedes=["old-shipping"],
                )
            ],
            actor="test",
        ),
    ]
    for step in steps:
        step()
        build = _last_build(collection)
        assert build.status == "Completed", build.error
        assert build.result["updated"] == 1, build.result
        assert build.result["parts"] == ["bm25:lucene", "bm25:okapi"]
        assert_equals_a_full_rebuild(collection)
    # A changed document's pages are all read again; unchanged documents' pages never are.
    assert build.result["pages_tokenized"] == 1


def _warranty() -> str:
    return "Every device carries a two-year warranty covering manufacturing defects."


@pytest.mark.django_db(transaction=True)
def test_an_update_reads_only_the_changed_pages(world, monkeypatch):
    collection = world.collection
    add_documents(collection, {f"doc-{i}": f"Document {i} about topic {i % 5}." for i in range(40)})
    read: list[int] = []
    real = index_updates.page_texts
    monkeypatch.setattr(index_updates, "page_texts", lambda ids: read.extend(ids) or real(ids))
    add_documents(collection, {"doc-3": "Document 3 is now about a quokka.", "fresh": "A fresh quokka page."})
    build = _last_build(collection)
    assert build.result["updated"] == 1
    assert sorted(read) == sorted(
        Page.objects.filter(document__external_id__in=["doc-3", "fresh"]).values_list("pk", flat=True)
    )
    body = search(collections=[collection], query="quokka", config=RunConfig(label="t"), top_k=5)
    assert {r["document_id"] for r in body["results"]} == {"fresh", "doc-3"}
    assert_equals_a_full_rebuild(collection)


@pytest.mark.django_db(transaction=True)
def test_without_an_older_version_or_after_a_large_change_the_build_is_full(world):
    collection = world.collection  # its first version: built in full by the ingest's job
    first = _last_build(collection)
    assert first.result["updated"] == 0
    add_documents(collection, {f"doc-{i}": f"Document {i}." for i in range(10)})  # 10 of 13 pages new
    assert _last_build(collection).result["updated"] == 0
    assert_equals_a_full_rebuild(collection)


@pytest.mark.django_db(transaction=True)
def test_an_update_whose_merge_would_pass_the_memory_budget_is_a_full_build(world, settings):
    """A merge holds the old postings whole (MERGE_POSTING_BYTES each): past the budget, the segmented full build
    (which holds the budget whatever the size) is taken instead, and answers alike."""
    collection = world.collection
    add_documents(collection, {f"doc-{i}": f"Document {i} about topic {i % 5}." for i in range(40)})
    postings = indexes.get_index(collection, parts=["bm25:lucene"], build=True).postings
    assert postings is not None
    settings.EVALSITE_INDEX_BUILD_MEMORY = len(postings.rows) * MERGE_POSTING_BYTES + 1
    add_documents(collection, {"doc-3": "Document 3 is now about a quokka."})
    assert _last_build(collection).result["updated"] == 1  # within the budget: merged
    postings = indexes.get_index(collection, parts=["bm25:lucene"], build=True).postings
    assert postings is not None
    settings.EVALSITE_INDEX_BUILD_MEMORY = len(postings.rows) * MERGE_POSTING_BYTES - 1
    add_documents(collection, {"doc-4": "Document 4 is now about a quokka too."})
    build = _last_build(collection)
    assert build.status == "Completed" and build.result["updated"] == 0  # past it: built in full
    assert_equals_a_full_rebuild(collection)


@pytest.mark.django_db(transaction=True)
def test_a_search_never_waits_on_a_running_build(world):
    """While a build holds the version's locks, a search (builds off) answers from what is saved."""
    collection = world.collection
    body = search(collections=[collection], query="refunds", config=RunConfig(label="t"), top_k=3)
    assert body["results"]
    key = index_files.index_key(collection)
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with indexes._key_lock(key), index_files.file_lock(index_files.index_path(key)):
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        locked.wait(5)
        indexes.clear_memory()  # another process: it must read the saved file, not wait for the builder
        started = time.perf_counter()
        with indexes.builds_off():
            again = search(collections=[collection], query="refunds", config=RunConfig(label="t"), top_k=3)
        assert time.perf_counter() - started < 5
        assert again["results"] == body["results"]
    finally:
        release.set()
        holder.join()
