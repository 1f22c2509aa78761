"""Search indexes per collection and content version: built once, kept in memory and on disk.

The key is (collection uid, content_version, ENGINE_VERSION, embedder): any change to a collection's documents bumps its
content version, so a stale index is never used; a process that lacks an index loads it from the data
directory or builds it from the database (nothing depends on another process's memory). Built parts
(BM25 per variant, vectors per embedder) are added to the cached index as they are first used.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings

from evaluation.embedding_store import configured_embedder, embedder_identity
from evaluation.search.engine import Corpus, Embedder, SearchIndex
from evaluation.search.temporal import Validity
from goldenset.models import Collection, Document, Page

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
    build_ms: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {
            "built": self.built,
            "loaded": self.loaded,
            "cached": self.cached,
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


def get_index(collection: Collection, stats: IndexStats | None = None) -> SearchIndex:
    """The collection's index for its current content version: from memory, from disk, or built now."""
    stats = stats if stats is not None else IndexStats()
    key = _key(collection)
    with _lock:
        index = _memory.get(key)
        if index is not None:
            _memory.move_to_end(key)
            stats.cached += 1
            return index
    path = _path(key)
    index = None
    if path.exists():
        try:
            with path.open("rb") as handle:
                index = pickle.load(handle)
            stats.loaded += 1
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError) as exc:
            logger.warning("index file %s unreadable (%s); rebuilding", path, exc)
            index = None
    if index is None:
        started = time.perf_counter()
        index = SearchIndex(load_corpus(collection))
        stats.built += 1
        stats.build_ms += (time.perf_counter() - started) * 1000
    index.embedder_factory = embedder_factory
    with _lock:
        _memory[key] = index
        _memory.move_to_end(key)
        while len(_memory) > _MEMORY_SLOTS:
            _memory.popitem(last=False)
    return index


def save_index(collection: Collection, index: SearchIndex) -> None:
    """Write the index (with whatever parts it has built) where other processes find it."""
    path = _path(_key(collection))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    factory, index.embedder_factory = index.embedder_factory, None
    try:
        with temporary.open("wb") as handle:
            pickle.dump(index, handle, protocol=pickle.HIGHEST_PROTOCOL)
        temporary.replace(path)  # atomic: readers see the old file or the new one, never half of one
    finally:
        index.embedder_factory = factory
    for stale in path.parent.glob(
        f"{collection.uid}-v*.pickle"
    ):  # older content versions are never read again
        if stale != path:
            stale.unlink(missing_ok=True)


def clear_memory() -> None:
    with _lock:
        _memory.clear()
