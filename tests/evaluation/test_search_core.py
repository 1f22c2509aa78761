"""The search core (postings, kernels, BM25 weights): exact against brute force and the references.

Pure: no database. The brute-force reference below is the previous engine's definition, written plainly: every
page's score summed term by term in query order, documents scored by their best page, ordered as trec_eval
orders a run (32-bit score descending, then id descending in byte order), pages scoring 0 or less left out.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import rank_bm25

from evaluation.retrieval.search import kernels
from evaluation.retrieval.search import postings as postings_module
from evaluation.retrieval.search.bm25 import BM25Index, BM25Params, build_index
from evaluation.retrieval.search.build import build_postings
from evaluation.retrieval.search.postings import Postings
from goldenset.text import tokenize

DEMO = Path(__file__).resolve().parents[2] / "demo" / "clapnq"
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def _id_rank(ids: list[str]) -> np.ndarray:
    order = sorted(range(len(ids)), key=lambda i: ids[i].encode())
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return rank


def _reference_weights(index: BM25Index) -> np.ndarray:
    """Each posting's weight by the formulas, posting by posting (not through the index's table of tf parts):
    idf x tf / (tf + norm) (lucene) or tf (k1 + 1) / (tf + norm) (okapi), norm = k1 (1 - b + b dl / avgdl)."""
    p, params = index.postings, index.params
    lengths = np.asarray(p.lengths, dtype=np.float64)
    avgdl = lengths.sum() / len(lengths)
    norm = params.k1 * (1 - params.b + params.b * lengths / avgdl)
    tf = p.tfs.astype(np.float64)
    row_norm = norm[p.rows]
    part = tf * (params.k1 + 1) / (tf + row_norm) if params.variant == "okapi" else tf / (tf + row_norm)
    return np.repeat(index.idf, p.document_frequency) * part


def _plain_scores(index: BM25Index, query) -> np.ndarray:
    """Every page's sum, term by term in query order, read off the postings (no kernel, no common-term row)."""
    dense = np.zeros(index.size)
    p = index.postings
    weights = _reference_weights(index)
    for column in index.query_terms(query):
        lo, hi = p.indptr[column], p.indptr[column + 1]
        np.add.at(dense, p.rows[lo:hi], weights[lo:hi])  # a page appears once in a term's postings
    return dense


def _brute_force(index: BM25Index, query, ids, page_document=None, live=None, depth=10):
    """(documents, scores, pages) by the plain definition."""
    dense = _plain_scores(index, query)
    page_document = np.arange(index.size) if page_document is None else page_document
    best: dict[int, tuple[float, int]] = {}
    for page, score in enumerate(dense.tolist()):
        if score <= 0 or (live is not None and not live[page]):
            continue
        document = int(page_document[page])
        if document not in best or score > best[document][0]:
            best[document] = (score, page)
    ranked = sorted(best, key=lambda d: (np.float32(best[d][0]), ids[d].encode()), reverse=True)[:depth]
    return ranked, [best[d][0] for d in ranked], [best[d][1] for d in ranked]


def _random_corpus(seed: int, pages: int, vocabulary: int = 12, length: tuple[int, int] = (0, 12)):
    rng = np.random.default_rng(seed)
    words = WORDS[:vocabulary]
    corpus = []
    for _ in range(pages):
        size = int(rng.integers(*length))
        corpus.append([words[int(i)] for i in rng.zipf(1.6, size) % len(words)])
    return corpus


@pytest.mark.parametrize("variant", ["lucene", "okapi"])
@pytest.mark.parametrize("seed", range(6))
def test_top_documents_equals_the_brute_force_ranking(variant, seed):
    rng = np.random.default_rng(100 + seed)
    tokens = _random_corpus(seed, 60)
    tokens += tokens[:15]  # identical pages: identical scores, so the id tie-break decides
    ids = [f"d{int(i)}" for i in rng.permutation(len(tokens))]  # "d10" < "d9" as bytes
    index = build_index(tokens, BM25Params(variant))
    rank = _id_rank(ids)
    ties = 0
    for _q in range(25):
        query = [WORDS[int(i)] for i in rng.integers(0, len(WORDS), int(rng.integers(1, 6)))]
        for depth in (0, 1, 7, 200):
            rows, scores, pages = index.top_documents(query, depth, rank)
            want = _brute_force(index, query, ids, depth=depth)
            assert rows.tolist() == want[0], (query, depth)
            assert scores.tolist() == want[1]  # bit for bit
            assert pages.tolist() == want[2]
        top = np.float32(scores)
        ties += len(top) - len(np.unique(top))
    assert ties > 0, "the corpus must produce tied scores for the tie-break to be tested"


def test_pages_of_one_document_count_once_with_their_best_score_and_first_best_page():
    tokens = _random_corpus(7, 90)
    tokens[10] = tokens[11] = ["alpha", "beta"]  # two equal pages of one document: the first is its best page
    page_document = np.repeat(np.arange(30), 3)
    ids = [f"doc-{i:02d}" for i in range(30)]
    index = build_index(tokens, BM25Params("lucene"))
    rank = _id_rank(ids)
    for query in (["alpha", "beta"], ["gamma"], ["delta", "alpha", "alpha"], ["nothing"]):
        got = index.top_documents(query, 12, rank, page_document)
        want = _brute_force(index, query, ids, page_document=page_document, depth=12)
        assert (got[0].tolist(), got[1].tolist(), got[2].tolist()) == tuple(map(list, want))
    best = index.top_documents(["alpha", "beta"], 30, rank, page_document)
    assert 11 not in best[2].tolist()


def test_pages_cleared_by_the_live_mask_are_never_results():
    tokens = _random_corpus(3, 50)
    ids = [f"p{i}" for i in range(50)]
    index = build_index(tokens, BM25Params("okapi"))
    live = np.arange(50) % 3 != 0
    for query in (["alpha"], ["beta", "gamma"], ["alpha", "beta", "gamma", "delta"]):
        rows, _, _ = index.top_documents(query, 50, _id_rank(ids), live=live)
        assert rows.tolist() == _brute_force(index, query, ids, live=live, depth=50)[0]
        assert all(live[r] for r in rows)


def test_okapi_with_negative_weights_still_leaves_out_pages_that_score_zero_or_less():
    # Every word in most pages: negative okapi idfs, floored at epsilon x a mean that is itself negative.
    tokens = [["alpha", "beta"]] * 8 + [["alpha"]] * 3 + [["gamma"]]
    index = build_index(tokens, BM25Params("okapi"))
    assert not index.positive and (_reference_weights(index) < 0).any()
    assert index.all_weights().tobytes() == _reference_weights(index).tobytes()
    ids = [f"x{i}" for i in range(len(tokens))]
    for query in (["alpha"], ["alpha", "gamma"], ["beta", "alpha"]):
        got = index.top_documents(query, 20, _id_rank(ids))
        assert got[0].tolist() == _brute_force(index, query, ids, depth=20)[0]
        assert (got[1] > 0).all()


def test_the_scratch_arrays_are_left_clean_for_the_next_query():
    tokens = _random_corpus(5, 200)
    ids = [str(i) for i in range(200)]
    index = build_index(tokens, BM25Params("lucene"))
    rank = _id_rank(ids)
    first = index.top_documents(["alpha", "beta"], 5, rank)
    index.top_documents(["gamma", "delta", "epsilon"], 5, rank)
    again = index.top_documents(["alpha", "beta"], 5, rank)
    assert first[0].tolist() == again[0].tolist() and first[1].tolist() == again[1].tolist()
    acc, mark = index._scratch.arrays[:2]
    assert not acc.any() and not mark.any()


def test_okapi_scores_are_rank_bm25s_bit_for_bit_and_lucene_ranks_match_brute_force():
    corpus = [json.loads(line) for line in (DEMO / "corpus.jsonl").read_text().splitlines()]
    queries = [json.loads(line)["text"] for line in (DEMO / "queries.jsonl").read_text().splitlines()][:60]
    tokens = [tokenize(f"{d.get('title', '')}\n{d['text']}") for d in corpus]
    ids = [d["_id"] for d in corpus]
    reference = rank_bm25.BM25Okapi(tokens)
    okapi = build_index(tokens, BM25Params("okapi"))
    lucene = build_index(tokens, BM25Params("lucene"))
    rank = _id_rank(ids)
    for text in queries:
        query = tokenize(text)
        np.testing.assert_array_equal(okapi.scores(query), reference.get_scores(query))
        got = lucene.top_documents(query, 100, rank)
        assert got[0].tolist() == _brute_force(lucene, query, ids, depth=100)[0]


def test_postings_saved_and_mapped_back_search_the_same(tmp_path):
    tokens = _random_corpus(11, 120) + [["ünïcode", "straße", "日本語"]]
    postings = build_postings(tokens)
    postings.save(tmp_path / "postings")
    mapped = Postings.open(tmp_path / "postings")
    # mapped, not read: the array is a view of the file's mapping (a plain ndarray, as the kernels want)
    assert type(mapped.rows) is np.ndarray and isinstance(mapped.rows.base, np.memmap)
    for name in ("indptr", "rows", "codes", "tfs", "lengths", "term_hashes", "first_seen", "common_codes"):
        np.testing.assert_array_equal(getattr(mapped, name), getattr(postings, name))
    built = BM25Index(postings, BM25Params("okapi"))
    loaded = BM25Index(mapped, BM25Params("okapi"))
    rank = _id_rank([str(i) for i in range(len(tokens))])
    for query in (["alpha", "beta"], ["straße"], ["日本語", "alpha"], ["absent"]):
        a, b = built.top_documents(query, 10, rank), loaded.top_documents(query, 10, rank)
        assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    assert loaded.query_terms(["straße", "strasse", "日本語"]).tolist() == [
        mapped.term_ids(["straße"])[0],
        mapped.term_ids(["日本語"])[0],
    ]


@pytest.mark.parametrize("size", [1, 2, 7, 64, 1_000])
def test_kth_largest_is_numpys_partition(size):
    rng = np.random.default_rng(size)
    for values in (
        rng.random(size),
        rng.integers(0, 4, size).astype(np.float64),  # many ties
        np.zeros(size),
        np.arange(size, dtype=np.float64),  # ascending: every value enters the heap
        np.arange(size, dtype=np.float64)[::-1].copy(),
    ):
        for k in sorted({1, min(2, size), size // 2 or 1, size}):
            expected = np.partition(values, size - k)[size - k]
            assert kernels._kth_largest(values, k) == expected
    strided = rng.random(4 * size)[::4]  # the kernel passes every stride-th page, not a copy
    assert kernels._kth_largest(strided, 1) == strided.max()


def test_no_page_and_no_term_give_empty_results():
    empty = build_index([], BM25Params("lucene"))
    assert empty.top_documents(["alpha"], 10, np.zeros(0, dtype=np.int64))[0].tolist() == []
    blank = build_index([[], []], BM25Params("okapi"))
    assert blank.top_documents(["alpha"], 10, _id_rank(["a", "b"]))[0].tolist() == []
    assert blank.scores(["alpha"]).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("variant", ["lucene", "okapi"])
def test_large_collections_take_the_sampled_threshold_path_and_stay_exact(variant):
    """Queries that touch most of 20,000 pages: candidates are kept above a threshold read off a sample of the
    pages (kernels._above_sampled_threshold); the ranking must still be the brute-force one, ties included,
    and a collection of identical pages (a threshold no page exceeds) must fall back to the full pass."""
    rng = np.random.default_rng(5)
    common = ["alpha", "beta", "gamma"]
    tokens = [
        [common[int(i)] for i in rng.integers(0, 3, int(rng.integers(1, 9)))]
        + ([WORDS[3 + int(rng.integers(0, 9))]] if rng.random() < 0.3 else [])
        for _ in range(20_000)
    ]
    ids = [f"doc{i}" for i in rng.permutation(len(tokens))]
    rank = _id_rank(ids)
    index = build_index(tokens, BM25Params(variant))
    live = rng.random(len(tokens)) < 0.9
    assert index.postings.common_terms.tolist() == index.query_terms(common).tolist()  # alpha, beta, gamma
    for query in (["alpha"], ["alpha", "beta"], ["gamma", "delta", "alpha"], ["beta", "beta", "zeta"]):
        dense = _plain_scores(index, query)
        assert index.scores(query).tobytes() == dense.tobytes()
        for depth, mask in ((10, None), (50, None), (20, live)):
            ok = dense > 0 if mask is None else (dense > 0) & mask
            rows = np.flatnonzero(ok)
            expected = rows[np.lexsort((-rank[rows], -dense[rows].astype(np.float32)))][:depth]
            got = index.top_documents(query, depth, rank, live=mask)
            assert got[0].tolist() == expected.tolist(), (query, depth)
            assert got[1].tolist() == dense[expected].tolist()
    same = build_index([["alpha", "beta"]] * 19_999 + [["gamma"]], BM25Params(variant))
    got = same.top_documents(["alpha"], 10, rank)
    if variant == "lucene":
        assert got[0].tolist() == np.argsort(-rank[:19_999])[:10].tolist()  # all tied: the highest ids win
    else:  # okapi: a word on nearly every page has a negative idf, so no page scores above 0
        assert got[0].tolist() == []


@pytest.mark.parametrize("variant", ["lucene", "okapi"])
@pytest.mark.parametrize("pages_each", [1.5, 12])
def test_documents_of_many_pages_take_the_sampled_threshold_path_and_stay_exact(variant, pages_each):
    """20,000 pages in documents of 1 to 2 pages (or 1 to 23): candidates are the pages above a sampled
    threshold that at least `depth` documents exceed; each document must still score by its best page (the
    first of equal ones), one long document's many strong pages must not crowd the others out, and identical
    pages (no page above the threshold) must fall back to reading every page."""
    rng = np.random.default_rng(9)
    sizes = rng.integers(1, int(2 * pages_each), 20_000)
    sizes = sizes[np.cumsum(sizes) <= 19_000]
    sizes = np.r_[sizes, 20_000 - 400 - sizes.sum(), 400]  # then one document of 400 pages
    page_document = np.repeat(np.arange(len(sizes)), sizes)
    common = ["alpha", "beta", "gamma"]
    tokens = [
        [common[int(i)] for i in rng.integers(0, 3, int(rng.integers(1, 9)))]
        + ([WORDS[3 + int(rng.integers(0, 9))]] if rng.random() < 0.3 else [])
        for _ in range(20_000)
    ]
    for page in range(20_000 - 400, 20_000):
        tokens[page] = ["alpha", "zeta"]  # the long document's pages all score high on alpha + zeta
    ids = [f"doc{i}" for i in rng.permutation(len(sizes))]
    rank = _id_rank(ids)
    index = build_index(tokens, BM25Params(variant))
    live = rng.random(len(tokens)) < 0.9
    for query in (["alpha"], ["alpha", "beta"], ["alpha", "zeta"], ["gamma", "delta", "alpha"]):
        for depth, mask in ((10, None), (100, None), (20, live)):
            got = index.top_documents(query, depth, rank, page_document, live=mask)
            want = _brute_force(index, query, ids, page_document=page_document, live=mask, depth=depth)
            assert (got[0].tolist(), got[1].tolist(), got[2].tolist()) == tuple(map(list, want)), query
        acc, mark, touched, doc_list, doc_best, doc_page, doc_mark = index._scratch.arrays
        assert not acc.any() and not doc_mark.any()
    same = build_index([["alpha", "beta"]] * 20_000, BM25Params("lucene"))
    got = same.top_documents(["alpha"], 10, rank, page_document)
    want = _brute_force(same, ["alpha"], ids, page_document=page_document, depth=10)
    assert (got[0].tolist(), got[2].tolist()) == (want[0], want[2])


@pytest.mark.parametrize("variant", ["lucene", "okapi"])
def test_common_terms_rows_give_the_postings_sums_bit_for_bit(variant):
    """Terms on a quarter of the pages or more are added as dense rows of codes (postings.dense_codes): the
    sums, rankings and scores must be those of the same index adding every term posting by posting, for queries
    mixing common and rare terms, repeated terms, okapi's negative weights, and a live mask."""
    rng = np.random.default_rng(8)
    tokens = [
        page + ([f"rare{i % 40}"] if i % 3 == 0 else [])
        for i, page in enumerate(_random_corpus(8, 3_000, vocabulary=12, length=(0, 30)))
    ]
    ids = [f"p{i}" for i in rng.permutation(len(tokens))]
    rank = _id_rank(ids)
    index = build_index(tokens, BM25Params(variant))
    df = index.postings.document_frequency
    common = index.postings.common_terms
    assert common.tolist() == np.flatnonzero(4 * df >= len(tokens)).tolist()
    assert 0 < len(common) < index.postings.terms  # both kinds of term present
    codes = index.postings.codes
    none = dataclasses.replace(
        index.postings, common_terms=common[:0], common_codes=np.zeros((0, 0), dtype=codes.dtype)
    )
    plain = BM25Index(none, index.params, idf=index.idf)
    live = rng.random(len(tokens)) < 0.8
    queries = (["alpha"], ["alpha", "rare3"], ["rare3", "alpha", "alpha", "beta"], WORDS, ["rare1", "rare2"])
    for query in queries:
        assert index.scores(query).tobytes() == _plain_scores(index, query).tobytes()
        assert plain.scores(query).tobytes() == _plain_scores(index, query).tobytes()
        for depth, mask in ((10, None), (100, live)):
            a = index.top_documents(query, depth, rank, live=mask)
            b = plain.top_documents(query, depth, rank, live=mask)
            assert all(x.tobytes() == y.tobytes() for x, y in zip(a, b, strict=True)), query
            assert a[0].tolist() == _brute_force(index, query, ids, live=mask, depth=depth)[0]


def test_common_terms_are_capped_to_the_most_frequent():
    tokens = [WORDS[: 2 + i % 10] for i in range(100)]  # alpha and beta everywhere, then fewer and fewer
    postings = build_postings(tokens)
    df = postings.document_frequency
    terms = postings_module.common_columns(df, postings.size, share=4, most=3)
    rows = postings_module.dense_codes(postings.indptr, postings.rows, postings.codes, terms, postings.size)
    assert sorted(df[terms].tolist(), reverse=True) == sorted(df.tolist(), reverse=True)[:3]
    assert terms.tolist() == sorted(terms.tolist())
    for j, column in enumerate(terms.tolist()):
        lo, hi = postings.indptr[column], postings.indptr[column + 1]
        expected = np.zeros(postings.size, dtype=postings.codes.dtype)
        expected[postings.rows[lo:hi]] = postings.codes[lo:hi]
        assert rows[j].tobytes() == expected.tobytes()
        assert (postings.code_tfs[rows[j][postings.rows[lo:hi]]] == postings.tfs[lo:hi]).all()


def test_a_configurations_own_k1_and_b_score_as_rank_bm25_with_them_and_leave_the_saved_index_alone():
    """bm25_k1/bm25_b (a study's trials): the same postings reweighted, bit for bit rank-bm25's BM25Okapi with
    those parameters; the default weights are untouched, and the reweighted ones are never saved."""
    from evaluation.retrieval.search import index_format
    from evaluation.retrieval.search.corpus import Corpus
    from evaluation.retrieval.search.engine import TUNED_KEPT, SearchConfig, SearchIndex
    from goldenset.temporal import Validity

    corpus = [json.loads(line) for line in (DEMO / "corpus.jsonl").read_text().splitlines()]
    texts = [f"{d.get('title', '')}\n{d['text']}" for d in corpus]
    ids = [d["_id"] for d in corpus]
    index = SearchIndex(Corpus(texts, np.arange(len(texts)), ids, [Validity(i) for i in ids]))
    query = tokenize("who played the first doctor who")
    default = index.bm25_for(SearchConfig(bm25_variant="okapi")).scores(query)
    for k1, b in ((0.9, 0.4), (2.0, 1.0), (0.1, 0.0)):
        tuned = index.bm25_for(SearchConfig(bm25_variant="okapi", bm25_k1=k1, bm25_b=b))
        reference = rank_bm25.BM25Okapi([tokenize(t) for t in texts], k1=k1, b=b)
        np.testing.assert_array_equal(tuned.scores(query), reference.get_scores(query))
        assert tuned.postings is index.postings  # reweighted, not re-indexed
    np.testing.assert_array_equal(index.bm25("okapi").scores(query), default)
    assert not np.array_equal(
        default, index.bm25_for(SearchConfig(bm25_variant="okapi", bm25_k1=0.9)).scores(query)
    )
    assert len(index._tuned) <= TUNED_KEPT
    assert set(index.bm25_indexes) == {"okapi"}
    described, arrays = index_format.describe(index, postings=True, variants=["okapi"], embedder=None)
    assert described["bm25"] == ["okapi"] and all(name.startswith("corpus-") for name in arrays)
    # the defaults spelled out are the default index itself
    same = SearchConfig(bm25_variant="lucene", bm25_k1=1.5, bm25_b=0.75)
    assert index.bm25_for(same) is index.bm25("lucene")


def test_rrf_k_is_the_fusions_k():
    from evaluation.retrieval.search import fusion

    rows, fused = fusion.rrf([np.array([3, 1]), np.array([1, 2])], k=5)
    assert rows.tolist() == [1, 2, 3]
    assert fused.tolist() == [1 / 7 + 1 / 6, 1 / 7, 1 / 6]
