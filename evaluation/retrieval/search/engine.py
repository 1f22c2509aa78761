"""The search engine over one collection's pages: FullText (BM25), Vector, Hybrid, rerank, temporal filters.

Search ranks pages; evaluation ranks documents, a document taking the score of its best page. Rankings are
ordered as trec_eval orders a run (score descending, then document id descending as strings), so the ranks
reported here are the ranks trec_eval sees. Plain Python and numpy: no Django import.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from evaluation.retrieval.search import fusion
from evaluation.retrieval.search.bm25 import BM25Index, BM25Params
from evaluation.retrieval.search.build import build_postings
from evaluation.retrieval.search.corpus import Corpus
from evaluation.retrieval.search.postings import Postings
from evaluation.retrieval.search.vectors import vector_scores, vector_top_rows
from goldenset.temporal import TimeTable
from goldenset.text import tokenize

SEARCH_TYPES = ("FullText", "Vector", "Hybrid")
FUSIONS = ("Rrf", "Weighted")
# First-stage candidates per retriever for fusion and rerank: at least this many, or the depth asked.
CANDIDATES = 100
# The parts an index builds on first use: BM25 per variant ("bm25:lucene", "bm25:okapi") and the page vectors.
VECTORS = "vectors"
TUNED_KEPT = 4  # BM25 indexes with a configuration's own k1 and b, kept per index (SearchIndex.bm25_for)


@dataclass(frozen=True)
class SearchConfig:
    search_type: str = "FullText"
    fusion: str = "Rrf"
    bm25_variant: str = "lucene"
    rerank: str | None = None  # the name of a reranker the caller resolved, or None
    as_of: datetime | None = None  # None: now
    include_superseded: bool = False
    fulltext_weight: float = 0.5  # Weighted fusion: FullText's share; Vector gets the rest
    # BM25's k1 and b (None: BM25Params' defaults, 1.5 and 0.75) and RRF's k (None: fusion.RRF_K, 60)
    bm25_k1: float | None = None
    bm25_b: float | None = None
    rrf_k: int | None = None

    def __post_init__(self) -> None:
        if self.search_type not in SEARCH_TYPES:
            raise ValueError(f"unknown search type {self.search_type!r}")
        if self.fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {self.fusion!r}")
        self.bm25_params()  # validates the variant

    def bm25_params(self) -> BM25Params:
        defaults = BM25Params(self.bm25_variant)
        return BM25Params(
            self.bm25_variant,
            k1=defaults.k1 if self.bm25_k1 is None else float(self.bm25_k1),
            b=defaults.b if self.bm25_b is None else float(self.bm25_b),
        )


@dataclass(frozen=True)
class Ranking:
    """Documents in rank order with their scores (arrays: evaluation reads thousands of these)."""

    document_ids: list[str]
    scores: np.ndarray
    page_rows: np.ndarray  # the page that gave each document its score


class Embedder(ABC):
    """Turns texts into unit vectors. `fit` sees the whole corpus first (LSI needs it; models ignore it)."""

    name = "embedder"

    @abstractmethod
    def fit(self, texts: Sequence[str]) -> np.ndarray: ...

    @abstractmethod
    def embed_query(self, text: str) -> np.ndarray: ...

    def saved(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What a saved index keeps of this embedder once fitted: JSON values (its "kind" among them) and named
        arrays, read back by index_format.restored_embedder. Never a connection detail or a key."""
        raise TypeError(f"a {type(self).__name__} cannot be saved with an index")


class Reranker(ABC):
    """Re-scores candidate pages for a query; higher is better."""

    name = "reranker"

    @abstractmethod
    def score(self, query: str, texts: Sequence[str], first_stage: np.ndarray) -> np.ndarray: ...


class _Locks:
    """An index's locks: one per kind of part, so a long vector build never holds up a BM25 search, and a short
    one for reading or swapping the parts as a whole."""

    def __init__(self) -> None:
        self.bm25 = threading.Lock()
        self.vectors = threading.Lock()
        self.state = threading.Lock()
        self.masks = threading.Lock()


@dataclass
class SearchIndex:
    """One collection's index, shared by every thread of a process.

    Parts are built on first use, each exactly once (double-checked under its lock), and published by
    replacing the attribute, never by changing a shared object in place: a thread that reads the index (or
    saves it: evaluation.retrieval.index_files) sees each part whole or not at all."""

    corpus: Corpus
    # Given the corpus, so a model-backed embedder can reuse the vectors stored per page.
    embedder_factory: Callable[[Corpus], Embedder] | None = None
    bm25_indexes: dict[str, BM25Index] = field(default_factory=dict)
    page_vectors: np.ndarray | None = None
    embedder: Embedder | None = None
    postings: Postings | None = None  # shared by the BM25 variants
    content_version: int | None = None  # the caller's name for the content indexed
    saved_stamp: tuple | None = None  # the caller's name for the saved file this was read from or written as
    # Parts built so far and the time spent on them: callers tell "built now" from "found cached".
    builds: int = 0
    build_seconds: float = 0.0
    # Builds the postings from the pages (a callable giving token lists): in memory unless the caller's own
    postings_builder: Callable[[Callable[[], Iterable[list[str]]]], Postings] | None = field(
        default=None, repr=False
    )
    _masks: dict[tuple[datetime, bool], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False
    )
    _locks: _Locks = field(default_factory=_Locks, repr=False, compare=False)
    _tuned: dict[BM25Params, BM25Index] = field(default_factory=dict, repr=False, compare=False)

    # --- the parts, built on first use ---------------------------------------------------------------------

    @staticmethod
    def parts_for(config: SearchConfig) -> frozenset[str]:
        """The parts a search with this configuration reads (the proximity reranker reads BM25's statistics)."""
        parts = set()
        if config.search_type in ("FullText", "Hybrid") or config.rerank == "proximity":
            parts.add(f"bm25:{config.bm25_variant}")
        if config.search_type in ("Vector", "Hybrid"):
            parts.add(VECTORS)
        return frozenset(parts)

    def has_part(self, part: str) -> bool:
        if part == VECTORS:
            return self.page_vectors is not None and self.embedder is not None
        return part.removeprefix("bm25:") in self.bm25_indexes

    def build_part(self, part: str) -> None:
        if part == VECTORS:
            self.vectors()
        else:
            self.bm25(part.removeprefix("bm25:"))

    def bm25(self, variant: str) -> BM25Index:
        index = self.bm25_indexes.get(variant)
        if index is not None:
            return index
        with self._locks.bm25:
            index = self.bm25_indexes.get(variant)
            if index is None:
                started = time.perf_counter()
                postings = self.postings
                if postings is None:
                    build = self.postings_builder or build_postings
                    postings = build(lambda: (tokenize(text) for text in self.corpus.iter_texts()))
                index = BM25Index(postings, BM25Params(variant))
                with self._locks.state:
                    self.postings = postings
                    self.bm25_indexes = {**self.bm25_indexes, variant: index}
                    self._built(started)
        return index

    def bm25_for(self, config: SearchConfig) -> BM25Index:
        """The BM25 index a search with this configuration reads: its variant's, or with k1 and b of its own
        (a study's trials): tf parts computed over the same postings and idfs (a few thousand doubles), the last
        TUNED_KEPT of them kept in memory, never saved with the index."""
        params = config.bm25_params()
        if params == BM25Params(config.bm25_variant):
            return self.bm25(config.bm25_variant)
        index = self._tuned.get(params)
        if index is None:
            base = self.bm25(config.bm25_variant)
            index = BM25Index(base.postings, params, idf=base.idf)  # idf reads neither k1 nor b
            with self._locks.state:
                kept = [item for item in self._tuned.items() if item[0] != params][-(TUNED_KEPT - 1) :]
                self._tuned = {**dict(kept), params: index}
        return index

    def _built(self, started: float) -> None:
        self.builds += 1
        self.build_seconds += time.perf_counter() - started

    def vectors(self) -> tuple[Embedder, np.ndarray]:
        with self._locks.state:
            embedder, vectors = self.embedder, self.page_vectors
        if embedder is not None and vectors is not None:
            return embedder, vectors
        with self._locks.vectors:
            embedder, vectors = self.embedder, self.page_vectors
            if embedder is None or vectors is None:
                if self.embedder_factory is None:
                    raise LookupError("no embedder configured for vector search")
                started = time.perf_counter()
                embedder = self.embedder_factory(self.corpus)
                vectors = embedder.fit(self.corpus.all_texts())
                with self._locks.state:
                    self.embedder, self.page_vectors = embedder, vectors
                    self._built(started)
        return embedder, vectors

    # --- search --------------------------------------------------------------------------------------------

    def page_scores(self, query: str, config: SearchConfig) -> np.ndarray:
        """A score per page row; -inf for pages that are not candidates (no match, filtered out)."""
        size = self.corpus.size
        if config.search_type == "FullText":
            scores = self._fulltext(query, config)
        elif config.search_type == "Vector":
            scores = self._vector(query)
        else:
            scores = self._hybrid(query, config, size)
        return self._apply_filters(scores, config)

    def _fulltext(self, query: str, config: SearchConfig) -> np.ndarray:
        scores = self.bm25_for(config).scores(tokenize(query))
        np.putmask(scores, scores <= 0, -np.inf)  # pages sharing no term with the query are not results
        return scores

    def _vector(self, query: str) -> np.ndarray:
        embedder, vectors = self.vectors()
        return vector_scores(vectors, embedder.embed_query(query))

    def _hybrid(self, query: str, config: SearchConfig, size: int) -> np.ndarray:
        """FullText's and Vector's CANDIDATES best pages fused; every other page -inf."""
        rows, fused = self._hybrid_candidates(query, config)
        scores = np.full(size, -np.inf)
        scores[rows] = fused
        return scores

    def _hybrid_candidates(self, query: str, config: SearchConfig) -> tuple[np.ndarray, np.ndarray]:
        """(rows ascending, fused scores) of FullText's and Vector's CANDIDATES best pages. Only the query terms'
        postings and one pass over the page vectors are read: the fusion sees the candidates alone."""
        text_rows, text_scores = self._fulltext_candidates(query, config)
        embedder, vectors = self.vectors()
        vector_rows, vector_scores_ = vector_top_rows(vectors, embedder.embed_query(query), CANDIDATES)
        if config.fusion == "Rrf":
            rows, fused = fusion.rrf([text_rows, vector_rows], k=config.rrf_k or fusion.RRF_K)
        else:
            lists = [(text_rows, text_scores), (vector_rows, vector_scores_)]
            rows, fused = fusion.weighted(lists, [config.fulltext_weight, 1 - config.fulltext_weight])
        return rows, fused

    def _fulltext_candidates(self, query: str, config: SearchConfig) -> tuple[np.ndarray, np.ndarray]:
        """(rows, BM25 scores) of the CANDIDATES best pages scoring above 0, best first, ties by row."""
        ranks = _descending_ranks(self.corpus.size)  # the kernel puts the higher rank first in a tie
        rows, scores, _ = self.bm25_for(config).top_documents(tokenize(query), CANDIDATES, ranks)
        return rows, scores

    def _apply_filters(self, scores: np.ndarray, config: SearchConfig) -> np.ndarray:
        if not self.corpus.temporal:
            return scores
        at = config.as_of or datetime.now().astimezone()
        scores[self._hidden_pages(at, config.include_superseded)] = -np.inf
        return scores

    def _hidden_pages(self, at: datetime, include_superseded: bool) -> np.ndarray:
        """Pages whose document is not visible at `at`."""
        return self._visibility(at, include_superseded)[0]

    def _visibility(self, at: datetime, include_superseded: bool) -> tuple[np.ndarray, np.ndarray]:
        """(hidden, live) flags per page at `at`; kept for the last few instants asked (an evaluation asks the
        same instant for every question)."""
        key = (at, include_superseded)
        masks = self._masks.get(key)
        if masks is None:
            corpus = self.corpus
            # callers ask only when corpus.temporal: its validity derived into a TimeTable
            assert isinstance(corpus.validity, TimeTable)
            visible = corpus.validity.visible(at, include_superseded)
            live = visible[corpus.page_document]
            masks = (~live, live)
            with self._locks.masks:  # a new dict, never one another thread is iterating
                kept = list(self._masks.items())[-7:]
                self._masks = {**dict(kept), key: masks}
        return masks

    def rank_documents(
        self, query: str, config: SearchConfig, depth: int, reranker: Reranker | None = None
    ) -> Ranking:
        """The top `depth` documents, each scored by its best page, in trec_eval's order."""
        corpus = self.corpus
        if config.search_type == "FullText" and reranker is None:
            # Only the query terms' postings are read: no array the size of the collection.
            live = None
            if corpus.temporal:
                at = config.as_of or datetime.now().astimezone()
                live = self._visibility(at, config.include_superseded)[1]
            rows, scores, pages = self.bm25_for(config).top_documents(
                tokenize(query), depth, corpus.id_rank, corpus.page_document_rows, live
            )
            return Ranking(corpus.ids_of(rows), scores, pages)
        if config.search_type == "Hybrid" and reranker is None:
            return self._ranked_candidates(*self._hybrid_candidates(query, config), config, depth)
        scores = self.page_scores(query, config)
        if reranker is not None:
            scores = self._rerank(query, scores, max(depth, CANDIDATES // 2), reranker)
        if corpus.one_page_each:
            rows = self._ordered(scores, depth, corpus.id_rank)
            pages = rows
            doc_scores = scores[rows]
        else:
            by_document = np.maximum.reduceat(scores, corpus.document_starts)
            rows = self._ordered(by_document, depth, corpus.id_rank)
            doc_scores = by_document[rows]
            ends = np.r_[corpus.document_starts[1:], len(scores)]
            pages = np.array(
                [
                    start + int(np.argmax(scores[start:end]))
                    for start, end in zip(corpus.document_starts[rows], ends[rows], strict=True)
                ],
                dtype=np.int64,
            )
        return Ranking(corpus.ids_of(rows), doc_scores, pages)

    def _ranked_candidates(
        self, rows: np.ndarray, scores: np.ndarray, config: SearchConfig, depth: int
    ) -> Ranking:
        """The ranking of the pages in `rows` (ascending) scored `scores`, every other page out of it: what the
        path over every page's score gives (page_scores, then each document's best page) when all but these
        are -inf, with no array the size of the collection (a Hybrid search's few hundred candidates)."""
        corpus = self.corpus
        kept = scores > -np.inf
        if corpus.temporal:
            at = config.as_of or datetime.now().astimezone()
            kept &= self._visibility(at, config.include_superseded)[1][rows]
        rows, scores = rows[kept], scores[kept]
        if corpus.one_page_each:
            documents = rows
        else:  # each document's best page: the highest score, then the first row (np.argmax's)
            by_document = corpus.page_document[rows]
            order = np.lexsort((rows, -scores, by_document))
            first = order[np.diff(by_document[order], prepend=-1) != 0]  # document rows are >= 0
            rows, scores, documents = rows[first], scores[first], by_document[first].astype(np.int64)
        chosen = self._ordered(scores, depth, corpus.id_rank[documents])
        return Ranking(corpus.ids_of(documents[chosen]), scores[chosen], rows[chosen])

    def _rerank(self, query: str, scores: np.ndarray, count: int, reranker: Reranker) -> np.ndarray:
        """Re-score the best `count` candidate pages; the others drop out of the results."""
        rows = _top_rows(scores, count)
        rescored = np.full(len(scores), -np.inf)
        if len(rows):
            texts = self.corpus.texts_of(rows.tolist())
            rescored[rows] = reranker.score(query, texts, scores[rows])
        return rescored

    @staticmethod
    def _ordered(scores: np.ndarray, depth: int, id_rank: np.ndarray) -> np.ndarray:
        """Rows of the `depth` best finite scores in trec_eval's order of a run.

        trec_eval compares scores as 32-bit floats (scores equal to ~7 digits tie) and breaks ties by document
        id, descending; the cut at `depth` is made in that same order, so it is the cut trec_eval would make.
        """
        values = scores.astype(np.float32)  # -inf (not a candidate) stays -inf
        kth = -np.inf
        if len(values) > depth:
            kth = np.partition(values, len(values) - depth)[len(values) - depth]
        # Every row tied with the depth-th value is kept: the id tie-break decides among them below.
        rows = np.flatnonzero(values >= kth) if kth > -np.inf else np.flatnonzero(values > -np.inf)
        order = np.lexsort((-id_rank[rows], -values[rows]))
        return rows[order[:depth]]


def _top_rows(scores: np.ndarray, count: int) -> np.ndarray:
    """Rows of the `count` best finite scores, best first (ties in row order)."""
    finite = np.flatnonzero(np.isfinite(scores))
    if len(finite) > count:
        finite = finite[np.argpartition(-scores[finite], count - 1)[:count]]
    return finite[np.argsort(-scores[finite], kind="stable")]


_ranks = np.zeros(0, dtype=np.int64)


def _descending_ranks(size: int) -> np.ndarray:
    """[size - 1, ..., 1, 0]: as id ranks, the kernel's tie-break puts the lower row first. One shared array,
    the longest asked for so far, sliced."""
    global _ranks
    ranks = _ranks
    if len(ranks) < size:
        ranks = _ranks = np.arange(size - 1, -1, -1, dtype=np.int64)
    return ranks[len(ranks) - size :]
