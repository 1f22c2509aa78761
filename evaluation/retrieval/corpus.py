"""What a collection's index is built from: its pages' texts and documents read from the database (in chunks,
as plain rows), the stamps of its content that tell a later version which pages changed, and a corpus updated
from an older version's (evaluation.retrieval.indexes decides when)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.db import connection, transaction
from django.db.models import CharField
from django.db.models.functions import Cast

from evaluation.retrieval.search.corpus import Corpus
from evaluation.retrieval.search.id_table import IdTable
from evaluation.retrieval.search.postings import Postings
from goldenset.models import Collection, Document, Page
from goldenset.temporal import ALWAYS, NEVER, TimeTable, Validity, micros
from goldenset.vocabulary.chunks import chunks


def page_text(title: str, number: int, text: str) -> str:
    """What is indexed for a page: the document's title with its first page, then the page's text."""
    return f"{title}\n{text}" if number == 1 and title else text


@dataclass
class ContentStamps:
    """What content an index version was built from: per page row its page id, document pk and number, and per
    document its last write (Document.updated_at, in microseconds). The next version's build compares its own
    with these to find the pages it must tokenize (an update, `_updated`). Saved as content.npz beside the
    index; search never reads it."""

    page_ids: np.ndarray  # int64 per page row
    page_documents: np.ndarray  # int64 document pk per page row
    page_numbers: np.ndarray  # int64 per page row
    document_pks: np.ndarray  # int64, ascending: the documents with pages
    document_updated: np.ndarray  # bytes: each one's updated_at as the database writes it as text

    def save(self, path: Path) -> None:
        if path.exists():
            return
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".content.", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, **{k: getattr(self, k) for k in self.__dataclass_fields__})
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    @classmethod
    def load(cls, path: Path) -> ContentStamps:
        with np.load(path, allow_pickle=False) as data:
            return cls(**{k: data[k] for k in cls.__dataclass_fields__})


@contextlib.contextmanager
def read_snapshot() -> Iterator[None]:
    """A transaction whose reads all see one snapshot of the database. SQLite's do. PostgreSQL's default (READ
    COMMITTED) gives each statement a snapshot of its own, so documents deleted while an index was being
    built made two of its reads disagree (and the build fail): REPEATABLE READ there. Inside a transaction
    already begun, that transaction's isolation holds."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # the transaction's first statement, as PostgreSQL requires
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def load_corpus(collection: Collection) -> Corpus:
    """The collection's pages ordered by document pk, then page number, and the content stamps of what was read,
    from one snapshot. The texts are not held: the corpus reads them from the database as a build goes
    (`Corpus.iter_texts`, a few thousand at a time), so a build's memory does not grow with the collection's
    text. A page whose document is written while the build reads is indexed as written; the write gave the
    collection a new content version, whose index is built (or updated) from the pages then."""
    with read_snapshot():
        pks, document_ids, validity = _documents(collection)
        all_pks, written = _document_writes(collection)
        pages = _int_rows(
            Page.objects.filter(document__collection=collection)
            .order_by("document_id", "number")
            .values_list("pk", "document_id", "number"),
            3,
        )
        pageless = list(
            Document.objects.filter(collection=collection, pages__isnull=True)
            .exclude(supersedes=[])
            .values_list("external_id", "valid_from", "valid_until", "supersedes")
        )
    validity.successors = [Validity(i, start, end, tuple(names or ())) for i, start, end, names in pageless]
    corpus = Corpus(
        texts=None,
        page_document=np.searchsorted(pks, pages[:, 1]).astype(np.int64),
        document_ids=document_ids,
        validity=validity,
        page_ids=pages[:, 0].copy(),
        successors=validity.successors,
    )
    corpus.stamps = ContentStamps(
        page_ids=pages[:, 0].copy(),
        page_documents=pages[:, 1].copy(),
        page_numbers=pages[:, 2].copy(),
        document_pks=pks,
        document_updated=written[np.searchsorted(all_pks, pks)] if len(pks) else np.zeros(0, dtype="S1"),
    )
    attach_text_source(corpus)
    return corpus


def _documents(collection: Collection) -> tuple[np.ndarray, IdTable, TimeTable]:
    """(pks ascending, external ids, their validity) of the collection's documents with pages, read a chunk at
    a time: arrays, not a Python object per document (the validity's successors are the caller's to add)."""
    rows = (
        Document.objects.filter(collection=collection, pages__isnull=False)
        .distinct()
        .order_by("pk")
        .values_list("pk", "external_id", "valid_from", "valid_until", "supersedes")
        .iterator(chunk_size=10_000)
    )
    pks, starts, ends = array("q"), array("q"), array("q")
    supersedes: dict[int, tuple[str, ...]] = {}

    def ids() -> Iterator[str]:
        for row, (pk, external_id, start, end, names) in enumerate(rows):
            pks.append(pk)
            starts.append(micros(start, ALWAYS))
            ends.append(micros(end, NEVER))
            if names:
                supersedes[row] = tuple(names)
            yield external_id

    table = IdTable.streamed(ids())
    time = TimeTable(_int64(starts), _int64(ends), supersedes)
    return _int64(pks), table, time


def _int64(values: array) -> np.ndarray:
    return np.frombuffer(values, dtype=np.int64).copy() if len(values) else np.zeros(0, np.int64)


def _int_rows(queryset, width: int) -> np.ndarray:
    """The rows of a values_list queryset of integers as an (n, width) int64 array, read from a chunked cursor
    (server-side on PostgreSQL) a chunk at a time: no Python tuple a row held."""
    sql, params = queryset.query.sql_with_params()
    chunks = []
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK_ROWS):
            chunks.append(np.array(rows, dtype=np.int64).reshape(len(rows), width))
    return np.concatenate(chunks) if chunks else np.zeros((0, width), dtype=np.int64)


CHUNK_ROWS = 20_000


def _document_writes(collection: Collection) -> tuple[np.ndarray, np.ndarray]:
    """(pks ascending, updated_at as the database writes it as text, in bytes) of the collection's documents:
    text, so that no datetime is parsed; read a chunk at a time."""
    queryset = (
        Document.objects.filter(collection=collection)
        .order_by("pk")
        .annotate(written=Cast("updated_at", CharField()))
        .values_list("pk", "written")
    )
    sql, params = queryset.query.sql_with_params()
    pks, texts = [], []
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK_ROWS):
            pks.append(np.array([r[0] for r in rows], dtype=np.int64))
            texts.append(np.array([str(r[1]).encode() for r in rows], dtype=bytes))
    if not pks:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype="S1")
    return np.concatenate(pks), np.concatenate(texts)


def corpus_update(collection: Collection, base: UpdateBase) -> Corpus:
    """The new version's corpus without texts, and its content stamps, reading only ids, numbers and write
    stamps of every page and document: a document written since the base version (or new) is read whole, the
    others are the base corpus's (id and validity)."""
    pages = _int_rows(
        Page.objects.filter(document__collection=collection)
        .order_by("document_id", "number")
        .values_list("pk", "document_id", "number"),
        3,
    )
    all_pks, written = _document_writes(collection)
    document_pks = np.unique(pages[:, 1])  # the documents with pages, ascending
    document_updated = written[np.searchsorted(all_pks, document_pks)]
    old = base.stamps
    at = np.minimum(np.searchsorted(old.document_pks, document_pks), max(len(old.document_pks) - 1, 0))
    same = (
        (old.document_pks[at] == document_pks) & (old.document_updated[at] == document_updated)
        if len(old.document_pks)
        else np.zeros(len(document_pks), dtype=bool)
    )
    read = {
        pk: (external_id, Validity(external_id, start, end, tuple(names or ())))
        for pk, external_id, start, end, names in Document.objects.filter(
            pk__in=document_pks[~same].tolist()
        ).values_list("pk", "external_id", "valid_from", "valid_until", "supersedes")
    }
    # the base's ids decoded once (a saved corpus maps them: an IdTable), not one lookup per kept document
    base_ids = list(base.corpus.document_ids)
    document_ids: list[str] = []
    fresh: dict[int, Validity] = {}  # row -> the validity of a document read anew
    for row, (pk, kept, old_row) in enumerate(
        zip(document_pks.tolist(), same.tolist(), at.tolist(), strict=True)
    ):
        if kept:
            document_ids.append(base_ids[old_row])
        else:
            external_id, fresh[row] = read[pk]
            document_ids.append(external_id)
    pageless = (
        Document.objects.filter(collection=collection, pages__isnull=True)
        .exclude(supersedes=[])
        .values_list("external_id", "valid_from", "valid_until", "supersedes")
    )
    successors = [Validity(i, start, end, tuple(names or ())) for i, start, end, names in pageless]
    # a base without time data kept no validity (Corpus): its documents' is the default
    base_time = base.corpus.validity
    validity = (
        base_time.carried(np.where(same, at, -1), fresh, successors)
        if isinstance(base_time, TimeTable)
        else TimeTable.of(len(document_pks), fresh, successors)
    )
    corpus = Corpus(
        texts=None,
        page_document=np.searchsorted(document_pks, pages[:, 1]).astype(np.int64),
        document_ids=document_ids,
        validity=validity,
        page_ids=pages[:, 0].copy(),
        successors=successors,
    )
    corpus.stamps = ContentStamps(
        page_ids=pages[:, 0].copy(),
        page_documents=pages[:, 1].copy(),
        page_numbers=pages[:, 2].copy(),
        document_pks=document_pks,
        document_updated=document_updated,
    )
    return corpus


def page_texts(page_ids: Sequence[int]) -> list[str]:
    """The indexed text of these pages, in their order ("" for a page deleted since the index was built)."""
    page_ids = [int(page_id) for page_id in page_ids]  # numpy integers are no SQL parameters
    found: dict[int, str] = {}
    for chunk in chunks(page_ids, 2000):
        rows = Page.objects.filter(pk__in=chunk).values_list("pk", "number", "text", "document__title")
        for pk, number, text, title in rows:
            found[pk] = page_text(title, number, text)
    return [found.get(page_id, "") for page_id in page_ids]


def attach_text_source(corpus: Corpus) -> None:
    """The corpus reads the texts it needs (a reranker's candidates) from the database, and holds none."""
    page_ids = corpus.page_ids
    corpus.text_source = lambda rows: page_texts([int(page_ids[r]) for r in rows])
    corpus.texts = None


@dataclass
class UpdateBase:
    """The newest older saved version an update can start from."""

    version: int
    postings: Postings
    first_order: np.ndarray
    stamps: ContentStamps
    corpus: Corpus  # its document ids and validity, per document row
