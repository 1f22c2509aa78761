"""A digest of every answer of the search core over a synthetic corpus (benchmarks/synthetic.py): the top 100
rows and scores and every page's score, for each real query, both BM25 variants, default and tuned k1 and b. Run
it on two trees (this one and another commit's checkout) to show that a change of the engine leaves every answer
bit for bit as it was:

    git worktree add /tmp/before <commit>
    .venv/bin/python benchmarks/search_digest.py --root /tmp/before --pages 100000
    .venv/bin/python benchmarks/search_digest.py --pages 100000

Builds with whichever build function the tree has (search/build.py, or postings.build_postings before it).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", default=str(ROOT), help="the tree whose search core answers")
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="2,000 pages (tests/test_benchmarks_quick.py)")
    args = parser.parse_args()
    if args.quick:
        args.pages = 2_000
    sys.path[:0] = [args.root, str(Path(args.root) / "benchmarks")]
    import numpy as np
    import synthetic

    from evaluation.retrieval.search.bm25 import BM25Index, BM25Params
    from goldenset.text import tokenize

    try:
        from evaluation.retrieval.search.build import build_postings
    except ImportError:  # a tree from before the segmented build
        from evaluation.retrieval.search.postings import build_postings  # type: ignore[attr-defined,no-redef]

    postings = build_postings(list(synthetic.token_lists(args.pages, tokenize)))
    queries = [tokenize(q) for q in synthetic.queries(tokenize)]
    ids = [f"p{i}" for i in range(args.pages)]
    rank = np.empty(args.pages, dtype=np.int64)
    rank[sorted(range(args.pages), key=lambda i: ids[i].encode())] = np.arange(args.pages)
    for params in (
        BM25Params("lucene"),
        BM25Params("lucene", 0.9, 0.4),
        BM25Params("okapi"),
        BM25Params("okapi", 0.9, 0.4),
    ):
        index = BM25Index(postings, params)
        digest = hashlib.sha256()
        for query in queries:
            rows, scores, _ = index.top_documents(query, 100, rank)
            digest.update(rows.astype(np.int64).tobytes() + scores.astype(np.float64).tobytes())
            digest.update(index.scores(query).tobytes())
        print(
            f"{params.variant} k1={params.k1} b={params.b}: {digest.hexdigest()[:16]} ({len(queries)} queries)"
        )
    module = sys.modules[build_postings.__module__]
    print(f"built by {module.__name__} ({module.__file__})")


if __name__ == "__main__":
    main()
