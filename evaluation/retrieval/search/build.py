"""Postings built in bounded memory, as Lucene builds an index: pages are counted into segments of at most a
memory budget's worth, each segment sorted by term hash and, when the build writes to a folder, spilled to
disk; the segments are then merged column range by column range (a range's postings bounded by the budget
too) into the final arrays, written to the folder as they come. The arrays equal, bit for bit, those one
segment holding the whole corpus gives, whatever the budget: a term's column is its hash's rank, its postings
are its segments' in page order, and its first-seen rank is that of its first segment's first sight.

What a build holds at once is one segment being counted (its vocabulary as a dict, its postings as arrays),
the merged vocabulary (a few words a term), a length a page, the common terms' dense codes (2 bytes a page
each) and one column range's postings. `SEGMENT_SHARE` of the budget goes to the segment, `RANGE_SHARE` to a
range; what a posting and a term cost was measured (benchmarks/build_memory_bench.py prints the peak).
Plain Python + numpy: no Django import.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.retrieval.search.postings import (
    FIRST_ORDER,
    FORMAT,
    Collector,
    Postings,
    _Collected,
    code_table,
    code_type,
    common_columns,
    pair_keys,
    table_pairs,
    term_hash,
)

DEFAULT_BUDGET = 2 << 30  # bytes: EVALSITE_INDEX_BUILD_MEMORY's default
SEGMENT_SHARE = 0.55
RANGE_SHARE = 0.2
POSTING_BYTES = 60  # a posting while its segment is counted and sorted
TERM_BYTES = 260  # a distinct term of a segment: its str, dict slot, hashes and sort
RANGE_POSTING_BYTES = 72  # a posting of the column range being merged
CHECK_SALT = 0x5EED_0F_C0FFEE  # the second hash, telling two terms apart where the first one collides
PROGRESS_PAGES = 16 * 1024  # pages counted between reports
Progress = Callable[[str, int, int], None]  # (stage, done, total): "pages" (total 0: unknown), "merge"


class HashCollision(Exception):
    """Two terms share a hash under this salt: the build starts over with the next."""


def build_postings(
    pages: Iterable[Sequence[str]] | Callable[[], Iterable[Sequence[str]]],
    *,
    folder: Path | None = None,
    budget: int = DEFAULT_BUDGET,
    progress: Progress | None = None,
) -> Postings:
    """Index tokenized pages (one token list per page, read once). `pages` may be a callable giving them anew:
    a build whose terms collide on their 64-bit hash (about three builds in a million at ten million terms)
    reads them again under another salt. With `folder` the segments are spilled there and the arrays written
    there (postings.json last), the postings returned mapped from it: the budget bounds the build's memory.
    Without, every segment stays in memory (small corpora, tests): the budget only sets their size."""
    salt = 0
    while True:
        source = pages() if callable(pages) else pages
        try:
            return _build(source, salt, folder, budget, progress)
        except HashCollision:
            if not callable(pages) and not isinstance(pages, Sequence):
                raise ValueError(
                    "two terms share a hash: give the pages as a callable to read them again"
                ) from None
            salt += 1


@dataclass
class Segment:
    """One segment's postings, columns in term-hash order, rows numbered in the whole corpus."""

    hashes: np.ndarray  # uint64, ascending
    checks: np.ndarray  # uint64, the second hash of each term
    first_seen: np.ndarray  # int64: the term's rank in the segment's first-occurrence order
    indptr: np.ndarray  # int64
    term_offsets: np.ndarray  # int64
    term_bytes: np.ndarray  # uint8
    rows: np.ndarray  # int32
    tfs: np.ndarray  # uint32
    first_order: np.ndarray  # uint16 or uint32
    lengths: np.ndarray  # int32 per page
    keys: np.ndarray  # uint64: the segment's distinct (tf, length) pairs
    columns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # set by the merge

    def save(self, folder: Path) -> Path:
        folder.mkdir(parents=True)
        for item in fields(self):
            np.save(folder / f"{item.name}.npy", getattr(self, item.name), allow_pickle=False)
        return folder


def _part(segment: Segment | Path, name: str, mapped: bool = False) -> np.ndarray:
    """One array of a segment in memory or spilled (read whole, or mapped to read a slice and let go)."""
    if isinstance(segment, Segment):
        return getattr(segment, name)
    return np.load(segment / f"{name}.npy", mmap_mode="r" if mapped else None, allow_pickle=False)


def _build(source, salt: int, folder: Path | None, budget: int, progress: Progress | None) -> Postings:
    spill = Path(tempfile.mkdtemp(dir=folder, prefix=".segments.")) if folder is not None else None
    try:
        segments: list[Segment | Path] = []
        start = 0
        for collected in _segments(source, budget, progress):
            segment = _sorted_segment(collected, start, salt)
            start += len(collected.lengths)
            segments.append(segment.save(spill / str(len(segments))) if spill is not None else segment)
            del segment, collected
        return _merge(segments, start, salt, folder, budget, progress)
    finally:
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)


def _segments(source, budget: int, progress: Progress | None):
    """The pages counted into segments of at most SEGMENT_SHARE of the budget (by the measured costs)."""
    limit = budget * SEGMENT_SHARE
    collector = Collector()
    counted = 0
    for tokens in source:
        collector.add(tokens)
        if len(collector.lengths) % 64 == 0:
            used = len(collector.column) * POSTING_BYTES + len(collector.vocabulary) * TERM_BYTES
            if progress is not None and len(collector.lengths) % PROGRESS_PAGES == 0:  # a multiple of 64
                progress("pages", counted + len(collector.lengths), 0)
            if used >= limit:
                counted += len(collector.lengths)
                yield collector.done()
                collector = Collector()
                if progress is not None:
                    progress("pages", counted, 0)
    if len(collector.lengths) or not counted:
        yield collector.done()


def _hashes(terms: list[str], salt: int) -> np.ndarray:
    return np.fromiter((term_hash(t, salt) for t in terms), dtype=np.uint64, count=len(terms))


def _sorted_segment(collected: _Collected, start: int, salt: int) -> Segment:
    """A segment's postings sorted by (term hash, row); HashCollision when two of its terms share a hash."""
    terms = collected.terms
    hashes = _hashes(terms, salt)
    order = np.argsort(hashes, kind="stable")  # column -> first-seen id
    hashes = hashes[order]
    if len(hashes) > 1 and not np.all(np.diff(hashes) != 0):
        raise HashCollision
    new_of_old = np.empty(len(terms), dtype=np.int64)
    new_of_old[order] = np.arange(len(terms))
    cols = new_of_old[collected.column]
    del new_of_old
    by_column = np.argsort(cols, kind="stable")  # rows stay ascending within a column
    indptr = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=len(terms)), out=indptr[1:])
    del cols
    rows = np.repeat(np.arange(start, start + len(collected.lengths), dtype=np.int32), collected.distinct)
    rows = rows[by_column]
    tfs = collected.counts[by_column]
    first_order = collected.first_order[by_column]
    del by_column
    in_order = [terms[i] for i in order.tolist()]
    encoded = [t.encode("utf-8", "surrogatepass") for t in in_order]
    offsets = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return Segment(
        hashes=hashes,
        checks=_hashes(in_order, salt ^ CHECK_SALT),
        first_seen=order.astype(np.int64),
        indptr=indptr,
        term_offsets=offsets,
        term_bytes=np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(),
        rows=rows,
        tfs=tfs,
        first_order=first_order,
        lengths=collected.lengths,
        keys=np.unique(pair_keys(tfs, collected.lengths[rows - start])),
    )


@dataclass
class _Vocabulary:
    """The segments' vocabularies merged: the corpus's terms in hash order. Each segment's map from its columns
    to the corpus's (ascending: both in hash order) is kept with the segment (`columns`)."""

    hashes: np.ndarray
    first_seen: np.ndarray
    indptr: np.ndarray
    term_offsets: np.ndarray
    term_bytes: np.ndarray


def _merged_vocabulary(segments: list[Segment | Path]) -> _Vocabulary:
    """The vocabularies merged one segment at a time into a sorted union (a term's hash, second hash, first
    segment and rank there): memory a few words per distinct term, not per segment's term."""
    hashes, checks = np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    first_segment, local_rank = np.zeros(0, np.int32), np.zeros(0, np.int64)
    for i, segment in enumerate(segments):
        h, c = _part(segment, "hashes"), _part(segment, "checks")
        at = np.searchsorted(hashes, h)
        found = at < len(hashes)
        found[found] = hashes[at[found]] == h[found]
        if not np.array_equal(checks[at[found]], c[found]):
            raise HashCollision  # the same hash, another term
        new = ~found
        where = at[new]
        hashes, checks = np.insert(hashes, where, h[new]), np.insert(checks, where, c[new])
        first_segment = np.insert(first_segment, where, np.int32(i))
        local_rank = np.insert(local_rank, where, _part(segment, "first_seen")[new])
        del h, c, at, found, new, where
    del checks
    terms = len(hashes)
    df = np.zeros(terms, dtype=np.int64)
    for segment in segments:
        columns = np.searchsorted(hashes, _part(segment, "hashes"))
        df[columns] += np.diff(_part(segment, "indptr"))
        _keep(segment, "columns", columns)
    indptr = np.zeros(terms + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    del df
    first_seen = np.empty(terms, dtype=np.int64)
    first_seen[np.lexsort((local_rank, first_segment))] = np.arange(terms, dtype=np.int64)
    del local_rank
    offsets, term_bytes = _term_bytes(segments, hashes, first_segment)
    return _Vocabulary(hashes, first_seen, indptr, offsets, term_bytes)


def _keep(segment: Segment | Path, name: str, array: np.ndarray) -> None:
    if isinstance(segment, Segment):
        setattr(segment, name, array)
    else:
        np.save(segment / f"{name}.npy", array, allow_pickle=False)


def _term_bytes(segments, hashes: np.ndarray, first_segment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, bytes) of each term, in column order, read from the first segment holding it."""
    lengths = np.zeros(len(hashes), dtype=np.int64)
    locals_ = []
    for i, segment in enumerate(segments):
        mine = np.flatnonzero(first_segment == i)
        local = np.searchsorted(_part(segment, "hashes"), hashes[mine])
        offsets = _part(segment, "term_offsets")
        lengths[mine] = offsets[local + 1] - offsets[local]
        locals_.append((mine, local))
    out_offsets = np.zeros(len(hashes) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    for segment, (mine, local) in zip(segments, locals_, strict=True):
        sizes = lengths[mine]
        within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        source = np.repeat(_part(segment, "term_offsets")[local], sizes) + within
        out[np.repeat(out_offsets[mine], sizes) + within] = _part(segment, "term_bytes")[source]
    return out_offsets, out


class _Out:
    """One output array: written to its .npy file piece by piece (its length known first), or kept."""

    def __init__(self, folder: Path | None, name: str, dtype, length: int) -> None:
        self.dtype = np.dtype(dtype)
        self.pieces: list[np.ndarray] = []
        self.handle = None
        if folder is not None:
            self.handle = (folder / f"{name}.npy").open("wb")
            header = {
                "descr": np.lib.format.dtype_to_descr(self.dtype),
                "fortran_order": False,
                "shape": (length,),
            }
            np.lib.format.write_array_header_1_0(self.handle, header)

    def add(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=self.dtype)
        if self.handle is not None:
            values.tofile(self.handle)
        else:
            self.pieces.append(values)

    def close(self) -> np.ndarray | None:
        if self.handle is not None:
            self.handle.close()
            return None
        return np.concatenate(self.pieces) if self.pieces else np.zeros(0, self.dtype)


def _merge(segments, pages: int, salt: int, folder: Path | None, budget: int, progress) -> Postings:
    vocabulary = _merged_vocabulary(segments)
    lengths = np.concatenate([_part(s, "lengths") for s in segments]) if segments else np.zeros(0, np.int32)
    table = code_table(np.concatenate([_part(s, "keys") for s in segments]) if segments else np.zeros(0))
    codes_type = code_type(table)
    order_type = np.result_type(np.uint16, *(_part(s, "first_order", mapped=True).dtype for s in segments))
    indptr = vocabulary.indptr
    total = int(indptr[-1])
    common = common_columns(np.diff(indptr), pages)
    common_codes: np.ndarray = np.zeros((len(common), pages if len(common) else 0), dtype=codes_type)
    rows_out = _Out(folder, "rows", np.int32, total)
    codes_out = _Out(folder, "codes", codes_type, total)
    order_out = _Out(folder, FIRST_ORDER, order_type, total)
    step = max(1, int(budget * RANGE_SHARE / RANGE_POSTING_BYTES))
    column = 0
    while column < len(vocabulary.hashes):
        end = max(column + 1, int(np.searchsorted(indptr, indptr[column] + step, side="right")) - 1)
        rows, tfs, first_order = _range(segments, column, end)
        keys = pair_keys(tfs, lengths[rows])
        codes: np.ndarray = np.searchsorted(table, keys).astype(codes_type)
        del keys, tfs
        for j in np.flatnonzero((common >= column) & (common < end)).tolist():
            lo, hi = indptr[common[j]] - indptr[column], indptr[common[j] + 1] - indptr[column]
            common_codes[j, rows[lo:hi]] = codes[lo:hi]
        rows_out.add(rows)
        codes_out.add(codes)
        order_out.add(first_order)
        del rows, codes, first_order
        column = end
        if progress is not None:
            progress("merge", int(indptr[column]), total)
    code_tfs, code_lengths = table_pairs(table)
    arrays: dict[str, Any] = {
        "indptr": indptr,
        "lengths": lengths,
        "term_hashes": vocabulary.hashes,
        "term_offsets": vocabulary.term_offsets,
        "term_bytes": vocabulary.term_bytes,
        "first_seen": vocabulary.first_seen,
        "code_tfs": code_tfs,
        "code_lengths": code_lengths,
        "common_terms": common,
        "common_codes": common_codes,
    }
    rows_all: Any = rows_out.close()
    codes_all: Any = codes_out.close()
    order_all = order_out.close()
    if folder is None:
        return Postings(**arrays, rows=rows_all, codes=codes_all, salt=salt, _first_order=order_all)
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", array, allow_pickle=False)
    (folder / "postings.json").write_text(json.dumps({"format": FORMAT, "salt": salt}))
    return Postings.open(folder)


def _range(segments, start: int, end: int):
    """(rows, tfs, first orders) of the corpus's columns start..end, in (column, row) order: each segment's
    postings of those columns (a slice: its columns are in the same order), interleaved by column."""
    pieces: list[tuple[np.ndarray, ...]] = []
    for segment in segments:
        mine = _part(segment, "columns", mapped=True)
        lo, hi = (int(x) for x in np.searchsorted(mine, [start, end]))
        if lo == hi:
            continue
        indptr = np.array(_part(segment, "indptr", mapped=True)[lo : hi + 1])
        p0, p1 = int(indptr[0]), int(indptr[-1])
        cols = np.repeat(np.array(mine[lo:hi]), np.diff(indptr))
        arrays = [
            np.array(_part(segment, name, mapped=True)[p0:p1]) for name in ("rows", "tfs", "first_order")
        ]
        pieces.append((cols, *arrays))
    if not pieces:
        return np.zeros(0, np.int32), np.zeros(0, np.uint32), np.zeros(0, np.uint16)
    cols = np.concatenate([p[0] for p in pieces])
    order = np.argsort(cols, kind="stable")  # segments in page order: rows stay ascending in a column
    del cols
    return tuple(np.concatenate([p[i] for p in pieces])[order] for i in (1, 2, 3))
