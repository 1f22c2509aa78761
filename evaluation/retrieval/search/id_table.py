"""A collection's document ids as two flat arrays: their UTF-8 bytes end to end, and where each one starts. Saved
beside an index as .npy files and mapped by every process (evaluation.retrieval.index_files), so a serving
process holds no string per document: a list of a million ids is a million Python objects in each web process's
private memory (about 70 MB, after parsing the JSON that carried them), where the mapped table is 8 bytes an id
plus the bytes, one copy in the page cache for all of them. A string is made only for the ids asked for (the
documents a search returns). Plain Python + numpy: no Django import.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np


class IdTable(Sequence[str]):
    """Read-only: id `i` is `data[offsets[i]:offsets[i + 1]]` decoded as UTF-8."""

    def __init__(self, offsets: np.ndarray, data: np.ndarray) -> None:
        if offsets.ndim != 1 or len(offsets) < 1 or data.ndim != 1 or int(offsets[-1]) != len(data):
            raise ValueError(f"an id table of offsets {offsets.shape} over {data.shape} bytes")
        self.offsets = offsets  # int64, ids + 1, ascending from 0
        self.data = data  # uint8
        # str(bytes-like, "utf-8") decodes a slice of this without copying it first
        self._bytes = memoryview(data)  # type: ignore[arg-type]  # an ndarray is a buffer; numpy's stubs omit it

    @classmethod
    def packed(cls, ids: Sequence[str]) -> IdTable:
        """The table of these ids (in memory; saved, it is mapped)."""
        encoded = [i.encode("utf-8", "surrogatepass") for i in ids]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(offsets, np.frombuffer(b"".join(encoded), dtype=np.uint8))

    @classmethod
    def streamed(cls, ids: Iterator[str]) -> IdTable:
        """The table of ids read one at a time (a build's millions of them: no list of strings held)."""
        data = bytearray()
        ends = array("q")
        for value in ids:
            data += value.encode("utf-8", "surrogatepass")
            ends.append(len(data))
        offsets = np.zeros(len(ends) + 1, dtype=np.int64)
        offsets[1:] = np.frombuffer(ends, dtype=np.int64) if len(ends) else offsets[1:]
        return cls(offsets, np.frombuffer(bytes(data), dtype=np.uint8))

    def byte_order(self) -> np.ndarray:
        """The rows in the ids' byte order (as sorted(..., key=str.encode)), stable: with numpy on fixed-width
        byte strings when they are short and hold no NUL byte (numpy's comparison ignores trailing NULs), else
        with Python's sort."""
        lengths = np.diff(self.offsets)
        width = int(lengths.max()) if len(lengths) else 0
        if width and len(self) * width <= 4 * len(self.data) + (64 << 20) and not (self.data == 0).any():
            padded = np.zeros((len(self), width), dtype=np.uint8)
            within = np.arange(len(self.data), dtype=np.int64) - np.repeat(self.offsets[:-1], lengths)
            padded[np.repeat(np.arange(len(self)), lengths), within] = self.data
            return np.argsort(padded.view(f"S{width}").ravel(), kind="stable")
        return np.array(
            sorted(range(len(self)), key=lambda i: self[i].encode("utf-8", "surrogatepass")), np.int64
        )

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return self.take(np.arange(len(self))[index])
        size = len(self)
        row = int(index)
        if not -size <= row < size:
            raise IndexError(f"id {row} of {size}")
        row %= size
        return self._decode(int(self.offsets[row]), int(self.offsets[row + 1]))

    def take(self, rows: np.ndarray | Sequence[int]) -> list[str]:
        """The ids of these rows, in their order (what a ranking returns: a few strings, not a million)."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, ends = self.offsets[rows].tolist(), self.offsets[rows + 1].tolist()
        return [self._decode(a, b) for a, b in zip(starts, ends, strict=True)]

    def __iter__(self) -> Iterator[str]:
        raw = self.data.tobytes()  # one copy for the whole walk (an update's, a save's), not one per id
        offsets = self.offsets.tolist()
        for a, b in zip(offsets[:-1], offsets[1:], strict=False):
            yield raw[a:b].decode("utf-8", "surrogatepass")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdTable):
            return np.array_equal(self.offsets, other.offsets) and np.array_equal(self.data, other.data)
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list of the same ids, which has no hash either

    def __repr__(self) -> str:
        return f"IdTable({len(self)} ids)"

    def _decode(self, start: int, end: int) -> str:
        return str(self._bytes[start:end], "utf-8", "surrogatepass")
