"""Dense vectors: the LSI fit on a bounded sample with every page projected, chunked vector search, and Hybrid
fusion over the candidates alone. Pure: no database."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.retrieval.search import embeddings, engine, fusion
from evaluation.retrieval.search.corpus import Corpus
from evaluation.retrieval.search.embeddings import LsiEmbedder, sample_rows
from evaluation.retrieval.search.engine import SearchConfig, SearchIndex
from goldenset.temporal import Validity
from goldenset.text import tokenize

WORDS = [
    "ship",
    "hull",
    "engine",
    "wing",
    "lift",
    "drag",
    "flow",
    "wave",
    "heat",
    "boundary",
    "layer",
    "shock",
    "pressure",
    "nozzle",
    "blade",
]


def _texts(seed: int, pages: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        " ".join(WORDS[int(i)] for i in rng.zipf(1.5, int(rng.integers(3, 30))) % len(WORDS))
        for _ in range(pages)
    ]


def _full_order(scores: np.ndarray) -> np.ndarray:
    """Every row, best score first, ties by row ascending: the order a full matvec ranks pages in."""
    return np.lexsort((np.arange(len(scores)), -scores))


# --- chunked vector search ----------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
@pytest.mark.parametrize("count", [1, 10, 100])
def test_chunked_top_rows_are_the_full_matvec_ranking_cut_at_count_ties_included(tmp_path, chunk, count):
    rng = np.random.default_rng(chunk * 1000 + count)
    # Small integers: every dot product is exact in float32 and many tie, so the tie-break is exercised.
    matrix = rng.integers(-2, 3, size=(700, 8)).astype(np.float32)
    np.save(tmp_path / "vectors.npy", matrix)
    vectors = np.load(tmp_path / "vectors.npy", mmap_mode="r")  # read-only, as serving processes map it
    query = rng.integers(-2, 3, size=8).astype(np.float32)

    rows, scores = engine.vector_top_rows(vectors, query, count, chunk=chunk)

    full = matrix @ query
    expected = _full_order(full)[:count]
    assert rows.tolist() == expected.tolist()
    assert scores.dtype == np.float32 and scores.tolist() == full[expected].tolist()


def test_chunked_scores_equal_the_full_matvec_and_need_no_float32_copy_of_a_float64_matrix():
    rng = np.random.default_rng(3)
    matrix = rng.integers(-3, 4, size=(1000, 16)).astype(np.float64)
    query = rng.integers(-3, 4, size=16).astype(np.float32)

    scores = engine.vector_scores(matrix, query, chunk=77)

    assert scores.dtype == np.float32
    assert scores.tolist() == (matrix.astype(np.float32) @ query).tolist()


def test_top_rows_of_fewer_pages_than_asked_are_all_of_them_and_of_none_are_none():
    vectors = np.eye(3, dtype=np.float32)
    rows, scores = engine.vector_top_rows(vectors, np.array([0, 1, 0], dtype=np.float32), 100, chunk=2)
    assert rows.tolist() == [1, 0, 2] and scores.tolist() == [1.0, 0.0, 0.0]
    rows, scores = engine.vector_top_rows(np.zeros((0, 3), dtype=np.float32), np.ones(3), 100)
    assert rows.tolist() == [] and scores.tolist() == []


# --- the LSI fit ------------------------------------------------------------------------------------------


def test_the_sample_is_spread_evenly_and_is_everything_when_the_collection_is_small():
    assert sample_rows(5, 10).tolist() == [0, 1, 2, 3, 4]
    assert sample_rows(10, 4).tolist() == [0, 2, 5, 7]
    rows = sample_rows(1_000_003, 20_000)
    assert len(np.unique(rows)) == 20_000 and rows[0] == 0 and rows[-1] < 1_000_003


def test_lsi_vectors_of_a_fully_sampled_collection_are_its_exact_truncated_svd():
    texts = _texts(0, 60)
    embedder = LsiEmbedder(dimensions=5)
    vectors = embedder.fit(texts)

    # The reference: the dense log-TF-IDF matrix, numpy's exact SVD, rows of U S cut at 5 and normalised.
    vocabulary = sorted({t for text in texts for t in tokenize(text)})
    counts = np.array([[tokenize(text).count(term) for term in vocabulary] for text in texts], dtype=float)
    tf = np.where(counts > 0, 1 + np.log(np.where(counts > 0, counts, 1)), 0)
    df = (counts > 0).sum(axis=0)
    weighted = tf * (np.log((1 + len(texts)) / (1 + df)) + 1)
    u, s, _ = np.linalg.svd(weighted, full_matrices=False)
    reference = u[:, :5] * s[:5]
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)

    assert vectors.dtype == np.float32 and vectors.shape == (60, 5)
    assert embedder.projection.dtype == np.float32 and embedder.projection.shape == (len(vocabulary), 5)
    # Singular vectors are defined up to sign: compare the cosines between pages, which are not.
    np.testing.assert_allclose(vectors @ vectors.T, reference @ reference.T, atol=2e-4)


def test_pages_outside_the_sample_are_projected_into_the_same_space_as_a_query_of_their_text():
    texts = _texts(1, 300)
    embedder = LsiEmbedder(dimensions=6, sample=40)
    vectors = embedder.fit(texts)

    assert vectors.shape == (300, 6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    unsampled = sorted(set(range(300)) - set(sample_rows(300, 40).tolist()))[:20]
    for row in unsampled:
        np.testing.assert_allclose(embedder.embed_query(texts[row]), vectors[row], atol=1e-6)
    assert np.array_equal(LsiEmbedder(dimensions=6, sample=40).fit(texts), vectors)  # deterministic


def test_the_vocabulary_keeps_terms_of_two_sampled_pages_most_frequent_first_up_to_the_limit(monkeypatch):
    monkeypatch.setattr(embeddings, "MIN_DF_FROM", 1)
    texts = ["alpha beta once", "alpha beta", "alpha gamma", "gamma alpha", "beta twice", "delta"]
    embedder = LsiEmbedder(dimensions=2, vocabulary_limit=3)
    embedder.fit(texts)
    assert embedder.vocabulary == {"alpha": 0, "beta": 1, "gamma": 2}  # df 4, 3, 2; once/twice/delta: df 1
    assert embedder.projection.shape == (3, 2) and embedder.idf.dtype == np.float32
    assert embedder.embed_query("delta once").tolist() == [0.0, 0.0]  # nothing the space knows


# --- Hybrid over the candidates alone -------------------------------------------------------------------------


def _index(texts: list[str]) -> SearchIndex:
    ids = [f"p{i:04d}" for i in range(len(texts))]
    return SearchIndex(
        Corpus(texts, np.arange(len(texts)), ids, [Validity(i) for i in ids]),
        embedder_factory=lambda _corpus: LsiEmbedder(dimensions=8),
    )


def _reference_hybrid(index: SearchIndex, query: str, config: SearchConfig) -> np.ndarray:
    """Hybrid by its definition, over dense arrays of every page: the CANDIDATES best pages of each list
    (FullText: pages scoring above 0, ties of 32-bit scores by row; Vector: ties by row), fused."""
    size = index.corpus.size
    bm25 = index.bm25(config.bm25_variant).scores(tokenize(query))
    positive = np.flatnonzero(bm25 > 0)
    text_rows = positive[np.lexsort((positive, -bm25[positive].astype(np.float32)))][: engine.CANDIDATES]
    embedder, vectors = index.vectors()
    cosine = np.asarray(vectors) @ embedder.embed_query(query)
    vector_rows = _full_order(cosine)[: engine.CANDIDATES]
    fused = np.zeros(size)
    if config.fusion == "Rrf":
        for rows in (text_rows, vector_rows):
            fused[rows] += 1.0 / (60 + np.arange(1, len(rows) + 1))
    else:
        weight = config.fulltext_weight
        for (rows, scores), w in (((text_rows, bm25), weight), ((vector_rows, cosine), 1 - weight)):
            if len(rows) == 0:
                continue
            values = scores[rows]
            low, high = float(values.min()), float(values.max())
            fused[rows] += w * ((values - low) / (high - low) if high > low else 1.0)
    candidate = np.zeros(size, dtype=bool)
    candidate[text_rows] = candidate[vector_rows] = True
    fused[~candidate] = -np.inf
    return fused


@pytest.mark.parametrize("fusion_name", ["Rrf", "Weighted"])
def test_hybrid_fused_over_the_candidates_equals_its_dense_definition(fusion_name):
    index = _index(_texts(4, 400))
    config = SearchConfig("Hybrid", fusion=fusion_name, fulltext_weight=0.3)
    for query in ["ship hull", "shock wave pressure", "heat boundary layer flow", "nozzle", "unknown words"]:
        got = index.page_scores(query, config)
        np.testing.assert_allclose(got, _reference_hybrid(index, query, config), rtol=1e-6, atol=1e-7)


def test_candidate_fusion_adds_each_list_once_per_page():
    rows, scores = fusion.rrf([np.array([5, 2, 9]), np.array([2, 7])])
    assert rows.tolist() == [2, 5, 7, 9]
    assert scores.tolist() == [1 / 62 + 1 / 61, 1 / 61, 1 / 62, 1 / 63]
    rows, scores = fusion.weighted(
        [(np.array([4, 1]), np.array([3.0, 1.0])), (np.array([1]), np.array([0.5]))], [0.5, 0.5]
    )
    assert rows.tolist() == [1, 4] and scores.tolist() == [0.5, 0.5]


def _dense_ranking(index: SearchIndex, query: str, config: SearchConfig, depth: int) -> tuple:
    """A Hybrid ranking over every page's score (page_scores, then each document's best page, trec_eval's
    order): the path rank_documents took before it ranked the fused candidates alone."""
    corpus = index.corpus
    scores = index.page_scores(query, config)
    by_document = np.maximum.reduceat(scores, corpus.document_starts)
    rows = SearchIndex._ordered(by_document, depth, corpus.id_rank)
    ends = np.r_[corpus.document_starts[1:], len(scores)]
    starts = corpus.document_starts[rows].tolist()
    pages = [
        start + int(np.argmax(scores[start:end]))
        for start, end in zip(starts, ends[rows].tolist(), strict=True)
    ]
    return [corpus.document_ids[r] for r in rows.tolist()], by_document[rows].tobytes(), pages


@pytest.mark.parametrize("pages_each", [1, 3])
@pytest.mark.parametrize("temporal", [False, True])
def test_hybrid_ranked_from_its_candidates_equals_the_ranking_over_every_page(pages_each, temporal):
    """rank_documents ranks a Hybrid search's fused candidates alone (no array the size of the collection):
    the same documents, scores bit for bit and best pages as over every page's score, ties (RRF's equal
    reciprocal ranks) broken by id, at every depth, with documents of several pages and time filters."""
    from datetime import UTC, datetime  # only this test builds validity windows

    rng = np.random.default_rng(7)
    texts = _texts(5, 420)
    page_document = np.sort(rng.integers(0, len(texts) // pages_each, len(texts)))
    page_document = np.unique(page_document, return_inverse=True)[1].astype(np.int64)
    documents = int(page_document.max()) + 1
    ids = [f"d{n}" for n in rng.permutation(documents * 7)[:documents]]  # byte order unlike row order
    ended = datetime(2020, 1, 1, tzinfo=UTC)
    validity = [Validity(i, None, ended if temporal and n % 4 == 0 else None) for n, i in enumerate(ids)]
    index = SearchIndex(
        Corpus(texts, page_document, ids, validity),
        embedder_factory=lambda _corpus: LsiEmbedder(dimensions=8),
    )
    assert index.corpus.temporal == temporal and index.corpus.one_page_each == (documents == len(texts))
    for fusion_name in ("Rrf", "Weighted"):
        config = SearchConfig("Hybrid", fusion=fusion_name, fulltext_weight=0.3)
        for query in [
            "ship hull",
            "shock wave pressure",
            "heat boundary layer flow",
            "nozzle",
            "unknown words",
        ]:
            for depth in (1, 5, 10, 37, 100, 1000):
                got = index.rank_documents(query, config, depth)
                want = _dense_ranking(index, query, config, depth)
                assert (got.document_ids, got.scores.tobytes(), got.page_rows.tolist()) == want, (
                    query,
                    depth,
                )
