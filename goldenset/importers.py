"""Bringing content in and out: uploaded files, BEIR folders and okfsmith golden files.

Parsing is done by the pure readers (beir, golden_files); this module maps their records onto the services,
so the API, the admin and the management commands share one path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from django.db import transaction
from django.db.models import QuerySet

from goldenset import beir
from goldenset.errors import EvalsiteError
from goldenset.golden_files import GoldenRecord, dump_golden, parse_golden
from goldenset.models import Collection, GoldenEntry, Origin, Page, Tenant
from goldenset.sample import SamplePage, starter_records
from goldenset.services import (
    DocumentInput,
    EntryInput,
    collection_create,
    documents_upsert,
    golden_entries_add,
)
from goldenset.text import document_id_problem, find_nul

_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)


def documents_from_upload(name: str, content: bytes) -> list[DocumentInput]:
    """Documents from one uploaded file: BEIR corpus rows (.jsonl), or one document per .md / .txt file."""
    suffix = Path(name).suffix.lower()
    if not content.strip():
        raise EvalsiteError("empty-file", f"{name}: the file is empty.", details={"file": name})
    if suffix == ".jsonl":
        return [
            DocumentInput.from_text(
                id=row.id, title=row.title, text=row.text, metadata=row.metadata, source=name
            )
            for row in beir.read_corpus(content.splitlines(keepends=True), name=name)
        ]
    if suffix in (".md", ".markdown", ".txt"):
        try:
            text = content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise EvalsiteError(
                "invalid-file",
                f"{name}: not UTF-8 (byte {exc.start}).",
                details={"file": name, "byte": exc.start},
            ) from None
        if (nul := find_nul(text, json_escapes=False)) is not None:
            raise EvalsiteError(
                "invalid-file",
                f"{name} line {nul[0]}, column {nul[1]}: NUL characters are not allowed",
                details={"file": name, "line": nul[0], "column": nul[1]},
            )
        document_id = Path(name).stem
        if problem := document_id_problem(document_id):
            raise EvalsiteError(
                "invalid-file",
                f"{name}: the file name gives the document id {document_id!r}, which {problem}.",
                details={"file": name, "field": "id"},
            )
        heading = _HEADING.search(text) if suffix != ".txt" else None
        title = heading.group(1) if heading else document_id
        return [DocumentInput.from_text(id=document_id, title=title, text=text, source=name)]
    raise EvalsiteError(
        "unsupported-file",
        f"{name}: unsupported file type {suffix or '(none)'}; upload .jsonl (BEIR corpus rows), .md or .txt.",
        details={"file": name},
        status=415,
    )


# --- okfsmith golden files ---------------------------------------------------------------------------------


def _entry(record: GoldenRecord) -> EntryInput:
    return EntryInput(
        question=record.question,
        expected_document_ids=list(record.must_cite),
        reference_answer=record.expected_answer,
        key=record.id or "",
        tags=list(record.tags),
        answerable=record.answerable,
        grades=None,  # golden.json has no grades: an entry it replaces keeps its own
    )


def golden_file_import(*, collection: Collection, data: str | bytes, actor: str) -> dict[str, int]:
    """Load a golden.json into the collection, atomically; a record whose id exists replaces that entry, and
    so does a record without an id whose question an entry has (so an export imports back in place).

    Counts each record once: created, updated (its entry changed) or unchanged (its entry already said that)."""
    records = parse_golden(data)
    if not records:
        return {"records": 0, "created": 0, "updated": 0, "unchanged": 0}
    try:
        created, updated = golden_entries_add(
            collection=collection,
            entries=[_entry(r) for r in records],
            actor=actor,
            origin=Origin.IMPORTED,
            upsert_by_key=True,
            match_questions=True,
        )
    except EvalsiteError as exc:
        index = exc.details.get("index")
        if index is None:
            raise
        record = records[index]
        label = f'record {index} (id "{record.id}")' if record.id else f"record {index}"
        message = exc.message.split(": ", 1)[-1]
        raise EvalsiteError(
            exc.code, f"{label}: {message}", details={**exc.details, "id": record.id}, status=exc.status_code
        ) from None
    unchanged = len(records) - len(created) - len(updated)
    return {"records": len(records), "created": len(created), "updated": len(updated), "unchanged": unchanged}


def golden_entries_dump(entries: QuerySet[GoldenEntry]) -> str:
    """Entries as an okfsmith golden.json, oldest first."""
    return dump_golden(
        GoldenRecord(
            id=e.key or None,
            question=e.question,
            expected_answer=e.reference_answer,
            must_cite=tuple(e.expected_document_ids),
            tags=tuple(e.tags),
            answerable=e.answerable,
        )
        for e in entries.order_by("created_at", "id").iterator()
    )


def golden_file_export(*, collection: Collection) -> str:
    return golden_entries_dump(collection.golden_entries.all())


def golden_sample(*, collection: Collection, count: int = 10) -> str:
    """okfsmith's --init-sample: a starter golden.json from the collection's first page of each document."""
    pages = (
        Page.objects.filter(document__collection=collection, number=1)
        .select_related("document")
        .order_by("document__external_id")
    )
    sample = [SamplePage(p.document.external_id, p.document.title, p.text) for p in pages.iterator()]
    return dump_golden(starter_records(sample, count))


# --- BEIR folders ------------------------------------------------------------------------------------------


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
    paths = {name: folder / name for name in ("corpus.jsonl", "queries.jsonl")}
    qrels_path = next((folder / n for n in ("qrels.tsv", "qrels/test.tsv") if (folder / n).exists()), None)
    missing = [str(p) for p in paths.values() if not p.exists()]
    if missing or qrels_path is None:
        raise EvalsiteError(
            "beir-invalid",
            f"{folder}: missing {', '.join(missing) or 'qrels.tsv'}",
            details={"folder": str(folder)},
        )
    queries = list(beir.read_queries(beir.open_lines(paths["queries.jsonl"])))
    qrels = beir.read_qrels(beir.open_lines(qrels_path), name=qrels_path.name)
    judged = {d for judgments in qrels.values() for d in judgments}
    query_ids = {q.id for q in queries}
    unknown_queries = sorted(set(qrels) - query_ids)
    entries = []
    for query in queries:
        relevant = {d: g for d, g in qrels.get(query.id, {}).items() if g > 0}
        entries.append(
            EntryInput(
                question=query.text,
                expected_document_ids=sorted(relevant),
                grades=relevant,
                reference_answer=query.reference_answer,
                key=query.id,
                answerable=query.answerable,
            )
        )
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
