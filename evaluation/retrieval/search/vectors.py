"""Vector search over page vectors that may be memory-mapped (an index read back maps vectors.npy: one copy in
the page cache for every process): every page's cosine with the query, or the closest pages, read a chunk of rows
at a time, so a search's temporaries are bounded by the chunk, never the size of the collection. Plain numpy: no
Django import.
"""

from __future__ import annotations

import numpy as np

# Page vectors read per step of a vector search: bounds its temporaries (16 MiB of float32 at 256 dims), not
# the whole matrix, which may be memory-mapped.
VECTOR_CHUNK = 16_384


def vector_scores(vectors: np.ndarray, query: np.ndarray, chunk: int = VECTOR_CHUNK) -> np.ndarray:
    """Every page's dot product with the query (cosine: both are unit vectors), float32, VECTOR_CHUNK rows of
    the (possibly memory-mapped, read-only) vectors at a time: no temporary of the matrix's size."""
    query = np.asarray(query, dtype=np.float32)
    out = np.empty(len(vectors), dtype=np.float32)
    for start in range(0, len(vectors), chunk):
        block = np.asarray(vectors[start : start + chunk], dtype=np.float32)  # a view when already float32
        np.matmul(block, query, out=out[start : start + len(block)])
    return out


def vector_top_rows(
    vectors: np.ndarray, query: np.ndarray, count: int, chunk: int = VECTOR_CHUNK
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, float32 scores) of the `count` pages closest to the query, best first, ties by row ascending:
    the first `count` of `vector_scores` in that order, computed VECTOR_CHUNK rows at a time with a running
    top `count` (memory bounded by the chunk, whatever the collection's size)."""
    query = np.asarray(query, dtype=np.float32)
    best_rows = np.zeros(0, dtype=np.int64)
    best_scores = np.zeros(0, dtype=np.float32)
    for start in range(0, len(vectors), chunk):
        block = np.asarray(vectors[start : start + chunk], dtype=np.float32)  # a view when already float32
        scores = block @ query
        rows = np.arange(start, start + len(block), dtype=np.int64)
        kept = _best(scores, rows, count)
        rows = np.concatenate([best_rows, rows[kept]])
        scores = np.concatenate([best_scores, scores[kept]])
        kept = _best(scores, rows, count)
        best_rows, best_scores = rows[kept], scores[kept]
    return best_rows, best_scores


def _best(scores: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """Positions of the `count` highest scores, best first, ties by row ascending."""
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    positions = np.arange(len(scores))
    if len(scores) > count:
        kth = np.partition(scores, len(scores) - count)[len(scores) - count]
        positions = np.flatnonzero(scores >= kth)  # every row tied with the cut competes on its row
    order = np.lexsort((rows[positions], -scores[positions]))[:count]
    return positions[order]
