"""A BEIR folder (corpus.jsonl, queries.jsonl, qrels) loaded into a collection: documents and golden entries in
one transaction, the corpus read and written a batch at a time so memory stays bounded whatever its size
(`manage.py import_beir`). The files are read by goldenset.beir (pure)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from django.db import transaction

from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import Tenant
from goldenset import beir
from goldenset.models import Collection, Origin
from goldenset.services import (
    DocumentInput,
    EntryInput,
    collection_create,
    documents_upsert,
    golden_entries_add,
)


def beir_import(
    *,
    folder: Path,
    tenant: Tenant,
    collection_id: str,
    actor: str,
    name: str = "",
    progress: Callable[[int, int, int], None] | None = None,
) -> dict[str, int]:
    """Load corpus.jsonl, queries.jsonl and qrels.tsv as documents plus golden entries, in one transaction.

    A query's judged-relevant documents (grade > 0) become its expected documents with their grades; its id
    becomes the entry's key; `answerable` and `reference_answer` carry over. Re-importing updates in place.

    queries.jsonl and qrels.tsv (small) are read and checked first; corpus.jsonl (up to millions of rows) is
    then read and written a batch at a time (documents_upsert), so memory stays bounded whatever its size. A
    malformed corpus line found late still loads nothing: the error rolls the one transaction back. After
    each batch, `progress(documents read, bytes of corpus.jsonl read, its size)`.
    """
    paths, qrels_path = _beir_files(folder)
    queries = list(beir.read_queries(beir.open_lines(paths["queries.jsonl"])))
    qrels = beir.read_qrels(beir.open_lines(qrels_path), name=qrels_path.name)
    judged = {d for judgments in qrels.values() for d in judgments}
    unknown_queries = sorted(set(qrels) - {q.id for q in queries})
    entries = [_beir_entry(query, qrels.get(query.id, {})) for query in queries]
    corpus = _CorpusFile(paths["corpus.jsonl"])
    found: set[str] = set()  # the judged documents the corpus has: qrels may judge no other

    def documents() -> Iterator[DocumentInput]:
        for row in beir.read_corpus(corpus.lines()):
            if row.id in judged:
                found.add(row.id)
            yield DocumentInput.from_text(
                id=row.id, title=row.title, text=row.text, metadata=row.metadata, source=folder.name
            )

    def report(done: int, _total: int) -> None:
        if progress:
            progress(done, corpus.read, corpus.size)

    with transaction.atomic():
        collection = Collection.objects.filter(tenant=tenant, slug=collection_id).first()
        if collection is None:
            collection = collection_create(
                tenant=tenant, slug=collection_id, name=name or folder.name, actor=actor
            )
        docs = documents_upsert(
            collection=collection,
            actor=actor,
            source=f"BEIR folder {folder.name}",
            documents=documents(),
            progress=report,
        )
        if found != judged:  # read again to name the first line that judges a document the corpus lacks
            beir.read_qrels(beir.open_lines(qrels_path), name=qrels_path.name, known_documents=found)
        created, updated = golden_entries_add(
            collection=collection, entries=entries, actor=actor, origin=Origin.IMPORTED, upsert_by_key=True
        )
    return {
        "documents": docs["received"],
        "documents_created": docs["created"],
        "documents_updated": docs["updated"],
        "pages_written": docs["pages_written"],
        "queries": len(queries),
        "entries_created": len(created),
        "entries_updated": len(updated),
        "qrels_without_query": len(unknown_queries),
    }


def _beir_files(folder: Path) -> tuple[dict[str, Path], Path]:
    """corpus.jsonl, queries.jsonl and the qrels (qrels.tsv or qrels/test.tsv) of a folder, or a 400 naming
    what is missing."""
    paths = {name: folder / name for name in ("corpus.jsonl", "queries.jsonl")}
    qrels_path = next((folder / n for n in ("qrels.tsv", "qrels/test.tsv") if (folder / n).exists()), None)
    missing = [str(p) for p in paths.values() if not p.exists()]
    if missing or qrels_path is None:
        raise EvalsiteError(
            "beir-invalid",
            f"{folder}: missing {', '.join(missing) or 'qrels.tsv'}",
            details={"folder": str(folder)},
        )
    return paths, qrels_path


def _beir_entry(query, judgments: dict[str, int]) -> EntryInput:
    """A query as a golden entry: its judged-relevant documents (grade > 0) expected, with their grades, and
    those judged not relevant (grade 0) kept as judged; a negative grade (in the pool, unjudged) is left out."""
    relevant = {d: g for d, g in judgments.items() if g > 0}
    return EntryInput(
        question=query.text,
        expected_document_ids=sorted(relevant),
        grades={**relevant, **{d: 0 for d, g in judgments.items() if g == 0}},
        reference_answer=query.reference_answer,
        key=query.id,
        answerable=query.answerable,
    )


class _CorpusFile:
    """corpus.jsonl read line by line, counting the bytes read (the import's progress)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = path.stat().st_size
        self.read = 0

    def lines(self) -> Iterator[bytes]:
        for line in beir.open_lines(self.path):
            self.read += len(line)
            yield line
