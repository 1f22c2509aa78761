"""BM25 on a sparse matrix: every (page, term) score is computed once at index time; a query sums columns.

Two variants, k1=1.5 and b=0.75 by default:
- ``lucene`` (the default): idf = ln(1 + (N - df + 0.5) / (df + 0.5)), tf part tf / (tf + k1 (1 - b + b dl/avgdl)),
  as Lucene, Elasticsearch, Pyserini and bm25s's ``lucene`` method score;
- ``okapi``: rank-bm25's BM25Okapi exactly: idf = ln(N - df + 0.5) - ln(df + 0.5), floored at epsilon x the mean
  idf for terms whose idf is negative, tf part tf (k1 + 1) / (tf + k1 (1 - b + b dl/avgdl)).
A query term repeated in the query counts as often as it appears, as in both references.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

VARIANTS = ("lucene", "okapi")


@dataclass(frozen=True)
class BM25Params:
    variant: str = "lucene"
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25  # okapi only

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown BM25 variant {self.variant!r}; expected one of {', '.join(VARIANTS)}")


@dataclass
class BM25Index:
    """Scores of every (page, term) pair, as a CSC matrix whose columns are terms."""

    params: BM25Params
    vocabulary: dict[str, int]
    matrix: sparse.csc_matrix  # shape (pages, terms), float64

    @property
    def size(self) -> int:
        return self.matrix.shape[0]

    def query_terms(self, tokens: Sequence[str]) -> list[int]:
        """The query's term ids in query order, repeats kept; terms not in the index are dropped."""
        vocabulary = self.vocabulary
        return [term for term in map(vocabulary.get, tokens) if term is not None]

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """The BM25 score of every page for the query (0 for pages that share no term with it).

        Columns are added one query token at a time, in query order, as rank-bm25 adds them, so the okapi
        variant's floating-point sums are its sums exactly.
        """
        indptr, indices, data = self.matrix.indptr, self.matrix.indices, self.matrix.data
        terms = self.query_terms(tokens)
        if not terms:
            return np.zeros(self.size, dtype=np.float64)
        if len(terms) == 1:
            rows, weights = (
                indices[indptr[terms[0]] : indptr[terms[0] + 1]],
                data[indptr[terms[0]] : indptr[terms[0] + 1]],
            )
        else:
            rows = np.concatenate([indices[indptr[t] : indptr[t + 1]] for t in terms])
            weights = np.concatenate([data[indptr[t] : indptr[t + 1]] for t in terms])
        # bincount adds each page's contributions in input order, from 0.0: term by term, the same sums
        # as adding one column at a time.
        return np.bincount(rows, weights=weights, minlength=self.size)


def build_index(documents: Sequence[Sequence[str]], params: BM25Params | None = None) -> BM25Index:
    """Index tokenized pages (one token list per page)."""
    params = params or BM25Params()
    vocabulary: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    lengths = np.zeros(len(documents), dtype=np.float64)
    for row, tokens in enumerate(documents):
        lengths[row] = len(tokens)
        for token in tokens:
            term = vocabulary.get(token)
            if term is None:
                term = vocabulary[token] = len(vocabulary)
            cols.append(term)
        rows.extend([row] * len(tokens))
    n_docs, n_terms = len(documents), len(vocabulary)
    # Duplicate (row, col) pairs are summed: term frequencies.
    tf = sparse.csc_matrix(
        (
            np.ones(len(rows), dtype=np.float64),
            (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)),
        ),
        shape=(n_docs, n_terms),
    )
    tf.sum_duplicates()
    df = np.diff(tf.indptr).astype(np.float64)
    idf = _idf(params, n_docs, df)
    avgdl = lengths.sum() / n_docs if n_docs else 0.0
    norm = params.k1 * (1 - params.b + params.b * lengths / avgdl) if avgdl else np.full(n_docs, params.k1)
    tf_values = tf.data
    row_norm = norm[tf.indices]
    if params.variant == "okapi":
        tfc = tf_values * (params.k1 + 1) / (tf_values + row_norm)
    else:
        tfc = tf_values / (tf_values + row_norm)
    term_of_value = np.repeat(np.arange(n_terms), np.diff(tf.indptr))
    matrix = sparse.csc_matrix((idf[term_of_value] * tfc, tf.indices, tf.indptr), shape=(n_docs, n_terms))
    # 64-bit row indices: np.bincount takes them as they are (with 32-bit ones it copies every query's).
    matrix.indices = matrix.indices.astype(np.int64)
    matrix.indptr = matrix.indptr.astype(np.int64)
    return BM25Index(params=params, vocabulary=vocabulary, matrix=matrix)


def _idf(params: BM25Params, n_docs: int, df: np.ndarray) -> np.ndarray:
    if params.variant == "lucene":
        return np.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    # rank-bm25's BM25Okapi to the letter (math.log, a running sum in first-seen term order, the mean, then
    # epsilon x mean for the terms whose idf is negative), so its scores are reproduced bit for bit.
    idf = [math.log(n_docs - freq + 0.5) - math.log(freq + 0.5) for freq in df.tolist()]
    if not idf:
        return np.zeros(0)
    total = 0.0
    for value in idf:
        total += value
    eps = params.epsilon * (total / len(idf))
    return np.array([eps if value < 0 else value for value in idf], dtype=np.float64)
