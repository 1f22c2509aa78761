"""An inverted index as flat arrays: what BM25 search reads, and nothing else (no token lists, no texts).

Columns are terms (CSC): `indptr[t]:indptr[t + 1]` slices `rows` (page rows, ascending) and `tfs` (the term's
frequency in each). Terms are looked up by a 64-bit hash of their UTF-8 bytes (sorted, so a binary search
finds a term's column) and confirmed against their stored bytes, so the index needs no Python dict: a
process opens the arrays with mmap and every process shares one copy through the page cache.

`first_seen[t]` is the term's rank in the order terms first occur in the corpus (page by page, word by word):
rank-bm25 sums its idfs in that order, and so must the okapi variant to reproduce its scores bit for bit.
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

import numpy as np

FORMAT = 1
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
    tfs: np.ndarray  # uint16 (or uint32 when a page repeats a word 65,536 times), one per posting
    lengths: np.ndarray  # int32, tokens per page
    term_hashes: np.ndarray  # uint64, ascending: a term's column is its position here
    term_offsets: np.ndarray  # int64, terms + 1: term t's UTF-8 bytes are term_bytes[offsets[t]:offsets[t+1]]
    term_bytes: np.ndarray  # uint8
    first_seen: np.ndarray  # int64 per term: rank in first-occurrence order
    salt: int = 0  # of term_hash: a build that met a collision chose another
    # Columns of the tokens queries asked for (-1: not in the index), bounded: a per-process memo.
    _columns: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    @property
    def size(self) -> int:
        return len(self.lengths)

    @property
    def terms(self) -> int:
        return len(self.term_hashes)

    @property
    def document_frequency(self) -> np.ndarray:
        return np.diff(self.indptr)

    def document_frequency_of(self, columns: np.ndarray) -> np.ndarray:
        return self.indptr[columns + 1] - self.indptr[columns]

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
        (folder / "postings.json").write_text(json.dumps({"format": FORMAT, "salt": self.salt}))

    @classmethod
    def open(cls, folder: Path, mmap: bool = True) -> Postings:
        meta = json.loads((folder / "postings.json").read_text())
        if meta.get("format") != FORMAT:
            raise ValueError(f"postings format {meta.get('format')!r}, expected {FORMAT}")
        arrays = {
            item.name: np.load(
                folder / f"{item.name}.npy", mmap_mode="r" if mmap else None, allow_pickle=False
            )
            for item in fields(cls)
            if item.name != "salt" and not item.name.startswith("_")
        }
        return cls(**arrays, salt=int(meta["salt"]))


def build_postings(token_lists: Iterable[Sequence[str]]) -> Postings:
    """Index tokenized pages (one token list per page, read once: a generator keeps memory bounded to the
    postings themselves)."""
    vocabulary: dict[str, int] = {}
    column: array = array("i")  # first-seen term id per posting
    counts: array = array("I")
    lengths: array = array("i")
    distinct: array = array("i")
    for tokens in token_lists:
        counted = Counter(tokens)  # insertion order: the page's words in first-occurrence order
        lengths.append(len(tokens))
        distinct.append(len(counted))
        column.extend([vocabulary.setdefault(t, len(vocabulary)) for t in counted])
        counts.extend(counted.values())
    terms = list(vocabulary)
    del vocabulary
    salt = 0
    while True:
        hashes = np.fromiter((term_hash(t, salt) for t in terms), dtype=np.uint64, count=len(terms))
        order = np.argsort(hashes, kind="stable")  # new column -> first-seen id
        if len(hashes) < 2 or np.all(np.diff(hashes[order]) != 0):
            break
        salt += 1  # two terms share a hash: choose another hash function
    new_of_old = np.empty(len(terms), dtype=np.int64)
    new_of_old[order] = np.arange(len(terms))
    first_seen = order.astype(np.int64)

    n_pages = len(lengths)
    cols = new_of_old[np.frombuffer(column, dtype=np.int32)] if len(column) else np.zeros(0, dtype=np.int64)
    del column
    page_rows = np.repeat(np.arange(n_pages, dtype=np.int32), np.frombuffer(distinct, dtype=np.int32))
    by_column = np.argsort(cols, kind="stable")  # rows stay ascending within a column
    tf_values = np.frombuffer(counts, dtype=np.uint32) if len(counts) else np.zeros(0, dtype=np.uint32)
    tf_type = np.uint16 if not len(tf_values) or int(tf_values.max()) < 2**16 else np.uint32
    indptr = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=len(terms)), out=indptr[1:])
    encoded = [terms[i].encode("utf-8", "surrogatepass") for i in order.tolist()]
    offsets = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return Postings(
        indptr=indptr,
        rows=page_rows[by_column],
        tfs=tf_values[by_column].astype(tf_type),
        lengths=np.frombuffer(lengths, dtype=np.int32).copy(),
        term_hashes=hashes[order],
        term_offsets=offsets,
        term_bytes=np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(),
        first_seen=first_seen,
        salt=salt,
    )
