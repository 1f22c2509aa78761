"""Search and retrieval evaluation over collections: the one read path that search and evaluation share."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from django.db import transaction
from django.utils import timezone

from evaluation import embedding_store, indexes, metrics
from evaluation.configs import RunConfig
from evaluation.models import EvaluationRun, QuestionResult, RunKind
from evaluation.search import embeddings
from evaluation.search.embeddings import EmbeddingReranker
from evaluation.search.engine import Ranking, Reranker, SearchConfig, SearchIndex
from evaluation.search.rerank import ProximityReranker, idf_table
from goldenset.errors import EvalsiteError
from goldenset.jobs import job_create
from goldenset.models import Collection, GoldenEntry, Job, JobKind, Page, Tenant
from goldenset.vocabulary.chunks import chunks


def available_rerankers() -> list[str]:
    """The rerankers this server can run, strongest first (what `rerank: true` picks).

    "minilm" when the `minilm` extra is installed, "endpoint" when an embeddings endpoint is configured, then
    "proximity" (always). The two embedding rerankers score a candidate by cosine(query, page) alone."""
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
    "proximity": the first-stage score plus a term-proximity bonus (evaluation.search.rerank)."""
    if name is None:
        return None
    if name == "proximity":
        bm25 = index.bm25(variant)
        df = bm25.matrix.indptr[1:] - bm25.matrix.indptr[:-1]
        return ProximityReranker(idf_table(bm25.vocabulary, df, bm25.size))
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

    def rank(self, query: str, config: RunConfig, depth: int, at: datetime | None = None) -> Hits:
        """The top `depth` documents; `at` is the instant to replay when the config names no as_of."""
        search_config = self._search_configs.get((config, at))
        if search_config is None:
            search_config = config.search_config()
            if at is not None and search_config.as_of is None:
                search_config = replace(search_config, as_of=at)
            self._search_configs[(config, at)] = search_config
        self._ensure(SearchIndex.parts_for(search_config))
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
            self.indexes[by_slug[slug]].corpus.page_ids[row]
            for slug, row in zip(hits.collection_ids, hits.page_rows, strict=True)
        ]

    def index_info(self) -> dict:
        return {
            **self.stats.as_dict(),
            "content_versions": {c.slug: c.content_version for c in self.collections},
        }


# --- retrieval evaluation --------------------------------------------------------------------------------


@dataclass
class GoldenQuestion:
    entry_id: str
    key: str
    collection_id: str
    question: str
    qrels: dict[str, int]  # judged-relevant document -> grade


def golden_questions(collections: Sequence[Collection]) -> tuple[list[GoldenQuestion], list[str]]:
    """The questions to evaluate, and warnings about what was left out or looks wrong."""
    warnings: list[str] = []
    multi = len(collections) > 1
    questions: list[GoldenQuestion] = []
    skipped = 0
    for collection in collections:
        entries = list(GoldenEntry.objects.filter(collection=collection).order_by("created_at", "id"))
        expected = sorted({d for e in entries for d in e.expected_document_ids})
        known: set[str] = set()
        for chunk in chunks(expected):  # only the expected ids: a collection may hold millions
            known.update(
                collection.documents.filter(external_id__in=chunk).values_list("external_id", flat=True)
            )
        gone: list[str] = []
        for entry in entries:
            if not entry.expected_document_ids:
                skipped += 1
                continue
            missing = [d for d in entry.expected_document_ids if d not in known]
            if missing:
                gone.append(f"{entry.key or entry.pk}: {', '.join(missing)}")
            qrels = {
                (f"{collection.slug}/{d}" if multi else d): entry.grade(d)
                for d in entry.expected_document_ids
            }
            questions.append(GoldenQuestion(str(entry.pk), entry.key, collection.slug, entry.question, qrels))
        if gone:
            warnings.append(
                f"{len(gone)} golden entries of {collection.slug} expect documents that are no longer in the "
                f"collection (they count as relevant and not retrieved): "
                + "; ".join(gone[:5])
                + (" ..." if len(gone) > 5 else "")
            )
    if skipped:
        warnings.append(f"{skipped} golden entries have no expected documents and were not evaluated.")
    return questions, warnings


def fingerprint(questions: Sequence[GoldenQuestion]) -> str:
    digest = hashlib.sha256()
    for q in questions:
        digest.update(json.dumps([q.entry_id, q.question, sorted(q.qrels.items())]).encode())
    return digest.hexdigest()


def evaluate_retrieval(
    *,
    tenant: Tenant,
    collections: Sequence[Collection],
    ks: Sequence[int],
    configs: Sequence[RunConfig],
    job: Job | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[uuid.UUID, list[EvaluationRun]]:
    """Every golden question of the collections through the search read path, once per configuration.

    Each configuration becomes one persisted run of a new batch; the golden set is snapshotted in the runs.
    """
    questions, warnings = golden_questions(collections)
    if not questions:
        raise EvalsiteError(
            "empty-golden-set",
            "No golden entries with expected documents in " + ", ".join(c.slug for c in collections) + ".",
            details={"collection_ids": [c.slug for c in collections]},
        )
    search = CollectionSearch(collections)
    depth_default = max(ks)
    multi = len(collections) > 1
    golden_fingerprint = fingerprint(questions)
    # One instant for the whole batch: every question sees the same temporal state (and the visibility mask
    # is computed once); a run without as_of records the instant it replayed.
    now = timezone.now()
    total = len(questions) * len(configs)
    scored = []
    for number, config in enumerate(configs):
        depth = min(config.top_k, depth_default) if config.top_k else depth_default
        started = time.perf_counter()
        per_question = []
        for i, q in enumerate(questions):
            hits = search.rank(q.question, config, depth, at=now)
            ranking = hits.keys(qualified=multi)
            per_question.append((q, hits, ranking, metrics.evaluate_query(ranking, q.qrels, ks)))
            if progress and (i + 1) % 50 == 0:
                progress(number * len(questions) + i + 1, total)
        means = metrics.mean_metrics([m for *_rest, m in per_question])
        scored.append((config, per_question, means, (time.perf_counter() - started) * 1000))
        if progress:
            progress((number + 1) * len(questions), total)
    batch_id = uuid.uuid4()
    index_info = {**search.index_info(), "evaluated_at": now.isoformat().replace("+00:00", "Z")}
    with transaction.atomic():  # a batch is stored whole or not at all
        runs = [
            _persist_run(
                tenant=tenant,
                collections=collections,
                batch_id=batch_id,
                config=config,
                ks=ks,
                means=means,
                per_question=per_question,
                warnings=warnings,
                golden_fingerprint=golden_fingerprint,
                index_info={**index_info, "search_ms": round(search_ms, 1)},
                search_ms=search_ms,
                job=job,
            )
            for config, per_question, means, search_ms in scored
        ]
    return batch_id, runs


def _persist_run(*, tenant, collections, batch_id, config, ks, means, per_question, warnings, golden_fingerprint,
                 index_info, search_ms, job) -> EvaluationRun:  # fmt: skip
    started = time.perf_counter()
    results = [
        QuestionResult(
            position=position,
            entry_id=q.entry_id,
            entry_key=q.key,
            collection_id=q.collection_id,
            question=q.question,
            expected=q.qrels,
            **QuestionResult.ranked_fields(list(zip(ranking, hits.scores, strict=True))),
            first_relevant_rank=metrics.first_relevant_rank(ranking, q.qrels),
            missing_document_ids=metrics.missing_relevant(ranking, q.qrels),
            metrics=values,
        )
        for position, (q, hits, ranking, values) in enumerate(per_question)
    ]
    run = EvaluationRun.objects.create(
        tenant=tenant,
        collection_ids=[c.slug for c in collections],
        batch_id=batch_id,
        kind=RunKind.RETRIEVAL,
        label=config.label,
        config=config.as_dict(),
        ks=list(ks),
        metrics=means,
        metric_methods={name: "trec_eval" for name in means},
        question_count=len(per_question),
        warnings=warnings,
        golden_fingerprint=golden_fingerprint,
        index_info=index_info,
        job=job,
        # The configuration's searches and scoring plus building its results (the insert itself follows).
        duration_ms=round(search_ms + (time.perf_counter() - started) * 1000, 1),
    )
    run.collections.set(collections)
    for result in results:
        result.run = run
    QuestionResult.objects.bulk_create(results, batch_size=500)
    return run


def count_golden_questions(collections: Sequence[Collection]) -> int:
    return GoldenEntry.objects.filter(collection__in=collections).exclude(expected_document_ids=[]).count()


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
    }


@dataclass(frozen=True)
class PageText:
    """What search results and answers show of a page."""

    number: int
    text: str
    title: str  # its document's


def pages_by_id(page_ids: Sequence[int]) -> dict[int, PageText]:
    """Pages with their document's title, for showing or answering from search hits (plain rows: building
    model instances cost a search call as much as the search itself)."""
    rows = Page.objects.filter(pk__in=set(page_ids)).values_list("pk", "number", "text", "document__title")
    return {pk: PageText(number, text, title) for pk, number, text, title in rows}


def run_summary(run: EvaluationRun) -> dict:
    """A run as the evaluate endpoint answers it (the seed's shape)."""
    return {
        "run_id": str(run.pk),
        "label": run.label,
        "config": run.config,
        "ks": run.ks,
        "metrics": run.metrics,
        "question_count": run.question_count,
        "duration_ms": run.duration_ms,
        "warnings": run.warnings,
        "index": run.index_info,
    }


def evaluation_job_create(
    *, tenant: Tenant, collections: Sequence[Collection], ks: Sequence[int], configs: Sequence[RunConfig]
) -> Job:
    """An Evaluate job for validated collections, ks and configurations (the API's large evaluations and the
    dashboard's launcher both create it here), which evaluate_job runs."""
    return job_create(
        tenant=tenant,
        kind=JobKind.EVALUATE,
        collection=collections[0],
        input={
            "collection_pks": [c.pk for c in collections],
            "ks": list(ks),
            "configs": [c.as_dict() for c in configs],
        },
    )


def evaluate_job(job: Job, progress) -> dict:
    """The Evaluate job: the request was validated when the job was created."""
    from evaluation.configs import parse_configs

    collections = list(Collection.objects.filter(pk__in=job.input["collection_pks"]))
    if len(collections) != len(job.input["collection_pks"]):
        raise EvalsiteError("collection-gone", "A collection was deleted before the evaluation ran.")
    order = {pk: i for i, pk in enumerate(job.input["collection_pks"])}
    collections.sort(key=lambda c: order[c.pk])
    configs = parse_configs(job.input["configs"], available_rerankers())
    batch_id, runs = evaluate_retrieval(
        tenant=job.tenant,
        collections=collections,
        ks=job.input["ks"],
        configs=configs,
        job=job,
        progress=progress,
    )
    return {"batch_id": str(batch_id), "runs": [run_summary(r) for r in runs]}
