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
from evaluation.retrieval.search.build import build_postings
from evaluation.retrieval.search.postings import Postings

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
    """BM25 over one set of postings with one variant's weights: a posting's weight is its term's idf times the
    tf part of its (tf, page length) pair, each pair's computed once with numpy's double arithmetic
    (`tf_parts`, a few thousand doubles); a query adds the weights of its terms' postings (kernels.py), so
    scores are the reference formulas' above to the last bit. Another k1 or b is another table of tf parts
    over the same postings: a study's trials cost no memory the size of the corpus.

    Thread-safe: each thread searching the index gets scratch arrays of its own."""

    def __init__(self, postings: Postings, params: BM25Params, idf: np.ndarray | None = None):
        self.postings = postings
        self.params = params
        self.idf = idf if idf is not None else term_idf(params, postings)
        self.parts = tf_parts(params, postings)
        # With every weight positive (always for lucene) the kernel tells a new page by its sum of 0.0. A weight
        # is its term's idf times a tf part in (0, 1] (k1 + 1 for okapi), so the idfs tell: one value a term,
        # not a pass over every posting (a mapped index would otherwise be read whole on its first search).
        self.positive = bool(len(self.idf) == 0 or np.min(self.idf) > 0)
        self._scratch = threading.local()

    def weight(self, column: int, posting: int) -> float:
        """One posting's weight (explain reads it)."""
        return float(self.idf[column] * self.parts[int(self.postings.codes[posting])])

    def all_weights(self) -> np.ndarray:
        """Every posting's weight, a new array the size of the postings (tests and oracles read it)."""
        p = self.postings
        return np.repeat(np.asarray(self.idf), p.document_frequency) * self.parts[np.asarray(p.codes)]

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
            p.codes,
            self.parts,
            self.idf,
            p.common_terms,
            p.common_codes,
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
            p.codes,
            self.parts,
            self.idf,
            p.common_terms,
            p.common_codes,
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


def term_idf(params: BM25Params, postings: Postings) -> np.ndarray:
    return _idf(params, postings.size, postings.document_frequency, postings)


def tf_parts(params: BM25Params, postings: Postings) -> np.ndarray:
    """The tf part of each (tf, page length) code, as the reference computes it per posting: lucene
    tf / (tf + norm), okapi tf (k1 + 1) / (tf + norm), norm = k1 (1 - b + b dl / avgdl); code 0 (no posting)
    0.0."""
    lengths = np.asarray(postings.lengths)
    # avgdl: the lengths' exact sum (integers, far below 2^53), as a sum of doubles of them gives it
    avgdl = float(int(lengths.sum(dtype=np.int64))) / len(lengths) if len(lengths) else 0.0
    norm = length_norm(params, np.asarray(postings.code_lengths)[1:], avgdl)
    tf = np.asarray(postings.code_tfs)[1:].astype(np.float64)
    parts = np.zeros(len(postings.code_tfs), dtype=np.float64)
    parts[1:] = tf * (params.k1 + 1) / (tf + norm) if params.variant == "okapi" else tf / (tf + norm)
    return parts


def length_norm(params: BM25Params, lengths: np.ndarray, avgdl: float | None = None) -> np.ndarray:
    """k1 (1 - b + b dl / avgdl) per length, avgdl the lengths' mean unless given (an exact sum: lengths are
    integers)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    if avgdl is None:
        avgdl = lengths.sum() / len(lengths) if len(lengths) else 0.0
    if not avgdl:
        return np.full(len(lengths), params.k1)
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
