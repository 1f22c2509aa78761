"""A new version of a collection's index: built in full, or derived from the previous one and the pages that
changed.

A full build (`full_build`) reads the pages' texts a few thousand at a time and builds the postings in segments
within EVALSITE_INDEX_BUILD_MEMORY, merged into the index's folder (search.build), so its memory does not
grow with the collection.

When an older version of the collection is saved, the IndexBuild job derives the new
version's BM25 part from it instead of reading and tokenizing every page (`updated_index`): it reads the ids,
document and number of every page and the write stamp (Document.updated_at) of every document, keeps the
pages whose document was not written since, and tokenizes only the others (new and changed pages; a deleted
page's rows are dropped). postings.merge_postings merges them into the old arrays with numpy, giving exactly
the arrays a full build gives, and the idfs and tf parts are then computed over the whole new postings as a
full build computes them: every score equals a full rebuild's bit for bit (document frequencies, average
length and okapi's first-occurrence order are those of the live collection).

Why one merged set of arrays per version rather than query-time segments (a base, a delta, a deletion mask, as
Lucene serves them): BM25's weights depend on N, on every term's document frequency and on the average length,
so one added page changes every weight of every term. Segments could only stay exact with per-segment
statistics merged per query; merging costs one pass over the postings in the job (seconds at 300,000 pages:
docs/benchmarks.md, benchmarks/incremental_bench.py) and leaves the query path as it was: one set of postings,
each weight its term's idf times its (tf, length) code's tf part. A merge holds the old and new arrays whole
(postings.MERGE_POSTING_BYTES a posting): past EVALSITE_INDEX_BUILD_MEMORY (about 38M postings, 800,000 pages of
the synthetic corpora, at the default 2 GiB) the update is a full build instead, slower but within the budget
whatever the collection's size. The vectors (LSI) are not incremental: a job
that must also build them saves the BM25 part first, so FullText serves the new version while the vectors are
computed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
from django.conf import settings

from evaluation.retrieval import index_store
from evaluation.retrieval.corpus import (
    ContentStamps,
    UpdateBase,
    attach_text_source,
    corpus_update,
    load_corpus,
    page_texts,
    read_snapshot,
)
from evaluation.retrieval.index_files import (
    DEFAULT_PART,
    build_folder,
    fetch_older,
    read_corpus,
    saved_versions,
)
from evaluation.retrieval.search.bm25 import BM25Index, BM25Params
from evaluation.retrieval.search.build import build_postings
from evaluation.retrieval.search.engine import Embedder, SearchIndex
from evaluation.retrieval.search.postings import (
    MERGE_POSTING_BYTES,
    MergeRefused,
    Postings,
    merge_postings,
    open_first_order,
)
from goldenset.models import Collection
from goldenset.text import tokenize

logger = logging.getLogger(__name__)

# An update re-tokenizes the changed pages only; past this share of the collection a full build is as fast.
UPDATE_MAX_SHARE = 0.5


def _update_base(collection: Collection) -> UpdateBase | None:
    current = collection.content_version
    if index_store.enabled() and not any(v < current for v, _folder in saved_versions(collection)):
        fetch_older(collection, frozenset({DEFAULT_PART}))  # built elsewhere: updated here all the same
    for version, folder in saved_versions(collection):
        if version >= current:
            continue
        try:
            postings = Postings.open(folder / "postings")
            first_order = open_first_order(folder / "postings")
            stamps = ContentStamps.load(folder / "content.npz")
            corpus = read_corpus(folder)
        except (OSError, ValueError, KeyError) as exc:
            logger.info("index %s cannot be updated (%s): a full build", folder, exc)
            return None
        if first_order is None or not len(stamps.page_ids) == postings.size == corpus.size:
            return None
        return UpdateBase(version, postings, first_order, stamps, corpus)
    return None


def full_build(
    collection: Collection, path: Path, embedder_factory: Callable[..., Embedder], job_progress=None
) -> SearchIndex:
    """A new index of the collection's pages, its postings to be built in a folder beside `path` within
    EVALSITE_INDEX_BUILD_MEMORY, telling `job_progress(done, total)` (a build job's) how far it got: pages
    counted, then postings merged, each half of the way."""
    corpus = load_corpus(collection)
    index = SearchIndex(corpus, embedder_factory=embedder_factory)
    new_folder = build_folder(path)
    size = max(corpus.size, 1)

    def progress(stage: str, done: int, total: int) -> None:
        if job_progress is not None:
            half = done if stage == "pages" else size + size * done // max(total, 1)
            job_progress(min(half, 2 * size), 2 * size)

    def builder(pages) -> Postings:
        budget = settings.EVALSITE_INDEX_BUILD_MEMORY
        return build_postings(pages, folder=new_folder(), budget=budget, progress=progress)

    index.postings_builder = builder
    return index


def updated_index(
    collection: Collection, wanted: frozenset[str], embedder_factory: Callable[..., Embedder]
) -> tuple[SearchIndex, int] | None:
    """The new version's index with its BM25 parts, derived from the newest older saved version: its postings
    with the removed and changed pages' rows dropped and the new and changed pages (the only ones read and
    tokenized) merged in (postings.merge_postings); idfs and weights are then computed over the whole new
    postings as a full build computes them, so every score equals a full build's bit for bit. None when no
    older version can be updated (none saved, saved by an older engine, or too much changed). With the index,
    how many pages were tokenized."""
    variants = [p.removeprefix("bm25:") for p in sorted(wanted) if p.startswith("bm25:")]
    if not variants:
        return None
    base = _update_base(collection)
    if base is None:
        return None
    budget = settings.EVALSITE_INDEX_BUILD_MEMORY
    if len(base.postings.rows) * MERGE_POSTING_BYTES > budget:  # a full build's segments hold the budget
        logger.info(
            "collection %s: a full build (merging %s postings would pass EVALSITE_INDEX_BUILD_MEMORY, %s bytes)",
            collection.uid,
            f"{len(base.postings.rows):,}",
            f"{budget:,}",
        )
        return None
    with read_snapshot():  # the metadata and the changed pages' texts from one snapshot
        corpus = corpus_update(collection, base)
        new_row_of_old, added_rows = _changes(base.stamps, corpus.stamps)
        removed = int((new_row_of_old < 0).sum())
        if len(added_rows) + removed > UPDATE_MAX_SHARE * max(corpus.size, 1):
            return None
        texts = page_texts([corpus.page_ids[r] for r in added_rows.tolist()])
    try:
        postings = merge_postings(
            base.postings,
            base.first_order,
            new_row_of_old,
            corpus.size,
            added_rows,
            (tokenize(text) for text in texts),
        )
    except MergeRefused as exc:
        logger.info("collection %s: a full build (%s)", collection.uid, exc)
        return None
    attach_text_source(corpus)
    index = SearchIndex(corpus, embedder_factory=embedder_factory)
    index.postings = postings
    index.bm25_indexes = {v: BM25Index(postings, BM25Params(v)) for v in variants}
    return index, len(added_rows)


def _changes(old: ContentStamps, new: ContentStamps) -> tuple[np.ndarray, np.ndarray]:
    """(new row of each old row or -1, new rows to tokenize). A page is kept when the same page id is in both,
    of the same document and number, and its document was not written since (its updated_at unchanged: every
    write of a page, or of the title page 1 shows, writes its document): the others are removed and added."""
    # Documents unchanged: in both, with the same last write.
    at = np.searchsorted(old.document_pks, new.document_pks)
    at = np.minimum(at, max(len(old.document_pks) - 1, 0))
    same_document = (
        (old.document_pks[at] == new.document_pks) & (old.document_updated[at] == new.document_updated)
        if len(old.document_pks)
        else np.zeros(len(new.document_pks), dtype=bool)
    )
    unchanged_documents = new.document_pks[same_document]
    # Pages: the old row of each new page id, if any.
    by_id = np.argsort(old.page_ids, kind="stable")
    sorted_ids = old.page_ids[by_id]
    position = np.minimum(np.searchsorted(sorted_ids, new.page_ids), max(len(sorted_ids) - 1, 0))
    old_row = by_id[position] if len(sorted_ids) else np.zeros(len(new.page_ids), dtype=np.int64)
    kept = (
        (sorted_ids[position] == new.page_ids)
        & (old.page_documents[old_row] == new.page_documents)
        & (old.page_numbers[old_row] == new.page_numbers)
        & np.isin(new.page_documents, unchanged_documents)
        if len(sorted_ids)
        else np.zeros(len(new.page_ids), dtype=bool)
    )
    new_row_of_old = np.full(len(old.page_ids), -1, dtype=np.int64)
    new_row_of_old[old_row[kept]] = np.flatnonzero(kept)
    return new_row_of_old, np.flatnonzero(~kept)
