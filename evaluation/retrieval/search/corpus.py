"""A collection's pages as the search engine holds them: grouped by document, each document's external id and
validity, and the order trec_eval breaks ties in; arrays, not an object a page or a document. Plain Python +
numpy: no Django import."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from evaluation.retrieval.search.id_table import IdTable
from goldenset.temporal import TimeTable, Validity, has_temporal_data

TEXT_CHUNK = 2000  # page texts read at a time while the postings are built


@dataclass
class Corpus:
    """A collection's pages, grouped by document (a document's pages are contiguous rows).

    The page texts are needed to build an index, not to search it: a loaded index reads the few it needs
    (the candidates of a reranker) through `text_source`, rows -> texts, and holds none of them."""

    texts: list[str] | None  # what is indexed per page; None once only text_source can give them
    page_document: np.ndarray  # page row -> document row
    # document row -> external id: a list when built, a mapped IdTable when read back (no string per document)
    document_ids: Sequence[str]
    # the documents' validity: a Validity per row as given (or a TimeTable), a TimeTable once derived (arrays),
    # None when no document has time data (every document always current)
    validity: list[Validity] | TimeTable | None
    # page row -> the caller's page id (optional); held as an int64 array
    page_ids: Sequence[int] | np.ndarray = field(default_factory=list)
    # Documents without pages: never results, but a successor among them still supersedes what it names.
    successors: list[Validity] = field(default_factory=list)
    # What the caller needs to know of the content indexed (evaluation.retrieval.indexes: the content stamps an update
    # compares); opaque here, and never saved with an index.
    stamps: Any = field(default=None, repr=False, compare=False)
    text_source: Callable[[Sequence[int]], list[str]] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids = self.document_ids
        order = (
            ids.byte_order()
            if isinstance(ids, IdTable)
            else sorted(range(len(ids)), key=lambda i: ids[i].encode("utf-8", "surrogatepass"))
        )
        # Rank of each id in byte order: trec_eval breaks score ties by docno, descending (strcmp).
        id_rank = np.empty(len(order), dtype=np.int64)
        id_rank[order] = np.arange(len(order))
        self._derive(id_rank)

    @classmethod
    def restored(
        cls,
        page_document: np.ndarray,
        document_ids: Sequence[str],
        validity: list[Validity] | TimeTable | None,
        page_ids: np.ndarray,
        successors: list[Validity],
        id_rank: np.ndarray,
        document_starts: np.ndarray | None = None,
    ) -> Corpus:
        """A corpus as an index saved it (index_format): no texts, and the ids' ranks and the documents' first
        rows as computed when it was built (mapped, shared by every process), not derived again."""
        corpus = cls.__new__(cls)
        corpus.texts, corpus.stamps, corpus.text_source = None, None, None
        corpus.page_document, corpus.document_ids, corpus.page_ids = page_document, document_ids, page_ids
        corpus.validity, corpus.successors = validity, successors
        corpus._derive(id_rank, document_starts)
        return corpus

    def _derive(self, id_rank: np.ndarray, document_starts: np.ndarray | None = None) -> None:
        """What searches read besides the fields: each id's rank in byte order (`id_rank`), document bounds."""
        self.id_rank = id_rank
        self.size = len(self.page_document)
        if document_starts is None:
            changes = np.r_[True, np.diff(self.page_document) != 0] if self.size else np.zeros(0, dtype=bool)
            document_starts = np.flatnonzero(changes).astype(np.int64)
        self.document_starts = document_starts
        self.one_page_each = self.size == len(self.document_ids)
        # page row -> document row for the search kernel (empty when every page is its own document)
        self.page_document_rows = (
            np.zeros(0, dtype=np.int64)
            if self.one_page_each
            else np.asarray(self.page_document, dtype=np.int64)
        )
        self.validity = self._time_table(self.validity)
        self.temporal = self.validity is not None
        self.page_ids = np.asarray(self.page_ids, dtype=np.int64)  # 8 bytes a page, not a Python int each

    def _time_table(self, validity: list[Validity] | TimeTable | None) -> TimeTable | None:
        """The documents' validity as arrays, its supersessions resolved to rows; None without time data (only
        time filters read it: nothing a document for a search that never needs it)."""
        if isinstance(validity, TimeTable):
            table = replace(validity, successors=self.successors, pairs=None)
        else:
            given = validity or []
            rows = {row: v for row, v in enumerate(given) if has_temporal_data([v])}
            table = TimeTable.of(len(self.document_ids), rows, self.successors)
        if not table.temporal:
            return None
        table.resolve(self.rows_of, self.document_ids)
        return table

    def rows_of(self, ids: Collection[str]) -> dict[str, int]:
        """The rows of those of these external ids that the corpus holds: a binary search each over the ids in
        byte order (the order `id_rank` gives), each step decoding one id."""
        document_ids = self.document_ids
        order = np.empty(len(self.id_rank), dtype=np.int64)
        order[self.id_rank] = np.arange(len(order))
        found = {}
        for wanted in ids:
            key = wanted.encode("utf-8", "surrogatepass")
            low, high = 0, len(order)
            while low < high:
                middle = (low + high) // 2
                if document_ids[int(order[middle])].encode("utf-8", "surrogatepass") < key:
                    low = middle + 1
                else:
                    high = middle
            if low < len(order) and document_ids[int(order[low])] == wanted:
                found[wanted] = int(order[low])
        return found

    def ids_of(self, rows: np.ndarray) -> list[str]:
        """The external ids of these document rows, in their order."""
        ids = self.document_ids
        if isinstance(ids, IdTable):
            return ids.take(rows)
        return [ids[row] for row in rows.tolist()]

    def texts_of(self, rows: Sequence[int]) -> list[str]:
        if self.texts is not None:
            return [self.texts[r] for r in rows]
        if self.text_source is None:
            raise LookupError("this corpus keeps no page texts and has no source for them")
        return self.text_source(rows)

    def all_texts(self) -> list[str]:
        return self.texts if self.texts is not None else self.texts_of(range(self.size))

    def iter_texts(self, chunk: int = TEXT_CHUNK) -> Iterator[str]:
        """Every page's text in row order, read `chunk` at a time (a build holds no more of them)."""
        for start in range(0, self.size, chunk):
            yield from self.texts_of(range(start, min(start + chunk, self.size)))
