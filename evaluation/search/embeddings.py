"""Embedders for vector search. Plain Python + numpy/scipy (the model-backed ones import lazily).

- ``lsi`` (the offline default): latent semantic indexing, a truncated SVD of the collection's own
  log-TF-IDF matrix; queries are folded into the same space. Needs no model and no download, is
  deterministic, and is fitted per collection version (its vectors live in the cached index).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse

from evaluation.search.engine import Embedder
from goldenset.text import tokenize

LSI_DIMENSIONS = 256


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class LsiEmbedder(Embedder):
    name = "lsi"

    def __init__(self, dimensions: int = LSI_DIMENSIONS):
        self.dimensions = dimensions
        self.vocabulary: dict[str, int] = {}
        self.idf = np.zeros(0)
        self.projection = np.zeros((0, 0))  # terms x dims: a query's tf-idf row times this is its vector

    def _tfidf(self, token_lists: Sequence[Sequence[str]], grow: bool) -> sparse.csr_matrix:
        rows, cols = [], []
        for row, tokens in enumerate(token_lists):
            for token in tokens:
                term = self.vocabulary.get(token)
                if term is None and grow:
                    term = self.vocabulary[token] = len(self.vocabulary)
                if term is not None:
                    rows.append(row)
                    cols.append(term)
        counts = sparse.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(len(token_lists), len(self.vocabulary))
        )
        counts.sum_duplicates()
        counts.data = 1.0 + np.log(counts.data)  # sublinear term frequency
        return counts

    def fit(self, texts: Sequence[str]) -> np.ndarray:
        tf = self._tfidf([tokenize(t) for t in texts], grow=True)
        n_docs, n_terms = tf.shape
        df = np.bincount(tf.indices, minlength=n_terms)
        self.idf = np.log((1 + n_docs) / (1 + df)) + 1.0
        weighted = tf.multiply(self.idf).tocsr()
        k = min(self.dimensions, min(weighted.shape) - 1)
        if k < 1:  # a corpus too small to decompose: plain tf-idf is its own space
            self.projection = np.eye(n_terms)
            return _unit_rows(weighted.toarray())
        u, s, vt = randomized_svd(weighted, k)
        # C-contiguous, so a query's sparse row times it needs no copy of the whole projection.
        self.projection = np.ascontiguousarray(vt.T)
        return _unit_rows(u * s).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        row = self._tfidf([tokenize(text)], grow=False).multiply(self.idf).tocsr()
        vector = np.asarray(row @ self.projection).ravel()
        norm = np.linalg.norm(vector)
        return (vector / norm if norm else vector).astype(np.float32)


def randomized_svd(
    matrix: sparse.spmatrix, k: int, oversample: int = 10, power_iterations: int = 4, seed: int = 0
):
    """The top-k singular triplets by randomized range finding (Halko, Martinsson & Tropp 2011).

    Seconds where ARPACK takes tens on a 10,000-page collection; the fixed seed makes it deterministic, so the
    same collection always gets the same vectors.
    """
    rng = np.random.default_rng(seed)
    n_rows, n_cols = matrix.shape
    width = min(k + oversample, min(n_rows, n_cols))
    basis = matrix @ rng.standard_normal((n_cols, width))
    for _ in range(power_iterations):  # subspace iteration, re-orthonormalised each pass for stability
        basis, _ = np.linalg.qr(basis)
        basis, _ = np.linalg.qr(matrix.T @ basis)
        basis = matrix @ basis
    basis, _ = np.linalg.qr(basis)
    small = np.asarray((matrix.T @ basis).T)
    u_small, s, vt = np.linalg.svd(small, full_matrices=False)
    return (basis @ u_small)[:, :k], s[:k], vt[:k]
