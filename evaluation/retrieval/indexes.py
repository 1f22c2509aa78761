"""Search indexes per collection and content version: built once, kept in memory and on disk.

The key is (collection uid, content_version, ENGINE_VERSION, embedder): any change to a collection's documents bumps its
content version, so a stale index is never used; a process that lacks an index loads it from the index
directory or builds it from the database (nothing depends on another process's memory). Parts (BM25 per
variant, the page vectors) are built when a search first needs them.

Concurrent first searches build each part once: within a process one thread per index key builds while the
others wait for it; across the processes that share the index directory, a file lock (flock) around "reload
the file, build what it still lacks, save" does the same. A save never changes the index other threads read:
it pickles a snapshot to a file of a unique name and renames it into place. Where builds are off (web requests)
no lock is taken: a search reads what is saved, and is answered by the newest older version while its own
builds, so no search waits on a build.

Incremental updates. When an older version of the collection is saved, the IndexBuild job derives the new
version's BM25 part from it instead of reading and tokenizing every page (`_updated`): it reads the ids,
document and number of every page and the write stamp (Document.updated_at) of every document, keeps the
pages whose document was not written since, and tokenizes only the others (new and changed pages; a deleted
page's rows are dropped). postings.merge_postings merges them into the old arrays with numpy, giving exactly
the arrays a full build gives, and the idfs and weights are then computed over the whole new postings as a full
build computes them: every score equals a full rebuild's bit for bit (document frequencies, average length
and okapi's first-occurrence order are those of the live collection).

Why one merged set of arrays per version rather than query-time segments (a base, a delta, a deletion mask, as
Lucene): BM25's weights depend on N, on every term's document frequency and on the average length, so one
added page changes every weight of every term. Segments could only stay exact by computing the weights at
query time (a slower kernel on every search, and per-segment statistics merged per query); merging costs one
pass over the postings in the job (seconds at 300,000 pages: docs/benchmarks.md, benchmarks/incremental_bench.py) and
leaves the query path as it was: one set of precomputed weights, summed. The vectors (LSI) are not
incremental: a job that must also build them saves the BM25 part first, so FullText serves the new version
while the vectors are computed.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import hashlib
import json
import logging
import os
import pickle
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import CharField
from django.db.models.functions import Cast

from evalsite.errors import ERROR_CODES, EvalsiteError
from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationJobKind
from evaluation.retrieval import index_store
from evaluation.retrieval.embedding_store import configured_embedder, embedder_identity
from evaluation.retrieval.search.bm25 import NO_COMMON, BM25Index, BM25Params
from evaluation.retrieval.search.engine import VECTORS, Corpus, Embedder, SearchIndex
from evaluation.retrieval.search.postings import (
    MergeRefused,
    Postings,
    load_mapped,
    merge_postings,
    open_first_order,
)
from goldenset.models import Collection, Document, Page
from goldenset.temporal import Validity
from goldenset.text import tokenize
from goldenset.vocabulary.chunks import chunks

logger = logging.getLogger(__name__)

# Bump when the index layout or the indexed text changes: old files are then ignored.
ENGINE_VERSION = 4  # 4: LSI fitted on a sample, every page projected (new vectors)
_MEMORY_SLOTS = 8


@dataclass
class IndexStats:
    """What getting the indexes for one call cost: what was built, what was found cached; which content version
    each collection's index held, and which collections were answered by an older one while theirs builds."""

    built: int = 0
    loaded: int = 0
    cached: int = 0
    parts_built: int = 0
    build_ms: float = 0.0
    updated: int = 0  # versions derived from an older one (only their changed pages tokenized)
    pages_tokenized: int = 0  # by those updates
    versions: dict[str, int] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "built": self.built,
            "loaded": self.loaded,
            "cached": self.cached,
            "parts_built": self.parts_built,
            "build_ms": round(self.build_ms, 1),
        }


_memory: OrderedDict[tuple, SearchIndex] = OrderedDict()
_lock = threading.Lock()


def _key(collection: Collection) -> tuple:
    # The embedder is part of the key: its vectors live in the index, so changing EVALSITE_EMBEDDER (or the
    # endpoint's model) must not serve the old vectors.
    embedder = hashlib.sha256(embedder_identity().encode()).hexdigest()[:12]
    return (str(collection.uid), collection.content_version, ENGINE_VERSION, embedder)


def _path(key: tuple) -> Path:
    """The index's description (a pickle without the big arrays), in the folder that holds its arrays."""
    return Path(settings.EVALSITE_INDEX_DIR) / f"{key[0]}-v{key[1]}-e{key[2]}-{key[3]}" / "index.pickle"


def page_text(title: str, number: int, text: str) -> str:
    """What is indexed for a page: the document's title with its first page, then the page's text."""
    return f"{title}\n{text}" if number == 1 and title else text


@dataclass
class ContentStamps:
    """What content an index version was built from: per page row its page id, document pk and number, and per
    document its last write (Document.updated_at, in microseconds). The next version's build compares its own
    with these to find the pages it must tokenize (an update, `_updated`). Saved as content.npz beside the
    index; search never reads it."""

    page_ids: np.ndarray  # int64 per page row
    page_documents: np.ndarray  # int64 document pk per page row
    page_numbers: np.ndarray  # int64 per page row
    document_pks: np.ndarray  # int64, ascending: the documents with pages
    document_updated: np.ndarray  # str: each one's updated_at as the database writes it as text

    def save(self, path: Path) -> None:
        if path.exists():
            return
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".content.", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, **{k: getattr(self, k) for k in self.__dataclass_fields__})
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    @classmethod
    def load(cls, path: Path) -> ContentStamps:
        with np.load(path, allow_pickle=False) as data:
            return cls(**{k: data[k] for k in cls.__dataclass_fields__})


def load_corpus(collection: Collection) -> Corpus:
    """The collection's pages ordered by document pk, then page number, with their indexed texts, and the
    content stamps of what was read, in one read transaction."""
    with transaction.atomic():
        documents = list(
            Document.objects.filter(collection=collection, pages__isnull=False)
            .distinct()
            .order_by("pk")
            .values_list("pk", "external_id", "valid_from", "valid_until", "supersedes")
        )
        all_pks, written = _document_writes(collection)
        row_of = {pk: row for row, (pk, *_rest) in enumerate(documents)}
        titles = dict(Document.objects.filter(collection=collection).values_list("pk", "title"))
        page_texts_: list[str] = []
        page_document: list[int] = []
        page_ids: list[int] = []
        page_docs: list[int] = []
        numbers: list[int] = []
        pages = Page.objects.filter(document__collection=collection).order_by("document_id", "number")
        rows = pages.values_list("pk", "document_id", "number", "text").iterator(chunk_size=5000)
        for page_id, document_id, number, text in rows:
            page_texts_.append(page_text(titles[document_id], number, text))
            page_document.append(row_of[document_id])
            page_ids.append(page_id)
            page_docs.append(document_id)
            numbers.append(number)
        pageless = list(
            Document.objects.filter(collection=collection, pages__isnull=True)
            .exclude(supersedes=[])
            .values_list("external_id", "valid_from", "valid_until", "supersedes")
        )
    validity = [
        Validity(external_id, valid_from, valid_until, tuple(supersedes or ()))
        for _pk, external_id, valid_from, valid_until, supersedes in documents
    ]
    successors = [Validity(i, start, end, tuple(names or ())) for i, start, end, names in pageless]
    corpus = Corpus(
        texts=page_texts_,
        page_document=np.asarray(page_document, dtype=np.int64),
        document_ids=[row[1] for row in documents],
        validity=validity,
        page_ids=page_ids,
        successors=successors,
    )
    corpus.stamps = ContentStamps(
        page_ids=np.asarray(page_ids, dtype=np.int64),
        page_documents=np.asarray(page_docs, dtype=np.int64),
        page_numbers=np.asarray(numbers, dtype=np.int64),
        document_pks=np.asarray([row[0] for row in documents], dtype=np.int64),
        document_updated=written[np.searchsorted(all_pks, [row[0] for row in documents])]
        if documents
        else np.zeros(0, dtype=str),
    )
    return corpus


def _raw_rows(queryset) -> list[tuple]:
    """The rows of a values_list queryset straight from the database cursor (no per-row conversion: for ints
    and text alike it is what the ORM would give, an order of magnitude faster on 300,000 rows)."""
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _document_writes(collection: Collection) -> tuple[np.ndarray, np.ndarray]:
    """(pks ascending, updated_at as text) of the collection's documents: text, so that no datetime is parsed."""
    rows = _raw_rows(
        Document.objects.filter(collection=collection)
        .order_by("pk")
        .annotate(written=Cast("updated_at", CharField()))
        .values_list("pk", "written")
    )
    pks = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return pks, np.array([r[1] for r in rows], dtype=str) if rows else np.zeros(0, dtype=str)


def _corpus_update(collection: Collection, base: _Base) -> Corpus:
    """The new version's corpus without texts, and its content stamps, reading only ids, numbers and write
    stamps of every page and document: a document written since the base version (or new) is read whole, the
    others are the base corpus's (id and validity)."""
    rows = _raw_rows(
        Page.objects.filter(document__collection=collection)
        .order_by("document_id", "number")
        .values_list("pk", "document_id", "number")
    )
    pages = np.array(rows, dtype=np.int64).reshape(len(rows), 3)
    del rows
    all_pks, written = _document_writes(collection)
    document_pks = np.unique(pages[:, 1])  # the documents with pages, ascending
    document_updated = written[np.searchsorted(all_pks, document_pks)]
    old = base.stamps
    at = np.minimum(np.searchsorted(old.document_pks, document_pks), max(len(old.document_pks) - 1, 0))
    same = (
        (old.document_pks[at] == document_pks) & (old.document_updated[at] == document_updated)
        if len(old.document_pks)
        else np.zeros(len(document_pks), dtype=bool)
    )
    read = {
        pk: (external_id, Validity(external_id, start, end, tuple(names or ())))
        for pk, external_id, start, end, names in Document.objects.filter(
            pk__in=document_pks[~same].tolist()
        ).values_list("pk", "external_id", "valid_from", "valid_until", "supersedes")
    }
    base_ids, base_validity = base.corpus.document_ids, base.corpus.validity
    document_ids: list[str] = []
    validity: list[Validity] = []
    for pk, kept, old_row in zip(document_pks.tolist(), same.tolist(), at.tolist(), strict=True):
        if kept:
            document_ids.append(base_ids[old_row])
            # a collection without time data keeps no validity (Corpus): its documents' is the default
            validity.append(base_validity[old_row] if base_validity else Validity(base_ids[old_row]))
        else:
            external_id, valid = read[pk]
            document_ids.append(external_id)
            validity.append(valid)
    pageless = (
        Document.objects.filter(collection=collection, pages__isnull=True)
        .exclude(supersedes=[])
        .values_list("external_id", "valid_from", "valid_until", "supersedes")
    )
    corpus = Corpus(
        texts=None,
        page_document=np.searchsorted(document_pks, pages[:, 1]).astype(np.int64),
        document_ids=document_ids,
        validity=validity,
        page_ids=pages[:, 0].tolist(),
        successors=[Validity(i, start, end, tuple(names or ())) for i, start, end, names in pageless],
    )
    corpus.stamps = ContentStamps(
        page_ids=pages[:, 0].copy(),
        page_documents=pages[:, 1].copy(),
        page_numbers=pages[:, 2].copy(),
        document_pks=document_pks,
        document_updated=document_updated,
    )
    return corpus


def page_texts(page_ids: Sequence[int]) -> list[str]:
    """The indexed text of these pages, in their order ("" for a page deleted since the index was built)."""
    page_ids = [int(page_id) for page_id in page_ids]  # numpy integers are no SQL parameters
    found: dict[int, str] = {}
    for chunk in chunks(page_ids, 2000):
        rows = Page.objects.filter(pk__in=chunk).values_list("pk", "number", "text", "document__title")
        for pk, number, text, title in rows:
            found[pk] = page_text(title, number, text)
    return [found.get(page_id, "") for page_id in page_ids]


def _attach_text_source(corpus: Corpus) -> None:
    """The corpus reads the texts it needs (a reranker's candidates) from the database, and holds none."""
    page_ids = corpus.page_ids
    corpus.text_source = lambda rows: page_texts([int(page_ids[r]) for r in rows])
    corpus.texts = None


def embedder_factory(corpus: Corpus | None = None) -> Embedder:
    """The embedder EVALSITE_EMBEDDER names (LSI, the offline default, or a model-backed one).

    Given the corpus, a model-backed embedder reads and stores each page's vector in PageEmbedding (computed
    once per page); without it, it embeds every page of each build."""
    return configured_embedder(corpus)


def get_index(
    collection: Collection,
    stats: IndexStats | None = None,
    parts: Iterable[str] = (),
    *,
    build: bool | None = None,
    keep: bool = True,
) -> SearchIndex:
    """The collection's index for its current content version, with `parts` built: from memory, from the index
    directory, or built now (once, however many threads and processes ask at the same time).

    Where builds are not allowed (`build=False`, or inside `builds_off()`: every web request), an index that is
    not ready is never built here: a build job is queued (one per collection and version), the newest older
    version that has the parts answers meanwhile (the stats name the collection as stale), and a collection
    with none raises EvalsiteError index-building (503, Retry-After)."""
    stats = stats if stats is not None else IndexStats()
    wanted = frozenset(parts)
    build = _builds_allowed.get() if build is None else build
    index = _lookup(collection, wanted, stats, build, keep)
    if index is None:
        index = _meanwhile(collection, wanted, stats)
    stats.versions[collection.slug] = index.content_version or 0
    return index


def warm(collection: Collection) -> SearchIndex | None:
    """The collection's current index with every part saved for it (here, or published by another machine),
    loaded into this process's memory; None when it has none yet. Never builds or queues a build."""
    key = _key(collection)
    parts = saved_parts(collection)
    if index_store.enabled():
        parts |= index_store.published_parts(_path(key).parent.name)
    return _lookup(collection, frozenset(parts), IndexStats(), build=False)


def _lookup(
    collection: Collection, wanted: frozenset[str], stats: IndexStats, build: bool, keep: bool = True
) -> SearchIndex | None:
    """The current version's index with the wanted parts, from memory or disk, built if `build`; else None.
    `keep=False` (the build job's): an index built here is saved, not read back and kept in memory (the
    processes that search load it when they need it)."""
    key = _key(collection)
    with _lock:
        index = _memory.get(key)
        if index is not None:
            _memory.move_to_end(key)
    if index is not None and all(index.has_part(p) for p in wanted):
        stats.cached += 1
        return index
    if not build:
        return _peek(key, index, wanted, stats)
    with _key_lock(key):
        index = _memory.get(key)  # another thread may have finished it while this one waited
        if index is not None and all(index.has_part(p) for p in wanted):
            stats.cached += 1
            return index
        path = _path(key)
        with _file_lock(path):
            index = _newer(key, path, index, stats)
            if not _has(index, wanted) and _fetch_published(path, index):
                index = _newer(key, path, index, stats)  # another machine built it: copied, not built again
            if index is not None and all(index.has_part(p) for p in wanted):
                _remember(key, index)
                return index
            dirty = False
            if index is None:
                started = time.perf_counter()
                index = _updated(collection, wanted, stats)
                if index is None:
                    index = SearchIndex(load_corpus(collection), embedder_factory=embedder_factory)
                index.content_version = collection.content_version
                stats.built += 1
                stats.build_ms += (time.perf_counter() - started) * 1000
                dirty = True
            missing = [p for p in sorted(wanted) if not index.has_part(p)]
            for part in missing:  # BM25's first ("bm25:..." < "vectors")
                if part == VECTORS and dirty:
                    # FullText is served from now on (by every process) while the vectors are built.
                    index.saved_stamp = _write(collection, path, index)
                started = time.perf_counter()
                index.build_part(part)
                stats.parts_built += 1
                stats.build_ms += (time.perf_counter() - started) * 1000
                dirty = True
            if dirty:
                index.saved_stamp = _write(collection, path, index)
                if not keep:
                    return index
                # Search the saved copy: its arrays are mapped (shared with the other processes), the ones
                # built here are freed, and so are the page texts.
                index = _read(path) or index
        _remember(key, index)
    return index


def _peek(
    key: tuple, index: SearchIndex | None, wanted: frozenset[str], stats: IndexStats
) -> SearchIndex | None:
    """Where builds are off: the saved file of this version if it is newer than what memory holds, read without
    waiting on any lock (a build holds them for as long as it runs; its saves are atomic renames). None unless
    it has the wanted parts."""
    path = _path(key)
    index = _newer(key, path, index, stats)
    if index_store.enabled() and not _has(index, wanted):
        with _fetch_lock(path):  # one fetch per machine; the others wait for it and read what it wrote
            index = _newer(key, path, index, stats)
            if not _has(index, wanted) and _fetch_published(path, index):
                index = _newer(key, path, index, stats)
    if index is None:
        return None
    _remember(key, index)  # what was loaded serves the parts it has
    if all(index.has_part(p) for p in wanted):
        return index
    return None


# --- updates: a new version from the previous one and the pages that changed ---------------------------------

# An update re-tokenizes the changed pages only; past this share of the collection a full build is as fast.
UPDATE_MAX_SHARE = 0.5


@dataclass
class _Base:
    """The newest older saved version an update can start from."""

    version: int
    postings: Postings
    first_order: np.ndarray
    stamps: ContentStamps
    corpus: Corpus  # its document ids and validity, per document row


def _update_base(collection: Collection) -> _Base | None:
    current = collection.content_version
    if index_store.enabled() and not any(v < current for v, _folder in _saved_versions(collection)):
        _fetch_older(collection, frozenset({DEFAULT_PART}))  # built elsewhere: updated here all the same
    for version, folder in _saved_versions(collection):
        if version >= current:
            continue
        try:
            postings = Postings.open(folder / "postings")
            first_order = open_first_order(folder / "postings")
            stamps = ContentStamps.load(folder / "content.npz")
            with (folder / "index.pickle").open("rb") as handle:
                corpus = pickle.load(handle)["corpus"]
        except (OSError, ValueError, KeyError, pickle.UnpicklingError, EOFError) as exc:
            logger.info("index %s cannot be updated (%s): a full build", folder, exc)
            return None
        if first_order is None or not len(stamps.page_ids) == postings.size == corpus.size:
            return None
        return _Base(version, postings, first_order, stamps, corpus)
    return None


def _updated(collection: Collection, wanted: frozenset[str], stats: IndexStats) -> SearchIndex | None:
    """The new version's index with its BM25 parts, derived from the newest older saved version: its postings
    with the removed and changed pages' rows dropped and the new and changed pages (the only ones read and
    tokenized) merged in (postings.merge_postings); idfs and weights are then computed over the whole new
    postings as a full build computes them, so every score equals a full build's bit for bit. None when no
    older version can be updated (none saved, saved by an older engine, or too much changed)."""
    variants = [p.removeprefix("bm25:") for p in sorted(wanted) if p.startswith("bm25:")]
    if not variants:
        return None
    base = _update_base(collection)
    if base is None:
        return None
    with transaction.atomic():  # the metadata and the changed pages' texts from one snapshot
        corpus = _corpus_update(collection, base)
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
    _attach_text_source(corpus)
    index = SearchIndex(corpus, embedder_factory=embedder_factory)
    index.postings = postings
    index.bm25_indexes = {v: BM25Index(postings, BM25Params(v)) for v in variants}
    stats.updated += 1
    stats.pages_tokenized += len(added_rows)
    return index


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


def _remember(key: tuple, index: SearchIndex) -> None:
    with _lock:
        _memory[key] = index
        _memory.move_to_end(key)
        # An older version of the collection goes once this one has every part it had: until then it still
        # answers the searches that read the parts this one lacks (Hybrid's vectors while they build).
        for other in [k for k in _memory if k[0] == key[0] and k[1] < key[1]]:
            if all(index.has_part(p) for p in PARTS if _memory[other].has_part(p)):
                _forget(other)
        while len(_memory) > _MEMORY_SLOTS:
            _forget(next(iter(_memory)))


def _forget(key: tuple) -> None:
    _memory.pop(key, None)
    _key_locks.pop(key, None)


# --- builds off the request path ------------------------------------------------------------------------------

_builds_allowed: ContextVar[bool] = ContextVar("evalsite_index_builds_allowed", default=True)


@contextlib.contextmanager
def builds_off() -> Iterator[None]:
    """Within: get_index never builds (the web requests' setting: evalsite.middleware)."""
    token = _builds_allowed.set(False)
    try:
        yield
    finally:
        _builds_allowed.reset(token)


RETRY_AFTER_SECONDS = 5


def _meanwhile(collection: Collection, wanted: frozenset[str], stats: IndexStats) -> SearchIndex:
    """An index that is not ready where builds are off: queue its build, then serve what exists."""
    job_id = None
    try:
        job_id = build_schedule(collection, wanted)
    except EvalsiteError as exc:  # the broker is down: an older version may still answer
        logger.warning("could not queue the index build of %s: %s", collection.uid, exc.message)
    # A worker may already have finished it (or ran it inline, django-q's sync mode).
    index = _lookup(collection, wanted, stats, build=False)
    if index is not None:
        return index
    older = _newest_older(collection, wanted, stats)
    if older is not None:
        stats.stale.append(collection.slug)
        return older
    # The build may have saved the new version (and removed the older ones) while they were looked for.
    index = _lookup(collection, wanted, stats, build=False)
    if index is not None:
        return index
    failed = (
        Job.objects.filter(pk=job_id, status=JobStatus.FAILED).values_list("error", flat=True).first()
        if job_id
        else None
    )
    if failed and failed.get("code") in ERROR_CODES:  # it ran inline and failed: say why, not "building"
        raise EvalsiteError(
            failed["code"],
            failed.get("message", ""),
            details={**failed.get("details", {}), "job_id": str(job_id)},
            status=ERROR_CODES[failed["code"]][0],
        )
    raise EvalsiteError(
        "index-building",
        f"The search index of collection {collection.slug!r} (content version {collection.content_version}) "
        "is being built; retry shortly.",
        details={
            "collection_id": collection.slug,
            "content_version": collection.content_version,
            "parts": sorted(wanted),
            "job_id": str(job_id) if job_id else None,
        },
        status=503,
        retry_after=RETRY_AFTER_SECONDS,
    )


def _newest_older(collection: Collection, wanted: frozenset[str], stats: IndexStats) -> SearchIndex | None:
    """The newest saved version older than the current one that has the wanted parts (one another machine
    published is copied here when this machine has none)."""
    found = _newest_older_saved(collection, wanted, stats)
    if found is None and _fetch_older(collection, wanted):
        found = _newest_older_saved(collection, wanted, stats)
    return found


def _newest_older_saved(
    collection: Collection, wanted: frozenset[str], stats: IndexStats
) -> SearchIndex | None:
    current = _key(collection)
    for version, folder in _saved_versions(collection):
        if version >= current[1]:
            continue
        key = (current[0], version, *current[2:])
        with _lock:
            index = _memory.get(key)
        if index is None:
            index = _read(folder / "index.pickle")
            if index is None:
                continue
            stats.loaded += 1
            with _lock:
                _memory[key] = index
        if all(index.has_part(p) for p in wanted):
            return index
    return None


# --- the published copies (evaluation.retrieval.index_store): every machine serves what any machine built -------------


def _newer(key: tuple, path: Path, index: SearchIndex | None, stats: IndexStats) -> SearchIndex | None:
    """The index saved at `path` when its file is another than the one `index` was read from, else `index`.
    The stamp is the index's own (`saved_stamp`, set where it was read or written), never the process's last
    read: a thread that read an older file and keeps it after another thread read the new one would
    otherwise make the new file look read already, and the process would serve the older index for good."""
    stamp = _stamp(path)
    if stamp is not None and (index is None or stamp != getattr(index, "saved_stamp", None)):
        loaded = _read(path)
        if loaded is not None:
            index, stats.loaded = loaded, stats.loaded + 1
    return index


def _has(index: SearchIndex | None, wanted: frozenset[str]) -> bool:
    return index is not None and all(index.has_part(p) for p in wanted)


def _fetch_published(path: Path, index: SearchIndex | None) -> bool:
    """Copy the published files of this version into its folder when they hold parts the index read from it
    lacks (the caller holds a lock on the folder); True when it did. Decided on the index as read, not on the
    folder's parts list: a list written ahead of its description must not stop a copy for good."""
    if not index_store.enabled():
        return False
    manifest = index_store.published(path.parent.name)
    have = frozenset(p for p in PARTS if index is not None and index.has_part(p))
    if manifest is None or frozenset(manifest.parts) <= have:
        return False
    return index_store.fetch(manifest, path.parent)


def _fetch_older(collection: Collection, wanted: frozenset[str]) -> bool:
    """The newest older published version with the wanted parts, copied here; True when one was."""
    if not index_store.enabled():
        return False
    key = _key(collection)
    for manifest in index_store.older_published(_path(key).parent.name, key[1]):
        if wanted <= frozenset(manifest.parts):
            folder = Path(settings.EVALSITE_INDEX_DIR) / manifest.key
            with _fetch_lock(folder / "index.pickle"):
                return index_store.fetch(manifest, folder)
    return False


def _saved_versions(collection: Collection) -> list[tuple[int, Path]]:
    """(content version, folder) of the collection's saved indexes under this engine and embedder, newest first."""
    key = _key(collection)
    found = []
    for folder in Path(settings.EVALSITE_INDEX_DIR).glob(f"{key[0]}-v*-e{key[2]}-{key[3]}"):
        version = folder.name.removeprefix(f"{key[0]}-v").split("-", 1)[0]
        if version.isdigit() and (folder / "index.pickle").is_file():
            found.append((int(version), folder))
    return sorted(found, reverse=True)


def _saved_parts_of(folder: Path) -> frozenset[str]:
    try:
        return frozenset(json.loads((folder / "parts.json").read_text()))
    except (OSError, ValueError):
        return frozenset()


def saved_parts(collection: Collection) -> frozenset[str]:
    """The parts of the collection's saved indexes (what its next version should have too)."""
    return frozenset().union(*(_saved_parts_of(folder) for _version, folder in _saved_versions(collection)))


def build_schedule(collection: Collection, parts: Iterable[str] = ()) -> str | None:
    """Queue an IndexBuild job for the collection's current version, unless one is queued or running; returns
    its id. The parts: those asked, those its newest saved index had, and FullText's always."""
    from evalsite.jobs.services import job_create  # late: jobs import the models of every app

    wanted = sorted({DEFAULT_PART, *parts, *saved_parts(collection)})
    if index_store.enabled() and set(wanted) <= index_store.published_parts(
        _path(_key(collection)).parent.name
    ):
        return None  # built and published: this machine fetches it (get_index), no build is queued
    active = Job.objects.filter(
        collection=collection,
        kind=EvaluationJobKind.INDEX_BUILD,
        status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
        input__content_version=collection.content_version,
    ).first()
    if active is not None and set(wanted) <= set(active.input.get("parts", [])):
        return str(active.pk)
    job = job_create(
        tenant=collection.tenant,
        kind=EvaluationJobKind.INDEX_BUILD,
        input={"content_version": collection.content_version, "parts": wanted},
        collection=collection,
        now=True,
    )
    return str(job.pk)


def index_build_job(job: Job, progress) -> dict:
    """The IndexBuild job: the collection's current index with the parts asked, built and saved once."""
    collection = job.collection
    if collection is None:
        raise EvalsiteError("not-found", "The collection of this index build was deleted.", status=404)
    stats = IndexStats()
    parts = job.input.get("parts", [DEFAULT_PART])
    progress(0, 1)
    index = get_index(collection, stats, parts, build=True, keep=False)
    progress(1, 1)
    return {
        "content_version": index.content_version,
        "parts": sorted(p for p in parts if index.has_part(p)),
        **stats.as_dict(),
        "updated": stats.updated,
        "pages_tokenized": stats.pages_tokenized,
    }


DEFAULT_PART = "bm25:lucene"
PARTS = ("bm25:lucene", "bm25:okapi", VECTORS)  # every part an index can have


def _read(path: Path) -> SearchIndex | None:
    """The index described by `path`, its arrays opened with mmap (shared by every process through the page
    cache; the folder of an older version may be removed while a process still reads it: its files live on
    until the last mapping closes)."""
    folder = path.parent
    try:
        with path.open("rb") as handle:
            stamp = _fd_stamp(handle.fileno())  # the file read, whatever is renamed over its name meanwhile
            state = pickle.load(handle)
        index = SearchIndex.__new__(SearchIndex)
        index.__setstate__(state)
        index.saved_stamp = stamp
        postings = Postings.open(folder / "postings") if index.postings == _SAVED else None
        index.postings = postings
        variants, index.bm25_indexes = list(index.bm25_indexes), {}
        for variant in variants:
            if postings is None:
                raise ValueError("BM25 weights saved without their postings")
            index.bm25_indexes[variant] = BM25Index(
                postings,
                BM25Params(variant),
                idf=load_mapped(folder / f"bm25-{variant}-idf.npy"),
                weights=load_mapped(folder / f"bm25-{variant}-weights.npy"),
                common=_common_rows(folder, variant),
            )
        if index.page_vectors is not None:
            index.page_vectors = load_mapped(folder / "vectors.npy")
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError) as exc:
        logger.warning("index %s unreadable (%s); rebuilding", folder, exc)
        return None
    index.embedder_factory = embedder_factory  # before any other thread sees it
    _attach_text_source(index.corpus)
    return index


_SAVED = "saved"  # in the pickle, in place of an array saved as a file of its own


def _common_rows(folder: Path, variant: str) -> tuple[np.ndarray, np.ndarray]:
    """The variant's common-term rows as saved (mapped); none for a version saved before they were (its
    searches add those terms' postings one by one: the same scores, more slowly), rather than rows computed
    into this process's private memory."""
    terms, rows = folder / f"bm25-{variant}-common-terms.npy", folder / f"bm25-{variant}-common-rows.npy"
    if not (terms.is_file() and rows.is_file()):
        return NO_COMMON
    return load_mapped(terms), load_mapped(rows)


def _write(collection: Collection, path: Path, index: SearchIndex) -> tuple[int, int, int]:
    """Save the index where other processes find it: each array a .npy file (written once: a version's arrays
    never change), then the description, pickled to a file of a unique name renamed over the old one (so a
    reader sees the old description or the new one, each naming only files already in place). Folders of
    older content versions of the collection are removed."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    with index._locks.state:  # a snapshot of the parts: never changed in place, only replaced
        postings, variants, vectors = index.postings, dict(index.bm25_indexes), index.page_vectors
    if postings is not None and not (folder / "postings").is_dir():
        staging = Path(tempfile.mkdtemp(dir=folder, prefix=".postings."))
        postings.save(staging)
        os.rename(staging, folder / "postings")
    for variant, bm25 in variants.items():
        _save_array(folder / f"bm25-{variant}-idf.npy", bm25.idf)
        _save_array(folder / f"bm25-{variant}-weights.npy", bm25.weights)
        _save_array(folder / f"bm25-{variant}-common-terms.npy", bm25.common_terms)
        _save_array(folder / f"bm25-{variant}-common-rows.npy", bm25.common_rows)
    if vectors is not None:
        _save_array(folder / "vectors.npy", vectors)
    if index.corpus.stamps is not None and postings is not None:
        index.corpus.stamps.save(folder / "content.npz")  # what the next version's update compares
    parts = [part for part in sorted({*(f"bm25:{v}" for v in variants), "vectors"}) if index.has_part(part)]
    (folder / "parts.json").write_text(json.dumps(parts))
    state = index.__getstate__()
    state.pop("saved_stamp", None)
    state["postings"] = _SAVED if postings is not None else None
    state["bm25_indexes"] = dict.fromkeys(variants, _SAVED)
    state["page_vectors"] = _SAVED if vectors is not None else None
    state["corpus"] = _without_texts(state["corpus"])
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".index.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
            handle.flush()
            stamp = _fd_stamp(handle.fileno())
        os.replace(temporary, path)  # atomic: readers see the old file or the new one, never half of one
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    for version, stale in _saved_versions(collection):
        # An older version goes once this one has every part it had (until then it answers the searches that
        # read the parts this one lacks). Processes that mapped its files keep reading them: the kernel frees
        # them when the last one closes.
        if version < (index.content_version or 0) and _saved_parts_of(stale) <= set(parts):
            shutil.rmtree(stale, ignore_errors=True)
    if index_store.enabled():
        index_store.publish(collection, folder, index.content_version or 0, parts)
    return stamp


def _without_texts(corpus: Corpus) -> Corpus:
    light = copy.copy(corpus)
    light.texts = None
    light.text_source = None
    light.stamps = None
    return light


def _save_array(path: Path, array: np.ndarray) -> None:
    if path.exists():
        return
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".npy")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


_key_locks: dict[tuple, threading.Lock] = {}


def _key_lock(key: tuple) -> threading.Lock:
    with _lock:
        return _key_locks.setdefault(key, threading.Lock())


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock shared by every process that uses this index directory (flock on a lock file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def _fetch_lock(path: Path) -> Iterator[None]:
    """The lock a machine's processes take to fetch a published version: not the build's lock, which a build
    holds for as long as it runs, while a request only ever waits for a copy."""
    with _file_lock(path.with_name("fetch")):
        yield


def _fd_stamp(fd: int) -> tuple[int, int, int]:
    info = os.fstat(fd)
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """Which version of the file is there (inode, size, mtime): a save renames a new file into place."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def clear_memory() -> None:
    with _lock:
        _memory.clear()
        _key_locks.clear()
