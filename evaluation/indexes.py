"""Search indexes per collection and content version: built once, kept in memory and on disk.

The key is (collection uid, content_version, ENGINE_VERSION, embedder): any change to a collection's documents bumps its
content version, so a stale index is never used; a process that lacks an index loads it from the index
directory or builds it from the database (nothing depends on another process's memory). Parts (BM25 per
variant, the page vectors) are built when a search first needs them.

Concurrent first searches build each part once: within a process one thread per index key builds while the
others wait for it; across the processes that share the index directory, a file lock (flock) around "reload
the file, build what it still lacks, save" does the same. A save never changes the index other threads read:
it pickles a snapshot to a file of a unique name and renames it into place.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import pickle
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings

from evaluation.embedding_store import configured_embedder, embedder_identity
from evaluation.search.engine import Corpus, Embedder, SearchIndex
from goldenset.models import Collection, Document, Page
from goldenset.temporal import Validity

logger = logging.getLogger(__name__)

# Bump when the index layout or the indexed text changes: old files are then ignored.
ENGINE_VERSION = 2
_MEMORY_SLOTS = 8


@dataclass
class IndexStats:
    """What getting the indexes for one call cost: what was built, what was found cached."""

    built: int = 0
    loaded: int = 0
    cached: int = 0
    parts_built: int = 0
    build_ms: float = 0.0

    def as_dict(self) -> dict[str, float]:
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
    return Path(settings.EVALSITE_INDEX_DIR) / f"{key[0]}-v{key[1]}-e{key[2]}-{key[3]}.pickle"


def page_text(title: str, number: int, text: str) -> str:
    """What is indexed for a page: the document's title with its first page, then the page's text."""
    return f"{title}\n{text}" if number == 1 and title else text


def load_corpus(collection: Collection) -> Corpus:
    documents = list(
        Document.objects.filter(collection=collection, pages__isnull=False)
        .distinct()
        .order_by("pk")
        .values_list("pk", "external_id", "valid_from", "valid_until", "supersedes")
    )
    row_of = {pk: row for row, (pk, *_rest) in enumerate(documents)}
    titles = dict(Document.objects.filter(collection=collection).values_list("pk", "title"))
    texts: list[str] = []
    page_document: list[int] = []
    page_ids: list[int] = []
    pages = Page.objects.filter(document__collection=collection).order_by("document_id", "number")
    rows = pages.values_list("pk", "document_id", "number", "text").iterator(chunk_size=5000)
    for page_id, document_id, number, text in rows:
        texts.append(page_text(titles[document_id], number, text))
        page_document.append(row_of[document_id])
        page_ids.append(page_id)
    validity = [
        Validity(external_id, valid_from, valid_until, tuple(supersedes or ()))
        for _pk, external_id, valid_from, valid_until, supersedes in documents
    ]
    pageless = (
        Document.objects.filter(collection=collection, pages__isnull=True)
        .exclude(supersedes=[])
        .values_list("external_id", "valid_from", "valid_until", "supersedes")
    )
    successors = [Validity(i, start, end, tuple(names or ())) for i, start, end, names in pageless]
    return Corpus(
        texts=texts,
        page_document=np.asarray(page_document, dtype=np.int64),
        document_ids=[row[1] for row in documents],
        validity=validity,
        page_ids=page_ids,
        successors=successors,
    )


def embedder_factory(corpus: Corpus | None = None) -> Embedder:
    """The embedder EVALSITE_EMBEDDER names (LSI, the offline default, or a model-backed one).

    Given the corpus, a model-backed embedder reads and stores each page's vector in PageEmbedding (computed
    once per page); without it, it embeds every page of each build."""
    return configured_embedder(corpus)


def get_index(
    collection: Collection, stats: IndexStats | None = None, parts: Iterable[str] = ()
) -> SearchIndex:
    """The collection's index for its current content version, with `parts` built: from memory, from the index
    directory, or built now (once, however many threads and processes ask at the same time)."""
    stats = stats if stats is not None else IndexStats()
    wanted = frozenset(parts)
    key = _key(collection)
    with _lock:
        index = _memory.get(key)
        if index is not None:
            _memory.move_to_end(key)
    if index is not None and all(index.has_part(p) for p in wanted):
        stats.cached += 1
        return index
    with _key_lock(key):
        index = _memory.get(key)  # another thread may have finished it while this one waited
        if index is not None and all(index.has_part(p) for p in wanted):
            stats.cached += 1
            return index
        path = _path(key)
        with _file_lock(path):
            stamp = _stamp(path)
            dirty = False
            if stamp is not None and (index is None or stamp != _stamps.get(key)):
                loaded = _read(path)
                if loaded is not None:
                    index, stats.loaded = loaded, stats.loaded + 1
                    _stamps[key] = stamp
            if index is None:
                started = time.perf_counter()
                index = SearchIndex(load_corpus(collection), embedder_factory=embedder_factory)
                stats.built += 1
                stats.build_ms += (time.perf_counter() - started) * 1000
                dirty = True
            missing = [p for p in sorted(wanted) if not index.has_part(p)]
            if missing:
                started = time.perf_counter()
                for part in missing:
                    index.build_part(part)
                stats.parts_built += len(missing)
                stats.build_ms += (time.perf_counter() - started) * 1000
                dirty = True
            if dirty:
                _stamps[key] = _write(collection, path, index)
        with _lock:
            _memory[key] = index
            _memory.move_to_end(key)
            while len(_memory) > _MEMORY_SLOTS:
                evicted, _index = _memory.popitem(last=False)
                _key_locks.pop(evicted, None)
                _stamps.pop(evicted, None)
    return index


def _read(path: Path) -> SearchIndex | None:
    try:
        with path.open("rb") as handle:
            index = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError) as exc:
        logger.warning("index file %s unreadable (%s); rebuilding", path, exc)
        return None
    index.embedder_factory = embedder_factory  # before any other thread sees it
    return index


def _write(collection: Collection, path: Path, index: SearchIndex) -> tuple[int, int, int]:
    """Save the index where other processes find it: a snapshot (the index is never changed for it) pickled to a
    file of a unique name, renamed over the old one; older content versions of the collection are removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(index, handle, protocol=pickle.HIGHEST_PROTOCOL)
            handle.flush()
            stamp = _fd_stamp(handle.fileno())
        os.replace(temporary, path)  # atomic: readers see the old file or the new one, never half of one
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    # Older content versions are never read again.
    for stale in path.parent.glob(f"{collection.uid}-v*.pickle"):
        if stale != path:
            stale.unlink(missing_ok=True)
            Path(f"{stale}.lock").unlink(missing_ok=True)
    return stamp


_key_locks: dict[tuple, threading.Lock] = {}
# Which version of its file (_stamp) each index in memory was read from or written as.
_stamps: dict[tuple, tuple[int, int, int]] = {}


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
        _stamps.clear()
