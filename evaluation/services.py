"""Search and retrieval evaluation over collections: the one read path that search and evaluation share."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db import transaction

from evaluation import embedding_store, indexes, metrics
from evaluation.configs import RunConfig
from evaluation.models import EvaluationRun, QuestionResult, RunKind
from evaluation.search import embeddings
from evaluation.search.embeddings import EmbeddingReranker
from evaluation.search.engine import Ranking, Reranker, SearchIndex
from evaluation.search.rerank import ProximityReranker, idf_table
from goldenset.errors import EvalsiteError
from goldenset.models import Collection, GoldenEntry, Job, Page, Tenant


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


@dataclass(frozen=True)
class Hit:
    collection_id: str
    document_id: str
    score: float
    page_row: int


class CollectionSearch:
    """The indexes of the selected collections, searched as one: rankings merged by score.

    With several collections a document is identified by (collection, id); ties are broken on
    "collection/id", descending, as trec_eval breaks them on the document id.
    """

    def __init__(self, collections: Sequence[Collection], stats: indexes.IndexStats | None = None):
        self.collections = list(collections)
        self.stats = stats or indexes.IndexStats()
        self.indexes = [indexes.get_index(c, self.stats) for c in self.collections]
        self._builds_before = sum(i.builds for i in self.indexes)
        self._rerankers: dict[tuple[int, str | None, str], Reranker | None] = {}

    def reranker(self, position: int, config: RunConfig) -> Reranker | None:
        key = (position, config.rerank, config.bm25_variant)
        if key not in self._rerankers:
            self._rerankers[key] = make_reranker(config.rerank, self.indexes[position], config.bm25_variant)
        return self._rerankers[key]

    def rank(self, query: str, config: RunConfig, depth: int) -> list[Hit]:
        search_config = config.search_config()
        merged: list[Hit] = []
        for position, (collection, index) in enumerate(zip(self.collections, self.indexes, strict=True)):
            ranking: Ranking = index.rank_documents(
                query, search_config, depth, self.reranker(position, config)
            )
            merged.extend(
                Hit(collection.slug, doc, score, page)
                for doc, score, page in zip(
                    ranking.document_ids, ranking.scores.tolist(), ranking.page_rows.tolist(), strict=True
                )
            )
        if len(self.collections) > 1:
            merged.sort(key=lambda h: (h.score, f"{h.collection_id}/{h.document_id}".encode()), reverse=True)
        return merged[:depth]

    def persist_new_parts(self) -> int:
        """Save indexes that gained parts during this call, so other processes load instead of building."""
        built = sum(i.builds for i in self.indexes) - self._builds_before
        if built:
            for collection, index in zip(self.collections, self.indexes, strict=True):
                indexes.save_index(collection, index)
        return built

    def index_info(self) -> dict:
        return {
            **self.stats.as_dict(),
            "parts_built": sum(i.builds for i in self.indexes) - self._builds_before,
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
        known = set(collection.documents.values_list("external_id", flat=True))
        gone: list[str] = []
        entries = GoldenEntry.objects.filter(collection=collection).order_by("created_at", "id")
        for entry in entries.iterator(chunk_size=2000):
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
    batch_id = uuid.uuid4()
    golden_fingerprint = fingerprint(questions)
    total = len(questions) * len(configs)
    runs: list[EvaluationRun] = []
    for number, config in enumerate(configs):
        depth = min(config.top_k, depth_default) if config.top_k else depth_default
        started = time.perf_counter()
        per_question = []
        for i, q in enumerate(questions):
            hits = search.rank(q.question, config, depth)
            ranking = [f"{h.collection_id}/{h.document_id}" if multi else h.document_id for h in hits]
            per_question.append((q, hits, ranking, metrics.evaluate_query(ranking, q.qrels, ks)))
            if progress and (i + 1) % 50 == 0:
                progress(number * len(questions) + i + 1, total)
        means = metrics.mean_metrics([m for *_rest, m in per_question])
        search_ms = (time.perf_counter() - started) * 1000
        runs.append(
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
                index_info=search.index_info(),
                started=started,
                search_ms=search_ms,
                job=job,
            )
        )
        if progress:
            progress((number + 1) * len(questions), total)
    search.persist_new_parts()
    return batch_id, runs


def _persist_run(*, tenant, collections, batch_id, config, ks, means, per_question, warnings, golden_fingerprint,
                 index_info, started, search_ms, job) -> EvaluationRun:  # fmt: skip
    with transaction.atomic():
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
            index_info={**index_info, "search_ms": round(search_ms, 1)},
            job=job,
        )
        run.collections.set(collections)
        QuestionResult.objects.bulk_create(
            [
                QuestionResult(
                    run=run,
                    position=position,
                    entry_id=q.entry_id,
                    entry_key=q.key,
                    collection_id=q.collection_id,
                    question=q.question,
                    expected=q.qrels,
                    ranked=[
                        [doc, score] for doc, score in zip(ranking, (h.score for h in hits), strict=True)
                    ],
                    first_relevant_rank=metrics.first_relevant_rank(ranking, q.qrels),
                    missing_document_ids=metrics.missing_relevant(ranking, q.qrels),
                    metrics=values,
                )
                for position, (q, hits, ranking, values) in enumerate(per_question)
            ],
            batch_size=500,
        )
        run.duration_ms = round((time.perf_counter() - started) * 1000, 1)
        EvaluationRun.objects.filter(pk=run.pk).update(duration_ms=run.duration_ms)
    return run


def count_golden_questions(collections: Sequence[Collection]) -> int:
    return GoldenEntry.objects.filter(collection__in=collections).exclude(expected_document_ids=[]).count()


def search(*, collections: Sequence[Collection], query: str, config: RunConfig, top_k: int) -> dict:
    """Ranked documents (each with its best page) for one query: the read path evaluation measures."""
    started = time.perf_counter()
    engine = CollectionSearch(collections)
    hits = engine.rank(query, config, top_k)
    by_slug = {c.slug: i for i, c in enumerate(collections)}
    page_ids = [engine.indexes[by_slug[h.collection_id]].corpus.page_ids[h.page_row] for h in hits]
    pages = {
        p.pk: p
        for p in Page.objects.filter(pk__in=page_ids)
        .select_related("document")
        .only("pk", "number", "text", "document__title", "document__external_id")
    }
    engine.persist_new_parts()
    return {
        "query": query,
        "config": config.as_dict(),
        "results": [
            {
                "rank": rank,
                "collection_id": hit.collection_id,
                "document_id": hit.document_id,
                "title": pages[page_id].document.title,
                "score": hit.score,
                "page_number": pages[page_id].number,
                "text": pages[page_id].text,
            }
            for rank, (hit, page_id) in enumerate(zip(hits, page_ids, strict=True), start=1)
        ],
        "took_ms": round((time.perf_counter() - started) * 1000, 2),
        "index": engine.index_info(),
    }


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
