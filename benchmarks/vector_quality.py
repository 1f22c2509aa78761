"""Dense vectors and offline reranking, measured (issue 12, part 5): Hybrid quality, the rerankers' effect with a
paired significance test, and what fitting the LSI vectors costs.

    .venv/bin/python benchmarks/vector_quality.py [--datasets DIR ...] [--permutations 10000] [--quick]
    .venv/bin/python benchmarks/vector_quality.py --scale 100000   # LSI fit on a synthetic corpus

For each collection (default: ../shared/datasets/vaswani_npl, cranfield and clapnq) the engine is built directly
(no Django, no database): FullText (lucene), Vector (the offline LSI embedder), Hybrid (Rrf) and every offline
reranker over FullText and Hybrid. It prints
1. the LSI fit: seconds, the growth of the process's peak resident memory, the vectors' shape and type;
2. nDCG@10, R@100 and MRR@10 per configuration (top 100, trec_eval order) and, against its baseline (Hybrid
   against FullText, a reranked configuration against the same one without rerank), the change in nDCG@10 with
   the two-sided p-value of the paired randomization test (evaluation/runs/stats.py) over the judged queries.
`--scale PAGES` instead fits LSI on a synthetic corpus of PAGES pages with real word statistics
(benchmarks/synthetic.py) and times a vector search over it. `--quick` runs every step on a sample of each
collection (the relevant documents of its first 20 judged queries, topped up to 300 documents) in seconds.
Exits 1 when a configuration fails to run.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from evalsite.env import limit_blas_threads  # noqa: E402  (before numpy: one BLAS thread, as the servers run)

limit_blas_threads(1)

import search_bench  # noqa: E402

DATASETS = ROOT.parent / "shared" / "datasets"
DEFAULT = [DATASETS / "vaswani_npl", DATASETS / "cranfield", DATASETS / "clapnq"]
DEPTH = 100


def load(folder: Path, quick: bool):
    corpus, queries, qrels = search_bench.load(folder)
    if quick:
        return search_bench.quick_sample(corpus, queries, qrels)
    return corpus, [q for q in queries if q["_id"] in qrels], qrels


def peak_rss_reset() -> bool:
    """Reset the kernel's peak-RSS mark of this process (Linux: clear_refs 5); whether it could."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed_fit(index) -> tuple[float, float]:
    """(seconds, MiB the peak resident memory rose by) of building the index's page vectors."""
    gc.collect()
    before = rss_mib()
    reset = peak_rss_reset()
    started = time.perf_counter()
    index.vectors()
    seconds = time.perf_counter() - started
    return seconds, (peak_rss_mib() - before) if reset else float("nan")


def configurations(index):
    """(label, SearchConfig, reranker or None, baseline label or None) to measure."""
    from evaluation.retrieval.search.engine import SearchConfig
    from evaluation.retrieval.search.rerank import ProximityReranker

    postings = index.bm25("lucene").postings
    fulltext, hybrid = SearchConfig("FullText"), SearchConfig("Hybrid", fusion="Rrf")
    rows = [
        ("FullText", fulltext, None, None),
        ("Vector (LSI)", SearchConfig("Vector"), None, "FullText"),
        ("Hybrid Rrf", hybrid, None, "FullText"),
        ("Hybrid Weighted", SearchConfig("Hybrid", fusion="Weighted"), None, "FullText"),
        ("FullText + proximity", fulltext, ProximityReranker(postings), "FullText"),
        ("Hybrid Rrf + proximity", hybrid, ProximityReranker(postings), "Hybrid Rrf"),
    ]
    return [
        *rows,
        ("FullText + feedback", fulltext, FeedbackReranker(postings), "FullText"),
        ("Hybrid Rrf + feedback", hybrid, FeedbackReranker(postings), "Hybrid Rrf"),
    ]


FEEDBACK_PAGES = 10  # the best first-stage candidates taken as relevant
FEEDBACK_TERMS = 20  # expansion terms kept
ORIGINAL_WEIGHT = 0.5  # the original query's share of the expanded one
COMMON = 0.1  # terms on more than this share of the pages are never expansion terms (a stopword list's work)
BM25_K1, BM25_B = 1.5, 0.75


class FeedbackReranker:
    """RM3 pseudo-relevance feedback (Abdul-Jaleel et al. 2004, as Anserini runs it) over the candidates.

    The best FEEDBACK_PAGES candidates are taken as relevant: each term's weight is its share of each page's
    words, weighted by the page's share of their first-stage scores; the FEEDBACK_TERMS heaviest terms (leaving
    out those on more than COMMON of the pages) are mixed half and half with the query's own terms, and every
    candidate is scored by Lucene BM25 of that weighted query (idf and average length from the collection's
    postings). The first-stage score only chooses the candidates and the feedback pages."""

    name = "feedback"

    def __init__(self, postings):
        self.postings = postings
        self._average_length: float | None = None

    def score(self, query: str, texts, first_stage):
        import numpy as np

        from goldenset.text import tokenize

        query_terms = Counter(tokenize(query))
        if not len(texts) or not query_terms:
            return np.asarray(first_stage, dtype=np.float64).copy()
        pages = [Counter(tokenize(text)) for text in texts]
        lengths = [sum(page.values()) for page in pages]
        weights = self._expanded_query(query_terms, pages, lengths, np.asarray(first_stage, dtype=np.float64))
        idf = self._idf(list(weights))
        average = self.average_length
        scores = np.zeros(len(pages))
        for row, (page, length) in enumerate(zip(pages, lengths, strict=True)):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
            scores[row] = sum(
                weight * idf.get(term, 0.0) * page[term] * (BM25_K1 + 1) / (page[term] + norm)
                for term, weight in weights.items()
                if term in page
            )
        return scores

    @property
    def average_length(self) -> float:
        import numpy as np

        if self._average_length is None:  # once per reranker: a pass over the page lengths
            self._average_length = float(np.mean(self.postings.lengths)) if self.postings.size else 1.0
        return self._average_length or 1.0

    def _expanded_query(self, query_terms: Counter, pages: list[Counter], lengths: list[int], first_stage):
        import numpy as np

        top = min(FEEDBACK_PAGES, len(pages))
        scores = first_stage[:top] - min(0.0, float(first_stage[:top].min()))
        shares = scores / scores.sum() if scores.sum() > 0 else np.full(top, 1.0 / top)
        relevance: Counter[str] = Counter()
        for page, length, share in zip(pages[:top], lengths[:top], shares.tolist(), strict=True):
            for term, count in page.items():
                relevance[term] += share * count / max(1, length)
        common = self._common(list(relevance))
        expansion = [(t, w) for t, w in relevance.most_common() if t not in common][:FEEDBACK_TERMS]
        total = sum(w for _, w in expansion) or 1.0
        query_total = sum(query_terms.values())
        weights: dict[str, float] = {}
        for term, count in query_terms.items():
            weights[term] = ORIGINAL_WEIGHT * count / query_total
        for term, weight in expansion:
            weights[term] = weights.get(term, 0.0) + (1 - ORIGINAL_WEIGHT) * weight / total
        return weights

    def _common(self, terms: list[str]) -> set[str]:
        limit = COMMON * self.postings.size
        return {term for term, f in self.postings.document_frequencies(terms).items() if f > limit}

    def _idf(self, terms: list[str]) -> dict[str, float]:
        from evaluation.retrieval.search.rerank import lucene_idf

        return lucene_idf(self.postings, terms)


def measure(folder: Path, quick: bool, permutations: int) -> list[str]:
    import numpy as np

    from evaluation.retrieval import metrics
    from evaluation.retrieval.search.corpus import Corpus
    from evaluation.retrieval.search.embeddings import LsiEmbedder
    from evaluation.retrieval.search.engine import SearchIndex
    from evaluation.runs.stats import paired_randomization_test
    from goldenset.temporal import Validity

    corpus, queries, qrels = load(folder, quick)
    texts = [f"{d['title']}\n{d['text']}" if d.get("title") else d["text"] for d in corpus]
    ids = [d["_id"] for d in corpus]
    name = folder.name + (" (--quick sample)" if quick else "")
    print(f"## {name}: {len(texts):,} pages, {len(queries)} judged queries, top {DEPTH}\n")
    index = SearchIndex(
        Corpus(texts, np.arange(len(texts)), ids, [Validity(i) for i in ids]),
        embedder_factory=lambda _corpus: LsiEmbedder(),
    )
    index.bm25("lucene")
    seconds, peak = timed_fit(index)
    _, vectors = index.vectors()
    print(
        f"LSI fit: {seconds:.2f} s, peak resident memory +{peak:.0f} MiB, "
        f"vectors {vectors.shape[0]:,} x {vectors.shape[1]} {vectors.dtype}\n"
    )
    failures = []
    per_query: dict[str, np.ndarray] = {}
    print("| configuration | nDCG@10 | R@100 | MRR@10 | ms/query | nDCG@10 vs baseline | p |")
    print("|---|---|---|---|---|---|---|")
    for label, config, reranker, baseline in configurations(index):
        try:
            started = time.perf_counter()
            rankings = [index.rank_documents(q["text"], config, DEPTH, reranker) for q in queries]
            ms = (time.perf_counter() - started) * 1000 / max(1, len(queries))
        except Exception as exc:  # one failing configuration is reported, the others still measured
            failures.append(f"{name} {label}: {type(exc).__name__}: {exc}")
            print(f"| {label} | failed: {type(exc).__name__} | | | | | |")
            continue
        scores = np.array(
            [
                (
                    metrics.ndcg_at(r.document_ids, qrels[q["_id"]], 10),
                    metrics.recall_at(r.document_ids, qrels[q["_id"]], 100),
                    metrics.reciprocal_rank_at(r.document_ids, qrels[q["_id"]], 10),
                )
                for q, r in zip(queries, rankings, strict=True)
            ]
        )
        per_query[label] = scores[:, 0]
        ndcg, recall, mrr = (statistics.fmean(column) for column in scores.T)
        versus = p = ""
        if baseline in per_query:
            base = per_query[baseline]
            versus = f"{scores[:, 0].mean() - base.mean():+.4f} vs {baseline}"
            p_value = paired_randomization_test(scores[:, 0], base, permutations=permutations)
            p = f"{p_value:.4f}"
        print(f"| {label} | {ndcg:.4f} | {recall:.4f} | {mrr:.4f} | {ms:.1f} | {versus} | {p} |")
    print()
    return failures


def scale(pages: int, seed: int) -> None:
    """LSI fit on a synthetic corpus of `pages` pages, and a vector search over it."""
    import numpy as np
    import synthetic

    from evaluation.retrieval.search.corpus import Corpus
    from evaluation.retrieval.search.embeddings import LsiEmbedder
    from evaluation.retrieval.search.engine import SearchConfig, SearchIndex
    from goldenset.temporal import Validity
    from goldenset.text import tokenize

    texts = [" ".join(tokens) for tokens in synthetic.token_lists(pages, tokenize, seed)]
    ids = [f"d{i}" for i in range(pages)]
    index = SearchIndex(
        Corpus(texts, np.arange(pages), ids, [Validity(i) for i in ids]),
        embedder_factory=lambda _corpus: LsiEmbedder(),
    )
    print(f"## synthetic corpus: {pages:,} pages (seed {seed})\n")
    seconds, peak = timed_fit(index)
    embedder, vectors = index.vectors()
    print(
        f"LSI fit: {seconds:.1f} s, peak resident memory +{peak:.0f} MiB, "
        f"vectors {vectors.shape[0]:,} x {vectors.shape[1]} {vectors.dtype}, "
        f"embedder vocabulary {len(embedder.vocabulary):,} terms"
    )
    queries = synthetic.queries(tokenize)[:50]
    config = SearchConfig("Vector")
    index.rank_documents(queries[0], config, DEPTH)
    started = time.perf_counter()
    for query in queries:
        index.rank_documents(query, config, DEPTH)
    ms = (time.perf_counter() - started) * 1000 / len(queries)
    print(f"Vector search, top {DEPTH}: {ms:.1f} ms per query ({len(queries)} queries)\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, nargs="+", default=DEFAULT)
    parser.add_argument("--permutations", type=int, default=10000)
    parser.add_argument("--quick", action="store_true", help="a sample of each collection, in seconds")
    parser.add_argument("--scale", type=int, metavar="PAGES", help="instead: LSI on a synthetic corpus")
    parser.add_argument("--seed", type=int, default=0, help="of the synthetic corpus (--scale)")
    args = parser.parse_args()
    if args.scale:
        scale(args.scale, args.seed)
        return
    folders = [f for f in args.datasets if (f / "corpus.jsonl").is_file()]
    if not folders:
        parser.error(f"none of {[str(f) for f in args.datasets]} holds a corpus.jsonl")
    failures: list[str] = []
    for folder in folders:
        failures += measure(folder, args.quick, 1000 if args.quick else args.permutations)
    if failures:
        sys.exit("FAILED: " + "; ".join(failures))


if __name__ == "__main__":
    main()
