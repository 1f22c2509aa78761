"""BM25 over an inverted index of term frequencies (postings.py); a query reads only its terms' postings.

Two variants, k1=1.5 and b=0.75 by default:
- ``lucene`` (the default): idf = ln(1 + (N - df + 0.5) / (df + 0.5)), tf part tf / (tf + k1 (1 - b + b dl/avgdl)),
  as Lucene, Elasticsearch, Pyserini and bm25s's ``lucene`` method score;
- ``okapi``: rank-bm25's BM25Okapi exactly: idf = ln(N - df + 0.5) - ln(df + 0.5), floored at epsilon x the mean
  idf for terms whose idf is negative, tf part tf (k1 + 1) / (tf + k1 (1 - b + b dl/avgdl)).
A query term repeated in the query counts as often as it appears, as in both references.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluation.retrieval.search import kernels
from evaluation.retrieval.search.postings import Postings, build_postings

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


class BM25Index:
    """BM25 over one set of postings with one variant's weights: each posting's weight, its term's idf times
    its tf part, computed once with numpy's double arithmetic; a query adds the weights of its terms' postings
    (kernels.py), so scores are the reference formulas' above to the last bit.

    Thread-safe: each thread searching the index gets scratch arrays of its own."""

    def __init__(
        self,
        postings: Postings,
        params: BM25Params,
        idf: np.ndarray | None = None,
        weights: np.ndarray | None = None,
        common: tuple[np.ndarray, np.ndarray] | None = None,
    ):
        self.postings = postings
        self.params = params
        self.idf = idf if idf is not None else term_idf(params, postings)
        self.weights = weights if weights is not None else posting_weights(params, postings, self.idf)
        # The common terms' weights as dense rows (kernels.py adds them page after page): the columns of the
        # terms, ascending, and their rows, as saved beside the weights, else computed here.
        self.common_terms, self.common_rows = (
            common if common is not None else common_term_rows(postings, self.weights)
        )
        # With every weight positive (always for lucene) the kernel tells a new page by its sum of 0.0. A weight
        # is its term's idf times a tf part in (0, 1] (k1 + 1 for okapi), so the idfs tell: one value a term,
        # not a pass over every posting (a mapped index would otherwise be read whole on its first search).
        self.positive = bool(len(self.idf) == 0 or np.min(self.idf) > 0)
        self._scratch = threading.local()

    @property
    def size(self) -> int:
        return self.postings.size

    def query_terms(self, tokens: Sequence[str]) -> np.ndarray:
        """The query's term columns in query order, repeats kept; terms not in the index are dropped."""
        return self.postings.term_ids(tokens)

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """The BM25 score of every page for the query (0 for pages that share no term with it).

        Contributions are added one query token at a time, in query order, as rank-bm25 adds them, so the okapi
        variant's floating-point sums are its sums exactly."""
        p = self.postings
        return kernels.dense_scores(
            p.indptr,
            p.rows,
            self.weights,
            self.common_terms,
            self.common_rows,
            self.query_terms(tokens),
            self.size,
        )

    def top_documents(
        self,
        tokens: Sequence[str],
        depth: int,
        id_rank: np.ndarray,
        page_document: np.ndarray | None = None,
        live: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(document rows, scores, best page rows) of the `depth` best documents in trec_eval's order, reading
        only the query terms' postings. Without page_document every page is a document; `live` (a flag per
        page) leaves out the pages it clears."""
        p = self.postings
        terms = self.query_terms(tokens)
        return kernels.top_documents(
            p.indptr,
            p.rows,
            self.weights,
            self.common_terms,
            self.common_rows,
            terms,
            _EMPTY_BOOL if live is None else live,
            self.positive,
            _EMPTY_INT if page_document is None else page_document,
            id_rank,
            depth,
            *self._scratch_arrays(len(id_rank)),
        )

    def _scratch_arrays(self, documents: int) -> tuple[np.ndarray, ...]:
        arrays = getattr(self._scratch, "arrays", None)
        if arrays is None:
            size = max(self.size, documents)
            arrays = (
                np.zeros(size, dtype=np.float64),  # acc: a page's sum so far
                np.zeros(size, dtype=np.uint8),  # mark: page seen (when some weight is not positive)
                np.zeros(size + 1, dtype=np.int64),  # touched: pages in the order first met
                np.zeros(size, dtype=np.int64),  # doc_list: documents in the order first met
                np.zeros(size, dtype=np.float64),  # doc_best: a document's best page score so far
                np.zeros(size, dtype=np.int64),  # doc_page: and that page
                np.zeros(size, dtype=np.uint8),  # doc_mark: document seen
            )
            self._scratch.arrays = arrays
        return arrays


_EMPTY_BOOL = np.zeros(0, dtype=np.bool_)
_EMPTY_INT = np.zeros(0, dtype=np.int64)


COMMON_SHARE = 4  # a term on at least 1/COMMON_SHARE of the pages is common: its weights kept as a dense row
MAX_COMMON = 64  # at most this many (the most frequent), 8 bytes a page each


def common_term_rows(
    postings: Postings, weights: np.ndarray, share: int = COMMON_SHARE, most: int = MAX_COMMON
) -> tuple[np.ndarray, np.ndarray]:
    """(columns ascending, dense rows of their weights) of the index's common terms, those on at least 1/share
    of the pages (the `most` most frequent). A query with one of them reads every page anyway
    (kernels.top_documents sweeps), and adding a dense row, a loop the compiler vectorizes, is faster than
    adding the same term's postings one by one where the sums stay in the caches (benchmarks/search_scale.py
    times the index without them); the rows cost 8 bytes a page a term, shared from the saved file."""
    df = postings.document_frequency
    pages = postings.size
    common = np.flatnonzero(df * share >= max(pages, 1))
    if len(common) > most:
        common = np.sort(common[np.argsort(-df[common], kind="stable")[:most]])
    if not len(common):
        return NO_COMMON
    common = common.astype(np.int64)
    return common, kernels.common_rows(postings.indptr, postings.rows, weights, common, pages)


# No common-term rows: (no columns, no rows); every term's postings are then added one by one.
NO_COMMON = (np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float64))


def term_idf(params: BM25Params, postings: Postings) -> np.ndarray:
    return _idf(params, postings.size, postings.document_frequency, postings)


def posting_weights(
    params: BM25Params, postings: Postings, idf: np.ndarray, chunk: int = 1 << 22
) -> np.ndarray:
    """idf[term] x tf part, per posting, as the reference computes it: lucene tf / (tf + norm), okapi
    tf (k1 + 1) / (tf + norm); in chunks of columns, so memory stays near the result's own."""
    norm = length_norm(params, postings.lengths)
    indptr = postings.indptr
    out = np.empty(len(postings.rows), dtype=np.float64)
    column = 0
    while column < postings.terms:
        end = int(np.searchsorted(indptr, indptr[column] + chunk, side="right")) - 1
        end = max(end, column + 1)
        lo, hi = int(indptr[column]), int(indptr[end])
        tf = postings.tfs[lo:hi].astype(np.float64)
        row_norm = norm[postings.rows[lo:hi]]
        tfc = tf * (params.k1 + 1) / (tf + row_norm) if params.variant == "okapi" else tf / (tf + row_norm)
        out[lo:hi] = np.repeat(idf[column:end], np.diff(indptr[column : end + 1])) * tfc
        column = end
    return out


def length_norm(params: BM25Params, lengths: np.ndarray) -> np.ndarray:
    """k1 (1 - b + b dl / avgdl) per page, avgdl the mean length (an exact sum: lengths are integers)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    n_docs = len(lengths)
    avgdl = lengths.sum() / n_docs if n_docs else 0.0
    if not avgdl:
        return np.full(n_docs, params.k1)
    return params.k1 * (1 - params.b + params.b * lengths / avgdl)


def build_index(documents: Sequence[Sequence[str]], params: BM25Params | None = None) -> BM25Index:
    """Index tokenized pages (one token list per page)."""
    return BM25Index(build_postings(documents), params or BM25Params())


def _idf(params: BM25Params, n_docs: int, df: np.ndarray, postings: Postings) -> np.ndarray:
    """Per term, in column order."""
    df = np.asarray(df, dtype=np.float64)
    if params.variant == "lucene":
        return np.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    # rank-bm25's BM25Okapi to the letter (math.log, a running sum in first-seen term order, the mean, then
    # epsilon x mean for the terms whose idf is negative), so its scores are reproduced bit for bit.
    in_first_seen = np.argsort(postings.first_seen)
    idf = [math.log(n_docs - freq + 0.5) - math.log(freq + 0.5) for freq in df[in_first_seen].tolist()]
    if not idf:
        return np.zeros(0)
    total = 0.0
    for value in idf:
        total += value
    eps = params.epsilon * (total / len(idf))
    out = np.empty(len(idf), dtype=np.float64)
    out[in_first_seen] = [eps if value < 0 else value for value in idf]
    return out
