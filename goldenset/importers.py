"""Bringing content in and out: uploaded files, BEIR folders and okfsmith golden files.

Parsing is done by the pure readers (beir, golden_files); this module maps their records onto the services,
so the API, the admin and the management commands share one path.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from django.db import transaction

from evalsite.bounded_json import find_nul
from evalsite.errors import EvalsiteError
from evalsite.jobs.models import Job
from goldenset import beir
from goldenset.formats import ENTRY_FIELDS, Entry, read_entries
from goldenset.import_warnings import found_by_question, ignored_fields
from goldenset.models import Collection, GoldenEntry, Origin, Page
from goldenset.services import (
    DocumentInput,
    EntryInput,
    IngestOutcome,
    documents_upsert,
    golden_entries_add,
    ingest_as_job,
    ingest_job_create,
)
from goldenset.text import document_id_problem, question_hash
from goldenset.vocabulary.chunks import chunks

_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)


class Upload(Protocol):
    """An uploaded file as the upload reads it: Django's UploadedFile, or any binary file with a name."""

    name: str | None

    def read(self, size: int = -1, /) -> bytes: ...

    def seek(self, offset: int, whence: int = 0, /) -> int: ...

    def __iter__(self) -> Iterator[bytes]: ...


def documents_from_upload(name: str, content: bytes | Upload) -> Iterator[DocumentInput]:
    """Documents from one uploaded file: BEIR corpus rows (.jsonl), or one document per .md / .txt file.

    A .jsonl file is read line by line as the documents are taken (a generator: its errors, an empty file's
    included, are raised as it is read); a .md or .txt file, one document, is read and checked at once."""
    suffix = Path(name).suffix.lower()
    if suffix == ".jsonl":
        return _corpus_documents(name, io.BytesIO(content) if isinstance(content, bytes) else content)
    if suffix in (".md", ".markdown", ".txt"):
        return iter([_text_document(name, suffix, content if isinstance(content, bytes) else content.read())])
    raise EvalsiteError(
        "unsupported-file",
        f"{name}: unsupported file type {suffix or '(none)'}; upload .jsonl (BEIR corpus rows), .md or .txt.",
        details={"file": name},
        status=415,
    )


def _empty(name: str) -> EvalsiteError:
    return EvalsiteError("empty-file", f"{name}: the file is empty.", details={"file": name})


def _corpus_documents(name: str, file: Iterable[bytes]) -> Iterator[DocumentInput]:
    blank = True

    def lines() -> Iterator[bytes]:
        nonlocal blank
        for chunk in file:
            for line in chunk.splitlines(keepends=True):  # \r too, as bytes.splitlines ends a line
                blank = blank and not line.strip()
                yield line

    for row in beir.read_corpus(lines(), name=name):
        yield DocumentInput.from_text(
            id=row.id, title=row.title, text=row.text, metadata=row.metadata, source=name
        )
    if blank:
        raise _empty(name)


def _text_document(name: str, suffix: str, content: bytes) -> DocumentInput:
    if not content.strip():
        raise _empty(name)
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
    return DocumentInput.from_text(id=document_id, title=title, text=text, source=name)


def documents_upload(*, collection: Collection, files: Sequence[Upload], actor: str) -> IngestOutcome:
    """Uploaded files into the collection, all or nothing: now, or as an Ingest job (services.ingest_as_job).

    The files are checked first, a .jsonl line by line, keeping the documents only while they are few enough
    to be written now; past that the job gets the files' text (at most EVALSITE_MAX_REQUEST_BYTES) and reads
    them again as it writes, a batch at a time, so neither the request nor the worker holds every document.
    """
    names = [f.name or "" for f in files]
    source = "upload: " + ", ".join(names)
    kept: list[DocumentInput] = []
    count = 0
    for name, file in zip(names, files, strict=True):
        file.seek(0)
        for document in documents_from_upload(name, file):
            count += 1
            if not ingest_as_job(count):
                kept.append(document)
    if not count:
        raise EvalsiteError(
            "validation-error", "file: the upload holds no documents.", details={"field": "file"}
        )
    if not ingest_as_job(count):
        return IngestOutcome(
            result=documents_upsert(collection=collection, documents=kept, actor=actor, source=source)
        )
    kept.clear()
    texts = []
    for name, file in zip(names, files, strict=True):
        file.seek(0)
        texts.append({"name": name, "text": file.read().decode("utf-8")})  # checked above: UTF-8
    job_input = {"files": texts, "documents_total": count, "source": source}
    return IngestOutcome(job=ingest_job_create(collection=collection, input=job_input, actor=actor))


def ingest_job(job: Job, progress: Callable[[int, int], None]) -> dict[str, int]:
    """The Ingest job, whichever request queued it: the documents of a JSON body (content.documents_ingest),
    given whole, or the uploaded files (documents_upload), read again as they are written. Either was checked
    when the job was created; they are written a batch at a time, audited as whoever launched the job."""
    if job.collection is None:
        raise EvalsiteError("collection-gone", "The collection was deleted before the import ran.")
    documents: Iterable[DocumentInput]
    if "files" in job.input:
        documents = itertools.chain.from_iterable(
            documents_from_upload(f["name"], f["text"].encode("utf-8")) for f in job.input["files"]
        )
    else:
        documents = [DocumentInput.from_job_input(d) for d in job.input["documents"]]
    total = int(job.input.get("documents_total") or 0)  # the files' count, made by the request that read them
    return documents_upsert(
        collection=job.collection,
        documents=documents,
        actor=str(job.input.get("actor") or "job"),
        source=" ".join(filter(None, [job.input.get("source", ""), f"job {job.pk}"])),
        progress=lambda done, of: progress(done, of or total),
    )


# --- okfsmith golden files ---------------------------------------------------------------------------------


class _Preview(Exception):
    """Rolls a dry run's writes back, carrying what they would have been."""

    def __init__(self, result: dict[str, Any]):
        self.result = result


def golden_file_import(*, collection: Collection, data: str | bytes, actor: str) -> dict[str, int]:
    """Load an okfsmith golden.json into the collection (golden_import's okfsmith case, counts only)."""
    result = golden_import(collection=collection, fmt="okfsmith", data=data, actor=actor)
    return {name: result[name] for name in ("records", "created", "updated", "unchanged")}


def golden_import(
    *,
    collection: Collection,
    fmt: str,
    data: str | bytes,
    actor: str,
    qrels: str | bytes | None = None,
    create_documents: bool = False,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Load a golden-set file of any format (goldenset.formats) into the collection, atomically: all or nothing.

    An entry whose key exists replaces that entry, and so does one without a key whose question an entry has
    (so an export imports back in place). Reference passages given by text only (Ragas, DeepEval) are matched
    to the collection's pages holding that text, or, with `create_documents`, created as documents of their
    own (`context-<sha1>`); otherwise they are named in the warnings. With `dry_run` nothing is written: the
    counts say what would be created, updated and left unchanged (the dashboard's preview). Errors name the
    record or line (`entry.where`)."""
    entries = read_entries(fmt, data, qrels=qrels)
    replaced = _replaced(collection, entries)
    entries = _keep_what_the_file_lacks(entries, replaced)
    warnings: list[str] = [*ignored_fields(entries), *found_by_question(entries, replaced)]
    result: dict[str, Any] = {"format": fmt, "records": len(entries), "created": 0, "updated": 0, "unchanged": 0,
                              "documents_created": 0, "warnings": warnings}  # fmt: skip
    if not entries:
        return result
    try:
        with transaction.atomic():
            expected, created_documents = _context_documents(
                collection, entries, create_documents, actor, warnings
            )
            try:
                created, updated = golden_entries_add(
                    collection=collection,
                    entries=[_input(e, ids) for e, ids in zip(entries, expected, strict=True)],
                    actor=actor,
                    origin=Origin.IMPORTED,
                    upsert_by_key=True,
                    match_questions=True,
                )
            except EvalsiteError as exc:
                raise _located(exc, entries) from None
            result.update(
                created=len(created),
                updated=len(updated),
                unchanged=len(entries) - len(created) - len(updated),
                documents_created=created_documents,
            )
            if dry_run:
                result["rows"] = _preview_rows(entries, expected, replaced, created, updated)
                raise _Preview(result)
    except _Preview as preview:
        return {**preview.result, "dry_run": True}
    return result


PREVIEW_ROWS = 5  # the first entries a preview shows as they will be stored


def _preview_rows(entries, expected, replaced, created, updated) -> list[dict[str, Any]]:
    """The first PREVIEW_ROWS entries as they will be stored, each with what the import does to it."""
    changed = {g.pk for g in updated}
    rows = []
    for entry, ids, current in itertools.islice(zip(entries, expected, replaced, strict=True), PREVIEW_ROWS):
        action = "create" if current is None else "update" if current.pk in changed else "unchanged"
        rows.append(
            {
                "where": entry.where,
                "action": action,
                "key": current.key if current is not None else entry.key,
                "question": entry.question.strip(),
                "expected_document_ids": list(dict.fromkeys(ids)),
                "reference_answer": entry.reference_answer,
                "tags": list(dict.fromkeys(entry.tags)),
                "answerable": entry.answerable,
            }
        )
    return rows


def _located(exc: EvalsiteError, entries: Sequence[Entry]) -> EvalsiteError:
    """The service's error with each entry named as the file names it (`line 3`, `record 2`), not by index."""

    def where(message: str, details: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        index = details.get("index")
        if index is None:
            return message, details
        entry = entries[index]
        # "entries[3].expected_document_ids: ..." -> "line 5: expected_document_ids: ...": the field stays named.
        prefix = f"entries[{index}]."
        rest = message[len(prefix) :] if message.startswith(prefix) else message.split(": ", 1)[-1]
        # "the question repeats entries[0]" -> "... repeats line 2": another entry is named as the file names it.
        rest = _OTHER_ENTRY.sub(lambda m: _where_of(entries, int(m.group(1)), m.group(0)), rest)
        located = f"{entry.where}: {rest}"
        return located, {**details, "where": entry.where, "id": entry.key or None}

    listed = exc.details.get("errors")
    message, details = where(exc.message, exc.details)
    if listed:
        items = []
        for item in listed:
            text, rest = where(item["message"], {k: v for k, v in item.items() if k != "message"})
            items.append({**rest, "message": text})
        first = "; ".join(i["message"] for i in items[:3]) + (" ..." if len(items) > 3 else "")
        message = f"{exc.message.split(':', 1)[0]}: {first}"
        details = {**details, "errors": items}
    elif details is exc.details:
        return exc
    return EvalsiteError(exc.code, message, details=details, status=exc.status_code)


_OTHER_ENTRY = re.compile(r"\bentries\[(\d+)\]")


def _where_of(entries: Sequence[Entry], index: int, default: str) -> str:
    return entries[index].where if 0 <= index < len(entries) and entries[index].where else default


def _replaced(collection: Collection, entries: Sequence[Entry]) -> list[GoldenEntry | None]:
    """The entry each would replace: the one with its key, else the one with its question (or None)."""
    by_key: dict[str, GoldenEntry] = {}
    by_hash: dict[str, GoldenEntry] = {}
    for chunk in chunks(sorted({e.key for e in entries if e.key})):
        by_key.update((g.key, g) for g in collection.golden_entries.filter(key__in=chunk))
    for chunk in chunks(sorted({question_hash(e.question) for e in entries})):
        by_hash.update(
            (g.question_hash, g) for g in collection.golden_entries.filter(question_hash__in=chunk)
        )
    return [(by_key.get(e.key) if e.key else None) or by_hash.get(question_hash(e.question)) for e in entries]


def _keep_what_the_file_lacks(entries: list[Entry], replaced: Sequence[GoldenEntry | None]) -> list[Entry]:
    """Each entry with the fields its file does not hold (Entry.carried) as the entry it replaces has them: a
    TREC file's entry keeps its reference answer and tags."""
    out = []
    for entry, current in zip(entries, replaced, strict=True):
        if entry.carried is None or entry.carried >= ENTRY_FIELDS:
            out.append(entry)
            continue
        kept: dict[str, Any] = {}
        for name in ENTRY_FIELDS - entry.carried:
            if name == "grades":
                kept["grades"] = None  # golden_entries_add keeps the replaced entry's grades
            elif name == "key":
                continue  # no key: the entry is matched by its question and keeps its own key
            elif current is not None:
                value = getattr(current, name)
                kept[name] = tuple(value) if isinstance(value, list) else value
        out.append(replace(entry, **kept))
    return out


def _input(entry: Entry, expected: tuple[str, ...]) -> EntryInput:
    # a grade of 0 is a judgment (judged not relevant) whether or not the document is expected: kept
    grades = (
        None if entry.grades is None else {d: g for d, g in entry.grades.items() if d in expected or g == 0}
    )
    return EntryInput(
        question=entry.question,
        expected_document_ids=list(expected),
        reference_answer=entry.reference_answer,
        key=entry.key,
        tags=list(entry.tags),
        answerable=entry.answerable,
        grades=grades,
    )


def _context_documents(
    collection: Collection, entries: Sequence[Entry], create: bool, actor: str, warnings: list[str]
) -> tuple[list[tuple[str, ...]], int]:
    """Each entry's expected documents: its ids, else the documents of its reference passages (matched to a
    page holding the passage's text, or created when `create`)."""
    out: list[tuple[str, ...]] = []
    new_documents: dict[str, str] = {}
    holder: dict[str, str | None] = {}  # passage text -> the document whose page holds it (None: no page)
    unmatched = 0
    for entry in entries:
        if entry.expected_document_ids or not entry.contexts:
            out.append(entry.expected_document_ids)
            continue
        ids: list[str] = []
        for text in entry.contexts:
            snippet = " ".join(text.split())
            if snippet and snippet not in holder:  # one search of the pages per distinct passage
                holder[snippet] = _page_holding(collection, snippet)
            found = holder.get(snippet) if snippet else None
            if found is not None:
                ids.append(found)
            elif create and snippet:
                document_id = "context-" + hashlib.sha1(snippet.encode()).hexdigest()[:12]
                new_documents.setdefault(document_id, text)
                ids.append(document_id)
            else:
                unmatched += 1
        out.append(tuple(dict.fromkeys(ids)))
    if unmatched:
        warnings.append(
            f"{unmatched} reference passages match no page of {collection.slug} (by their text) and were left "
            "out of the expected documents; import with create_documents to add them as documents."
        )
    if not new_documents:
        return out, 0
    written = documents_upsert(
        collection=collection,
        documents=[DocumentInput.from_text(id=d, title="", text=t) for d, t in new_documents.items()],
        actor=actor,
    )
    return out, written["created"]


CANDIDATE_PAGES = 200  # pages holding a passage's two longest words, read to find the one holding it all


def _page_holding(collection: Collection, snippet: str) -> str | None:
    """The first document (by id, then page) with a page holding the passage's text, whitespace aside: a passage
    copied from a page keeps its words but not always its line breaks. The database finds the pages holding the
    passage's two longest words (no whitespace in them), and each is compared with its whitespace collapsed. As
    pages are cut at EVALSITE_PAGE_CHARS, a passage's first 2,000 characters are what must be on one page."""
    snippet = snippet[:2000].strip()
    longest = sorted(set(snippet.split(" ")), key=lambda w: (-len(w), w))[:2]
    pages = Page.objects.filter(document__collection=collection)
    for word in longest:
        pages = pages.filter(text__contains=word)
    rows = pages.order_by("document__external_id", "number").values_list("document__external_id", "text")
    for document_id, text in rows[:CANDIDATE_PAGES]:
        if snippet in " ".join(text.split()):
            return document_id
    return None
