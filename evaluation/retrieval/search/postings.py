"""An inverted index as flat arrays: what BM25 search reads, and nothing else (no token lists, no texts).

Columns are terms (CSC): `indptr[t]:indptr[t + 1]` slices `rows` (page rows, ascending) and `codes` (each
posting's (tf, page length) pair, by its number in `code_tfs` and `code_lengths`, the index's distinct pairs
in ascending order, the first of them (0, 0): no posting). A BM25 weight depends on the posting only through
that pair, so a variant's weights are a table of a few thousand doubles (bm25.tf_parts) times the term's idf,
computed as a query reads the posting, and the index holds 6 bytes a posting (4 for the row, 2 for the code;
4 when a corpus has more than 65,536 pairs), not a double. Terms are looked up by a 64-bit hash of their UTF-8
bytes (sorted, so a binary search finds a term's column) and confirmed against their stored bytes, so the
index needs no Python dict: a process opens the arrays with mmap and every process shares one copy through
the page cache. The common terms (on at least a quarter of the pages, the 64 most frequent) also keep their
codes as dense rows, one a term (`common_terms`, `common_codes`: 0 where a page lacks the term), which a
query adds page after page.

`first_seen[t]` is the term's rank in the order terms first occur in the corpus (page by page, word by word):
rank-bm25 sums its idfs in that order, and so must the okapi variant to reproduce its scores bit for bit.

Builds are build.py's (segments merged in bounded memory). Incremental updates (`merge_postings`): a new
version's postings are the old ones with the rows of removed pages dropped, the kept rows renumbered, and the
postings of the added pages (tokenized alone) merged in, all with numpy (no Python loop over postings): the
arrays come out equal, bit for bit, to those a build makes from the whole new corpus. `first_seen` is
recomputed from each term's first posting: its page row and `first_order`, the term's rank among its page's
distinct words in order of first occurrence (kept per posting in `first_order.npy`, a file only an update
reads; search never maps it).
Plain Python + numpy: no Django import.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = 2  # 2: (tf, length) codes instead of tfs, common terms' dense codes
FIRST_ORDER = "first_order"
_COLUMN_CACHE = 1 << 17


def term_hash(term: str, salt: int = 0) -> int:
    """A stable 64-bit hash of a term (Python's own hash() changes from process to process)."""
    digest = hashlib.blake2b(
        term.encode("utf-8", "surrogatepass"), digest_size=8, salt=salt.to_bytes(8, "little")
    )
    return int.from_bytes(digest.digest(), "little")


@dataclass
class Postings:
    indptr: np.ndarray  # int64, terms + 1
    rows: np.ndarray  # int32, one per posting
    codes: np.ndarray  # uint16 (uint32 past 65,536 distinct pairs): the posting's (tf, page length) pair
    lengths: np.ndarray  # int32, tokens per page
    term_hashes: np.ndarray  # uint64, ascending: a term's column is its position here
    term_offsets: np.ndarray  # int64, terms + 1: term t's UTF-8 bytes are term_bytes[offsets[t]:offsets[t+1]]
    term_bytes: np.ndarray  # uint8
    first_seen: np.ndarray  # int64 per term: rank in first-occurrence order
    code_tfs: np.ndarray  # uint32 per code, ascending pairs (tf, length), code 0 = (0, 0)
    code_lengths: np.ndarray  # int32 per code
    common_terms: np.ndarray  # int64, ascending: the columns kept as dense rows too
    common_codes: np.ndarray  # (common terms, pages), the codes' dtype: a page's code for the term, or 0
    salt: int = 0  # of term_hash: a build that met a collision chose another
    # Per posting: the term's rank among its page's distinct words in first-occurrence order (what an update
    # needs to recompute first_seen). Saved as first_order.npy, never mapped by open(): see open_first_order.
    _first_order: np.ndarray | None = field(default=None, repr=False, compare=False)
    # Columns of the tokens queries asked for (-1: not in the index), bounded: a per-process memo.
    _columns: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    # The folder the arrays are mapped from (None: in memory).
    _folder: Path | None = field(default=None, repr=False, compare=False)

    @property
    def folder(self) -> Path | None:
        return self._folder

    @property
    def size(self) -> int:
        return len(self.lengths)

    @property
    def terms(self) -> int:
        return len(self.term_hashes)

    @property
    def tfs(self) -> np.ndarray:
        """Every posting's term frequency (a new array the size of the postings: updates and tests read it)."""
        return np.asarray(self.code_tfs)[self.codes]

    def tf_at(self, posting: int) -> int:
        return int(self.code_tfs[int(self.codes[posting])])

    @property
    def document_frequency(self) -> np.ndarray:
        return np.diff(self.indptr)

    def document_frequency_of(self, columns: np.ndarray) -> np.ndarray:
        return self.indptr[columns + 1] - self.indptr[columns]

    def document_frequencies(self, tokens: Sequence[str]) -> dict[str, int]:
        """How many pages hold each of these tokens; tokens not in the index are left out."""
        columns = self.term_ids(list(dict.fromkeys(tokens)))
        frequencies = self.document_frequency_of(columns).tolist()
        return {self.term(c): f for c, f in zip(columns.tolist(), frequencies, strict=True)}

    def term_ids(self, tokens: Sequence[str]) -> np.ndarray:
        """The columns of these tokens, in their order, repeats kept; tokens not in the index are dropped."""
        cache = self._columns
        found = {t: cache.get(t) for t in tokens}
        missing = [t for t, column in found.items() if column is None]
        if missing:
            looked_up = dict(zip(missing, self._look_up(missing), strict=True))
            found.update(looked_up)
            if len(cache) + len(missing) > _COLUMN_CACHE:
                cache.clear()  # other threads read their own `found`: clearing only costs lookups again
            cache.update(looked_up)
        return np.array([c for t in tokens if (c := found[t]) is not None and c >= 0], dtype=np.int64)

    def _look_up(self, tokens: list[str]) -> list[int]:
        """Each token's column by binary search on the hashes, confirmed on the stored bytes; -1 if absent."""
        if not self.terms:
            return [-1] * len(tokens)
        hashes = np.fromiter((term_hash(t, self.salt) for t in tokens), dtype=np.uint64, count=len(tokens))
        at = np.searchsorted(self.term_hashes, hashes).tolist()
        return [
            p if p < self.terms and int(self.term_hashes[p]) == h and self.term(p) == token else -1
            for token, p, h in zip(tokens, at, hashes.tolist(), strict=True)
        ]

    def term(self, column: int) -> str:
        start, end = int(self.term_offsets[column]), int(self.term_offsets[column + 1])
        return self.term_bytes[start:end].tobytes().decode("utf-8", "surrogatepass")

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name.startswith("_"):
                continue
            if isinstance(value, np.ndarray):
                np.save(folder / f"{item.name}.npy", value, allow_pickle=False)
        if self._first_order is not None:
            np.save(folder / f"{FIRST_ORDER}.npy", self._first_order, allow_pickle=False)
        (folder / "postings.json").write_text(json.dumps({"format": FORMAT, "salt": self.salt}))

    @classmethod
    def open(cls, folder: Path, mmap: bool = True) -> Postings:
        meta = json.loads((folder / "postings.json").read_text())
        if meta.get("format") != FORMAT:
            raise ValueError(f"postings format {meta.get('format')!r}, expected {FORMAT}")
        arrays: dict[str, Any] = {
            item.name: (
                load_mapped(folder / f"{item.name}.npy")
                if mmap
                else np.load(folder / f"{item.name}.npy", allow_pickle=False)
            )
            for item in fields(cls)
            if item.name != "salt" and not item.name.startswith("_")
        }
        return cls(**arrays, salt=int(meta["salt"]), _folder=folder if mmap else None)


def open_first_order(folder: Path) -> np.ndarray | None:
    """The first_order array saved with the postings in `folder` (mapped), or None when absent."""
    path = folder / f"{FIRST_ORDER}.npy"
    return load_mapped(path) if path.is_file() else None


def load_mapped(path: Path) -> np.ndarray:
    """A saved array mapped read-only, as a plain ndarray view of the mapping (which it keeps open): numba's
    dispatcher types an exact ndarray on its fast path, a np.memmap on a slower one at every kernel call."""
    return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))


@dataclass
class _Collected:
    """Token lists counted page by page: terms in first-seen order, and per posting (page by page, each page's
    words in first-occurrence order) the term's first-seen id, its count and its rank within the page."""

    terms: list[str]
    column: np.ndarray  # int64 first-seen term id per posting
    counts: np.ndarray  # uint32
    lengths: np.ndarray  # int32 per page
    distinct: np.ndarray  # int32 per page

    @property
    def first_order(self) -> np.ndarray:
        return _ranks_within(self.distinct)


class Collector:
    """Counts token lists page by page into a _Collected (build.py fills one a segment)."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.column: array = array("i")  # first-seen term id per posting
        self.counts: array = array("I")
        self.lengths: array = array("i")
        self.distinct: array = array("i")

    def add(self, tokens: Sequence[str]) -> None:
        counted = Counter(tokens)  # insertion order: the page's words in first-occurrence order
        vocabulary = self.vocabulary
        self.lengths.append(len(tokens))
        self.distinct.append(len(counted))
        self.column.extend([vocabulary.setdefault(t, len(vocabulary)) for t in counted])
        self.counts.extend(counted.values())

    def done(self) -> _Collected:
        column, counts, lengths, distinct = self.column, self.counts, self.lengths, self.distinct
        return _Collected(
            terms=list(self.vocabulary),
            column=np.frombuffer(column, dtype=np.int32).astype(np.int64) if len(column) else _EMPTY_I64,
            counts=np.frombuffer(counts, dtype=np.uint32).copy() if len(counts) else np.zeros(0, np.uint32),
            lengths=np.frombuffer(lengths, dtype=np.int32).copy() if len(lengths) else np.zeros(0, np.int32),
            distinct=np.frombuffer(distinct, dtype=np.int32).copy()
            if len(distinct)
            else np.zeros(0, np.int32),
        )


def _collect(token_lists: Iterable[Sequence[str]]) -> _Collected:
    collector = Collector()
    for tokens in token_lists:
        collector.add(tokens)
    return collector.done()


_EMPTY_I64 = np.zeros(0, dtype=np.int64)


def _ranks_within(sizes: np.ndarray) -> np.ndarray:
    """0, 1, ..., size - 1 for each size in turn (a posting's rank within its page)."""
    total = int(sizes.sum())
    starts = np.repeat(np.cumsum(sizes, dtype=np.int64) - sizes, sizes)
    return (np.arange(total, dtype=np.int64) - starts).astype(_rank_type(sizes))


def _rank_type(sizes: np.ndarray) -> type:
    return np.uint16 if not len(sizes) or int(sizes.max()) <= 2**16 else np.uint32


COMMON_SHARE = 4  # a term on at least 1/COMMON_SHARE of the pages is common: its codes kept as a dense row
MAX_COMMON = 64  # at most this many (the most frequent)


def pair_keys(tfs: np.ndarray, page_lengths: np.ndarray) -> np.ndarray:
    """Each (tf, page length) pair as one uint64 (tf in the high half): ascending keys order the pairs by tf,
    then length."""
    return (np.asarray(tfs, dtype=np.uint64) << np.uint64(32)) | np.asarray(page_lengths, dtype=np.uint64)


def code_table(keys: np.ndarray) -> np.ndarray:
    """The distinct pair keys, ascending, the no-posting pair (0, 0) first: a posting's code is its key's
    position here."""
    return np.union1d(np.asarray(keys, dtype=np.uint64), np.zeros(1, dtype=np.uint64))


def code_type(table: np.ndarray) -> type:
    return np.uint16 if len(table) <= 1 << 16 else np.uint32


def table_pairs(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tf, length) of each code."""
    return (table >> np.uint64(32)).astype(np.uint32), (table & np.uint64(0xFFFFFFFF)).astype(np.int32)


def common_columns(
    df: np.ndarray, pages: int, share: int = COMMON_SHARE, most: int = MAX_COMMON
) -> np.ndarray:
    """The columns, ascending, of the terms on at least 1/share of the pages (the `most` most frequent)."""
    common = np.flatnonzero(np.asarray(df) * share >= max(pages, 1))
    if len(common) > most:
        common = np.sort(common[np.argsort(-np.asarray(df)[common], kind="stable")[:most]])
    return common.astype(np.int64)


def dense_codes(indptr, rows, codes, common: np.ndarray, pages: int) -> np.ndarray:
    """The common terms' codes as dense rows (0 where a page lacks the term), one row a term."""
    out = np.zeros((len(common), pages if len(common) else 0), dtype=np.asarray(codes).dtype)
    for j, column in enumerate(common.tolist()):
        lo, hi = int(indptr[column]), int(indptr[column + 1])
        out[j, np.asarray(rows[lo:hi])] = codes[lo:hi]
    return out


@dataclass(frozen=True)
class _Union:
    """The vocabulary of an update: the old terms (columns by hash) and the added pages' terms not among them,
    each old, fresh and added term's column in it."""

    old_hashes: np.ndarray
    fresh: np.ndarray  # the added pages' terms that are new, by their index in the delta
    fresh_order: np.ndarray  # the order that sorts them by hash
    fresh_sorted: np.ndarray  # their hashes, sorted
    of_old: np.ndarray
    of_fresh: np.ndarray
    of_delta: np.ndarray
    size: int


def _union_vocabulary(old: Postings, delta) -> _Union:
    old_hashes = np.asarray(old.term_hashes)
    hashes = np.fromiter((term_hash(t, 0) for t in delta.terms), dtype=np.uint64, count=len(delta.terms))
    at = np.searchsorted(old_hashes, hashes)
    found = at < len(old_hashes)
    found[found] = old_hashes[at[found]] == hashes[found]
    for i in np.flatnonzero(found).tolist():
        if old.term(int(at[i])) != delta.terms[i]:
            raise MergeRefused("a new term's hash is an old term's")
    fresh = np.flatnonzero(~found)
    fresh_hashes = hashes[fresh]
    fresh_order = np.argsort(fresh_hashes, kind="stable")
    fresh_sorted = fresh_hashes[fresh_order]
    if len(fresh_sorted) > 1 and not np.all(np.diff(fresh_sorted) != 0):
        raise MergeRefused("two new terms share a hash")
    # Union columns: an old column moves right by the new hashes below it; a new term's column likewise.
    of_old = np.arange(len(old_hashes), dtype=np.int64) + np.searchsorted(fresh_sorted, old_hashes)
    of_fresh = np.arange(len(fresh_sorted), dtype=np.int64) + np.searchsorted(old_hashes, fresh_sorted)
    of_delta = np.empty(len(delta.terms), dtype=np.int64)
    of_delta[found] = of_old[at[found]]
    of_delta[fresh[fresh_order]] = of_fresh
    return _Union(
        old_hashes,
        fresh,
        fresh_order,
        fresh_sorted,
        of_old,
        of_fresh,
        of_delta,
        len(old_hashes) + len(fresh_sorted),
    )


def _union_term_bytes(old: Postings, delta, u: _Union, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, bytes) of the live columns' terms: the old terms' slices of the old bytes, the new ones'
    appended after them."""
    fresh_encoded = [delta.terms[i].encode("utf-8", "surrogatepass") for i in u.fresh[u.fresh_order].tolist()]
    old_offsets = np.asarray(old.term_offsets)
    starts = np.empty(u.size, dtype=np.int64)
    term_lengths = np.empty(u.size, dtype=np.int64)
    starts[u.of_old] = old_offsets[:-1]
    term_lengths[u.of_old] = np.diff(old_offsets)
    fresh_lengths = np.fromiter(map(len, fresh_encoded), dtype=np.int64, count=len(fresh_encoded))
    starts[u.of_fresh] = len(old.term_bytes) + np.cumsum(fresh_lengths) - fresh_lengths
    term_lengths[u.of_fresh] = fresh_lengths
    source = np.concatenate([np.asarray(old.term_bytes), np.frombuffer(b"".join(fresh_encoded), np.uint8)])
    offsets = np.zeros(int(live.sum()) + 1, dtype=np.int64)
    np.cumsum(term_lengths[live], out=offsets[1:])
    gather = np.repeat(starts[live] - offsets[:-1], term_lengths[live]) + np.arange(offsets[-1])
    return offsets, source[gather]


class _Interleave:
    """Where each added posting goes among the kept ones, both in (column, row) order: `merged` interleaves a
    kept array and an added one (in the delta's order) the same way."""

    def __init__(self, kept_columns, kept_rows, delta_columns, delta_rows, size: int) -> None:
        stride = np.int64(max(size, 1))
        delta_keys = delta_columns * stride + delta_rows
        self.by_key = np.argsort(delta_keys, kind="stable")
        delta_keys = delta_keys[self.by_key]
        kept_keys = kept_columns * stride + kept_rows
        self.at_out = np.searchsorted(kept_keys, delta_keys) + np.arange(len(delta_keys), dtype=np.int64)
        self.total = len(kept_rows) + len(delta_keys)
        self.is_old = np.ones(self.total, dtype=bool)
        self.is_old[self.at_out] = False

    def merged(self, old_values: np.ndarray, delta_values: np.ndarray, dtype) -> np.ndarray:
        out = np.empty(self.total, dtype=dtype)
        out[self.is_old] = old_values
        out[self.at_out] = delta_values[self.by_key]
        return out


def _new_lengths(old: Postings, new_row_of_old, added_rows, added_lengths, size: int) -> np.ndarray:
    """Each new row's length: a kept row's old one, an added row's own."""
    lengths = np.zeros(size, dtype=np.int32)
    lengths[new_row_of_old[new_row_of_old >= 0]] = np.asarray(old.lengths)[new_row_of_old >= 0]
    lengths[added_rows] = added_lengths
    return lengths


class MergeRefused(Exception):
    """The update cannot reproduce a full build (a hash collision, a salted old index): build afresh."""


# Peak memory of a merge a posting of the old index (its arrays read whole, the kept and merged ones beside
# them): 53.4 bytes measured at 300,000 pages (14.4M postings), rounded up. A full build holds a budget instead.
MERGE_POSTING_BYTES = 56


def merge_postings(
    old: Postings,
    old_first_order: np.ndarray,
    new_row_of_old: np.ndarray,
    size: int,
    added_rows: np.ndarray,
    added_tokens: Iterable[Sequence[str]],
) -> Postings:
    """The postings of a new version of the corpus, equal to a build (build.build_postings) of its token lists.

    `new_row_of_old[r]`: old row r's row in the new corpus, or -1 for a page removed (deleted, or changed: a
    changed page is removed and added again); kept rows must keep their order. `size`: the new corpus's pages;
    `added_rows` (ascending): the new rows of the pages whose token lists `added_tokens` gives, in that order.
    Every new row is either a kept old row's or an added one. Raises MergeRefused when only a full build can
    give the same arrays. It holds about MERGE_POSTING_BYTES a posting of the old index: the caller weighs that
    against its memory budget."""
    if old.salt != 0:
        raise MergeRefused("the old index chose another hash salt")  # a full build may choose salt 0 again
    new_row_of_old = np.asarray(new_row_of_old, dtype=np.int64)
    added_rows = np.asarray(added_rows, dtype=np.int64)
    delta = _collect(added_tokens)
    if len(delta.lengths) != len(added_rows):
        raise ValueError("one token list per added row")

    u = _union_vocabulary(old, delta)

    # The kept old postings, renumbered (their order, by column then row, is unchanged).
    indptr = np.asarray(old.indptr)
    new_rows_of_postings = new_row_of_old[old.rows]
    kept = new_rows_of_postings >= 0
    kept_rows = new_rows_of_postings[kept]
    kept_columns = np.repeat(u.of_old, np.diff(indptr))[kept]
    kept_tfs = np.asarray(old.tfs)[kept]
    kept_order = np.asarray(old_first_order)[kept]
    del new_rows_of_postings

    # The added postings, sorted by (column, row), interleaved with the kept ones.
    delta_columns = u.of_delta[delta.column]
    delta_rows = np.repeat(added_rows, delta.distinct)
    merged = _Interleave(kept_columns, kept_rows, delta_columns, delta_rows, size).merged
    columns = merged(kept_columns, delta_columns, np.int64)
    del kept_columns
    rows = merged(kept_rows, delta_rows, np.int32)
    del kept_rows
    lengths = _new_lengths(old, new_row_of_old, added_rows, delta.lengths, size)
    table, codes = _encoded(merged(kept_tfs, delta.counts, np.uint32), lengths[rows])
    distinct = np.bincount(rows, minlength=size)
    first_order = merged(kept_order, delta.first_order, _rank_type(distinct))

    # Columns left without postings (their terms' pages all removed) go: a full build never saw them.
    counts = np.bincount(columns, minlength=u.size)
    del columns
    live = counts > 0
    new_indptr = np.zeros(int(live.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[live], out=new_indptr[1:])
    union_hashes = np.empty(u.size, dtype=np.uint64)
    union_hashes[u.of_old] = u.old_hashes
    union_hashes[u.of_fresh] = u.fresh_sorted
    offsets, term_bytes = _union_term_bytes(old, delta, u, live)
    first_seen = _first_seen(new_indptr, rows, first_order)
    code_tfs, code_lengths = table_pairs(table)
    common = common_columns(np.diff(new_indptr), size)
    dense = dense_codes(new_indptr, rows, codes, common, size)
    return Postings(  # fmt: skip
        indptr=new_indptr,
        rows=rows,
        codes=codes,
        lengths=lengths,
        term_hashes=union_hashes[live],
        term_offsets=offsets,
        term_bytes=term_bytes,
        first_seen=first_seen,
        code_tfs=code_tfs,
        code_lengths=code_lengths,
        common_terms=common,
        common_codes=dense,
        salt=0,
        _first_order=first_order,
    )


def _first_seen(indptr: np.ndarray, rows: np.ndarray, first_order: np.ndarray) -> np.ndarray:
    """Terms ranked by the row of their first posting, then their rank within that page."""
    firsts = indptr[:-1]
    by_first = np.lexsort((first_order[firsts], rows[firsts]))
    first_seen = np.empty(len(firsts), dtype=np.int64)
    first_seen[by_first] = np.arange(len(firsts), dtype=np.int64)
    return first_seen


def _encoded(tfs: np.ndarray, page_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code table, each posting's code) of postings with these tfs on pages of these lengths."""
    keys = pair_keys(tfs, page_lengths)
    table = code_table(np.unique(keys))
    return table, np.searchsorted(table, keys).astype(code_type(table))
