"""One question under up to three configurations side by side: each configuration's ranked documents (title, a
snippet, the golden set's grade or none, a pending grade people gave that is not in the golden set yet, its rank
in the other columns, explain on request) and the question's metrics.

A golden question is searched exactly as a retrieval evaluation searches it (the same read path, the same depth:
the configuration's top_k cut at the largest k, else the largest k) and scored by the same function against the
same qrels, so its metrics equal that question's result in a run of the same configuration over the same golden
set and content. Judgments people gave that the golden set does not hold yet (a rater's, before a curator
applies them) are scored apart, as `metrics_with_pending`: the golden set's figures are never changed by them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from django.utils import timezone

from evalsite.errors import EvalsiteError, NotFound
from evalsite.tenancy.models import Tenant
from evaluation.configs import RunConfig
from evaluation.judgments.grades import combine, grade_on, is_machine, is_settlement
from evaluation.judgments.highlight import snippet
from evaluation.models import RelevanceJudgment
from evaluation.retrieval import metrics
from evaluation.retrieval.read_path import CollectionSearch, rerank_warnings
from evaluation.targets.callers import TargetError
from evaluation.targets.services import resolve_targets, target_client
from goldenset.generation import PageText
from goldenset.models import Collection, GoldenEntry
from goldenset.selectors import first_pages, golden_entries_named, pages_by_id
from goldenset.services.scales import collection_scale

MAX_COLUMNS = 3  # configurations side by side
MAX_QUESTION_CHARS = 2000  # a query typed in: as long as a golden question may be


@dataclass(frozen=True)
class Asked:
    """The question a workbench asks: a golden entry's (with its qrels), or a query typed in (no metrics)."""

    question: str
    entry: GoldenEntry | None = None
    qrels: dict[str, int] = field(
        default_factory=dict
    )  # the golden set's judgments, as evaluation reads them
    pending: dict[str, int] = field(default_factory=dict)  # people's grades of documents the golden set lacks

    @property
    def scored(self) -> bool:
        """Metrics are given for a golden question with an expected document, as an evaluation scores it."""
        return self.entry is not None and any(grade > 0 for grade in self.qrels.values())


def asked_entry(collection: Collection, name: str) -> Asked:
    """A golden entry of the collection by key or id; a 404 naming it otherwise."""
    entry = golden_entries_named(collection=collection, names=[name]).get(name)
    if entry is None:
        raise NotFound("Golden entry", name)
    qrels = entry.qrels()
    return Asked(entry.question, entry, qrels, pending_grades(entry, qrels))


def asked_query(question: object) -> Asked:
    if not isinstance(question, str) or not question.strip():
        raise EvalsiteError(
            "validation-error", "question: expected a non-empty text.", details={"field": "question"}
        )
    if len(question) > MAX_QUESTION_CHARS:
        raise EvalsiteError(
            "validation-error",
            f"question: at most {MAX_QUESTION_CHARS} characters.",
            details={"field": "question"},
        )
    return Asked(question.strip())


def pending_grades(entry: GoldenEntry, qrels: dict[str, int]) -> dict[str, int]:
    """People's grades (combined: evaluation.judgments.grades.combine, or a curator's settling grade) of the
    entry's documents the golden set has not judged, on the collection's scale: what a curator has yet to apply.
    Machine assessors' grades are not people's, and are left out."""
    scale = collection_scale(entry.collection)
    given: dict[str, list[int | None]] = {}
    settled: dict[str, int | None] = {}
    rows = RelevanceJudgment.objects.filter(entry=entry).values_list(
        "document_id", "rater", "grade", "detail"
    )
    for document_id, rater, grade, detail in rows:
        if document_id in qrels or is_machine(rater):
            continue
        on_scale = grade_on(grade, detail, scale)  # a judgment given on another scale, on the collection's
        if is_settlement(detail):
            settled[document_id] = on_scale
        else:
            given.setdefault(document_id, []).append(on_scale)
    combined = {document: combine(grades).grade for document, grades in given.items()}
    combined.update(settled)  # a curator's settling grade is the item's, as apply takes it
    return {document: grade for document, grade in combined.items() if grade is not None}


def depth_of(config: RunConfig, ks: Sequence[int]) -> int:
    """How deep a configuration is asked: as a retrieval evaluation asks it (evaluation.retrieval.evaluate)."""
    return min(config.top_k, max(ks)) if config.top_k else max(ks)


@dataclass
class _Ranked:
    ids: list[str]
    scores: list[float | None]
    pages: dict[str, PageText]  # document id -> its shown page
    explain: list[dict] | None
    took_ms: float
    error: str = ""


def _built_in(
    engine: CollectionSearch, asked: Asked, config: RunConfig, depth: int, explain: bool, at
) -> _Ranked:
    began = time.perf_counter()
    hits = engine.rank(asked.question, config, depth, at=at)
    took = (time.perf_counter() - began) * 1000
    pages = pages_by_id(engine.page_ids(hits))
    shown = {doc: pages[pk] for doc, pk in zip(hits.document_ids, engine.page_ids(hits), strict=True)}
    explained = engine.explain(asked.question, config, hits, at=at) if explain else None
    return _Ranked(hits.document_ids, list(hits.scores), shown, explained, took)


def _target(collection: Collection, target, asked: Asked, config: RunConfig, depth: int) -> _Ranked:
    key = (asked.entry.key or str(asked.entry.pk)) if asked.entry else ""
    try:
        with target_client(target, dict(config.params)) as client:
            hits = client.search(asked.question, depth, key)
    except TargetError as exc:
        return _Ranked([], [], {}, None, exc.latency_ms or 0.0, error=exc.problem)
    scores = hits.scores if hits.scores is not None else [None] * len(hits.ids)
    pages = first_pages(collection, hits.ids)
    return _Ranked(
        hits.ids, [None if s is None or math.isnan(s) else s for s in scores], pages, None, hits.latency_ms
    )


def question_columns(
    *,
    tenant: Tenant,
    collection: Collection,
    asked: Asked,
    configs: Sequence[RunConfig],
    ks: Sequence[int],
    explain: bool = False,
) -> dict:
    """Each configuration's ranked documents for the question, with grades, ranks across columns and metrics."""
    if len(configs) > MAX_COLUMNS:
        raise EvalsiteError(
            "too-many-configs", f"configs: at most {MAX_COLUMNS} side by side.", details={"field": "configs"}
        )
    targets = resolve_targets(tenant, [collection], configs)
    # As an evaluation names them (evaluation.retrieval.evaluate): a target configuration says its target's kind.
    configs = [replace(c, target_kind=targets[c.target].kind) if c.target else c for c in configs]
    engine = CollectionSearch([collection]) if any(not c.target for c in configs) else None
    now = timezone.now()
    ranked = []
    for config in configs:
        depth = depth_of(config, ks)
        if config.target:
            ranked.append(_target(collection, targets[config.target], asked, config, depth))
        else:
            assert engine is not None
            ranked.append(_built_in(engine, asked, config, depth, explain, now))
    positions = [{doc: rank for rank, doc in enumerate(r.ids, start=1)} for r in ranked]
    columns = [
        _column(
            asked,
            config,
            r,
            ks,
            [(c.label, p) for c, p in zip(configs, positions, strict=True) if c is not config],
        )
        for config, r in zip(configs, ranked, strict=True)
    ]
    return {
        "collection_id": collection.slug,
        "entry_id": str(asked.entry.pk) if asked.entry else None,
        "entry_key": asked.entry.key if asked.entry else "",
        "question": asked.question,
        "ks": list(ks),
        "scored": asked.scored,
        "pending_judgments": len(asked.pending),
        "configs": columns,
        "index": engine.index_info() if engine else {},
    }


def _column(asked: Asked, config: RunConfig, ranked: _Ranked, ks, others) -> dict:
    results = []
    for rank, (doc, score) in enumerate(zip(ranked.ids, ranked.scores, strict=True), start=1):
        page = ranked.pages.get(doc)
        row = {
            "document_id": doc,
            "title": page.title if page else None,
            "rank": rank,
            "score": score,
            "grade": asked.qrels.get(doc),
            "pending_grade": asked.pending.get(doc),
            "in_collection": page is not None,
            "page_number": page.number if page else None,
            "snippet": snippet(page.text, asked.question) if page else "",
            "ranks_elsewhere": {label: where.get(doc) for label, where in others},
        }
        if ranked.explain is not None:
            row["explain"] = ranked.explain[rank - 1]
        results.append(row)
    column = {
        "label": config.label,
        "config": config.as_dict(),
        "depth": depth_of(config, ks),
        "took_ms": round(ranked.took_ms, 2),
        "error": ranked.error,
        "results": results,
        "metrics": None,
        "metrics_with_pending": None,
        "warnings": rerank_warnings(config.rerank),
    }
    if asked.scored and not ranked.error:
        column["metrics"] = metrics.evaluate_query(ranked.ids, asked.qrels, ks)
        if asked.pending:
            column["metrics_with_pending"] = metrics.evaluate_query(
                ranked.ids, {**asked.pending, **asked.qrels}, ks
            )
    return column
