"""Search indexes per collection and content version: built once, kept in memory and on disk.

The key is (collection uid, content_version, ENGINE_VERSION, embedder): any change to a collection's documents bumps its
content version, so a stale index is never used; a process that lacks an index loads it from the index
directory or builds it from the database (nothing depends on another process's memory). Parts (BM25 per
variant, the page vectors) are built when a search first needs them.

Concurrent first searches build each part once: within a process one thread per index key builds while the
others wait for it; across the processes that share the index directory, a file lock (flock) around "reload
the file, build what it still lacks, save" does the same. A save never changes the index other threads read:
it writes a snapshot to a file of a unique name and renames it into place. Where builds are off (web requests)
no lock is taken: a search reads what is saved, and is answered by the newest older version while its own
builds, so no search waits on a build.

Incremental updates (a new version derived from the previous one) are evaluation.retrieval.index_updates'.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from evalsite.errors import ERROR_CODES, EvalsiteError
from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationJobKind
from evaluation.retrieval import index_store
from evaluation.retrieval.corpus import (
    attach_text_source,
)
from evaluation.retrieval.embedding_store import configured_embedder
from evaluation.retrieval.index_files import (
    DEFAULT_PART,
    DESCRIPTION,
    PARTS,
    directory_id,
    directory_named_at,
    fetch_lock,
    fetch_older,
    fetch_published,
    file_lock,
    file_stamp,
    index_key,
    index_path,
    read_index,
    saved_parts,
    saved_versions,
    write_index,
)
from evaluation.retrieval.index_updates import full_build, updated_index
from evaluation.retrieval.search.corpus import Corpus
from evaluation.retrieval.search.engine import VECTORS, Embedder, SearchIndex
from goldenset.models import Collection

logger = logging.getLogger(__name__)

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
    key = index_key(collection)
    parts = saved_parts(collection)
    if index_store.enabled():
        parts |= index_store.published_parts(index_path(key).parent.name)
    return _lookup(collection, frozenset(parts), IndexStats(), build=False)


def _lookup(
    collection: Collection, wanted: frozenset[str], stats: IndexStats, build: bool, keep: bool = True
) -> SearchIndex | None:
    """The current version's index with the wanted parts, from memory or disk, built if `build`; else None.
    `keep=False` (the build job's): an index built here is saved, not read back and kept in memory (the
    processes that search load it when they need it)."""
    key = index_key(collection)
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
        path = index_path(key)
        with file_lock(path):
            index = _newer(key, path, index, stats)
            if not _has(index, wanted) and fetch_published(path, index):
                index = _newer(key, path, index, stats)  # another machine built it: copied, not built again
            if index is not None and all(index.has_part(p) for p in wanted):
                _remember(key, index)
                return index
            dirty = False
            if index is None:
                started = time.perf_counter()
                update = updated_index(collection, wanted, embedder_factory)
                if update is not None:
                    index, tokenized = update
                    stats.updated += 1
                    stats.pages_tokenized += tokenized
                else:
                    index = full_build(collection, path, embedder_factory, _job_progress.get())
                index.content_version = collection.content_version
                stats.built += 1
                stats.build_ms += (time.perf_counter() - started) * 1000
                dirty = True
            missing = [p for p in sorted(wanted) if not index.has_part(p)]
            for part in missing:  # BM25's first ("bm25:..." < "vectors")
                if part == VECTORS and dirty:
                    # FullText is served from now on (by every process) while the vectors are built.
                    index.saved_stamp = write_index(collection, path, index)
                started = time.perf_counter()
                index.build_part(part)
                stats.parts_built += 1
                stats.build_ms += (time.perf_counter() - started) * 1000
                dirty = True
            if dirty:
                index.saved_stamp = write_index(collection, path, index)
                if not keep:
                    return index
                # Search the saved copy: its arrays are mapped (shared with the other processes), the ones
                # built here are freed, and so are the page texts.
                index = _read(path) or index
        _remember(key, index)
    return index


# The progress callback of the IndexBuild job running in this context (None elsewhere): a full build reports to it.
_job_progress: ContextVar[Any] = ContextVar("index_build_progress", default=None)


def _peek(
    key: tuple, index: SearchIndex | None, wanted: frozenset[str], stats: IndexStats
) -> SearchIndex | None:
    """Where builds are off: the saved file of this version if it is newer than what memory holds, read without
    waiting on any lock (a build holds them for as long as it runs; its saves are atomic renames). None unless
    it has the wanted parts."""
    path = index_path(key)
    index = _newer(key, path, index, stats)
    if index_store.enabled() and not _has(index, wanted):
        with fetch_lock(path):  # one fetch per machine; the others wait for it and read what it wrote
            index = _newer(key, path, index, stats)
            if not _has(index, wanted) and fetch_published(path, index):
                index = _newer(key, path, index, stats)
    if index is None:
        return None
    _remember(key, index)  # what was loaded serves the parts it has
    if all(index.has_part(p) for p in wanted):
        return index
    return None


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
    """An index that is not ready where builds are off: queue its build (unless it was built where this machine
    cannot read it), then serve what exists."""
    job_id = None
    elsewhere = _built_elsewhere(collection, wanted)
    try:
        job_id = build_schedule(collection, wanted) if elsewhere is None else None
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
    if elsewhere is not None:
        raise _not_shared(collection, elsewhere)
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


_said_elsewhere: set[tuple] = set()  # (collection uid, content version) whose log line this process wrote


def _built_elsewhere(collection: Collection, wanted: frozenset[str]) -> str | None:
    """With the local index store: the id of the IndexBuild job that built this version with the wanted parts
    into another index directory than this machine's (the job records which, index_files.directory_id), since
    this one was named, when none built it into this one. Its index is there, never here, and another build
    would go there too: a web-only machine that does not share the worker's directory. None otherwise: a
    build into this directory whose files are gone since, or one that ended before this directory was named
    (emptied since, say), is built again, once."""
    if index_store.enabled():
        return None
    here = directory_id()
    done = Job.objects.filter(
        collection=collection,
        kind=EvaluationJobKind.INDEX_BUILD,
        status=JobStatus.COMPLETED,
        input__content_version=collection.content_version,
        finished_at__gte=datetime.fromtimestamp(directory_named_at(), tz=UTC),
    ).values_list("pk", "result")
    found = None
    for pk, result in done[:50]:
        result = result if isinstance(result, dict) else {}
        if not wanted <= set(result.get("parts") or ()) or not result.get("index_directory"):
            continue
        if result["index_directory"] == here:
            return None
        found = str(pk)
    if found is not None and (collection.uid, collection.content_version) not in _said_elsewhere:
        _said_elsewhere.add((collection.uid, collection.content_version))
        logger.error(
            "the index of collection %s (content version %s) was built by job %s into another index directory "
            "than this machine's EVALSITE_INDEX_DIR (%s), and EVALSITE_INDEX_STORE is local: this machine "
            "cannot read it. Set EVALSITE_INDEX_STORE=database on every machine, or share the worker's "
            "EVALSITE_INDEX_DIR.",
            collection.uid,
            collection.content_version,
            found,
            settings.EVALSITE_INDEX_DIR,
        )
    return found


def _not_shared(collection: Collection, job_id: str) -> EvalsiteError:
    return EvalsiteError(
        "index-not-shared",
        f"The search index of collection {collection.slug!r} (content version {collection.content_version}) "
        "was built by a worker whose index directory this server does not read, and this server's "
        "EVALSITE_INDEX_STORE is local: a server without a worker of its own needs EVALSITE_INDEX_STORE="
        "database (it then fetches what any worker built) or the worker's EVALSITE_INDEX_DIR. Retrying will "
        "not help until the operator changes that.",
        details={
            "collection_id": collection.slug,
            "content_version": collection.content_version,
            "job_id": job_id,
            "setting": "EVALSITE_INDEX_STORE",
        },
        status=503,
    )


def _newest_older(collection: Collection, wanted: frozenset[str], stats: IndexStats) -> SearchIndex | None:
    """The newest saved version older than the current one that has the wanted parts (one another machine
    published is copied here when this machine has none)."""
    found = _newest_older_saved(collection, wanted, stats)
    if found is None and fetch_older(collection, wanted):
        found = _newest_older_saved(collection, wanted, stats)
    return found


def _newest_older_saved(
    collection: Collection, wanted: frozenset[str], stats: IndexStats
) -> SearchIndex | None:
    current = index_key(collection)
    for version, folder in saved_versions(collection):
        if version >= current[1]:
            continue
        key = (current[0], version, *current[2:])
        with _lock:
            index = _memory.get(key)
        if index is None:
            index = _read(folder / DESCRIPTION)
            if index is None:
                continue
            stats.loaded += 1
            with _lock:
                _memory[key] = index
        if all(index.has_part(p) for p in wanted):
            return index
    return None


def _newer(key: tuple, path: Path, index: SearchIndex | None, stats: IndexStats) -> SearchIndex | None:
    """The index saved at `path` when its file is another than the one `index` was read from, else `index`.
    The stamp is the index's own (`saved_stamp`, set where it was read or written), never the process's last
    read: a thread that read an older file and keeps it after another thread read the new one would
    otherwise make the new file look read already, and the process would serve the older index for good."""
    stamp = file_stamp(path)
    if stamp is not None and (index is None or stamp != getattr(index, "saved_stamp", None)):
        loaded = _read(path)
        if loaded is not None:
            index, stats.loaded = loaded, stats.loaded + 1
    return index


def _has(index: SearchIndex | None, wanted: frozenset[str]) -> bool:
    return index is not None and all(index.has_part(p) for p in wanted)


def build_schedule(collection: Collection, parts: Iterable[str] = ()) -> str | None:
    """Queue an IndexBuild job for the collection's current version, unless one is queued or running; returns
    its id. The parts: those asked, those its newest saved index had, and FullText's always."""
    from evalsite.jobs.services import job_create  # late: jobs import the models of every app

    wanted = sorted({DEFAULT_PART, *parts, *saved_parts(collection)})
    if index_store.enabled() and set(wanted) <= index_store.published_parts(
        index_path(index_key(collection)).parent.name
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
    token = _job_progress.set(progress)
    try:
        index = get_index(collection, stats, parts, build=True, keep=False)
    finally:
        _job_progress.reset(token)
    progress(1, 1)
    return {
        "content_version": index.content_version,
        "parts": sorted(p for p in parts if index.has_part(p)),
        **stats.as_dict(),
        "updated": stats.updated,
        "pages_tokenized": stats.pages_tokenized,
        "index_directory": directory_id(),  # where it is saved: see _built_elsewhere
    }


_key_locks: dict[tuple, threading.Lock] = {}


def _key_lock(key: tuple) -> threading.Lock:
    with _lock:
        return _key_locks.setdefault(key, threading.Lock())


def clear_memory() -> None:
    with _lock:
        _memory.clear()
        _key_locks.clear()


def _read(path: Path) -> SearchIndex | None:
    """The index saved at `path` (None when it cannot be read), ready to search in this process."""
    index = read_index(path)
    if index is not None:
        index.embedder_factory = embedder_factory  # before any other thread sees it
        attach_text_source(index.corpus)
    return index
