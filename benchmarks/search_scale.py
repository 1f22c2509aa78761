"""search_bench.py --scale N: the search core on a synthetic corpus of N pages (benchmarks/synthetic.py), side
by side with bm25s (numba and numpy backends), tantivy (when installed) and rank-bm25 (on a sample of queries),
in one run, all given the same token lists and the same queries, top 100, one thread.

    .venv/bin/python benchmarks/search_bench.py --scale 1000000 [--repeat 3] [--seed 0]

Measured:
1. build time per engine (evalsite: postings and lucene weights, then saved as the .npy files that processes
   map), and the size of evalsite's files;
2. queries per second, best of --repeat passes over the queries (evalsite and bm25s numba taking turns in each
   round): evalsite's whole query path (query text -> tokens -> term columns -> kernel -> document ids in
   trec_eval order), and from the same token lists as bm25s to rows and scores in order (bm25s's input and
   output), in this process, then again in a fresh process that maps the saved files (the serving figure),
   beside bm25s's batch retrieve and tantivy's searcher, and the same index without its common-term rows
   (every term's postings added one by one: what the rows bring);
3. that fresh process's memory: RSS, split into private (RssAnon) and file-backed pages (RssFile: the mapped
   index, shared by every process that maps it), and per page;
4. exactness: evalsite's top 100 for a sample of queries equals the brute-force ranking (every page's score
   summed off the postings in query order, numpy alone, trec_eval's order), bit for bit.
Exits 1 when exactness fails.
"""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from search_bench import best_interleaved, best_of

ROOT = Path(__file__).resolve().parent.parent
DEPTH = 100


def _memory() -> dict[str, int]:
    """This process's VmRSS, RssAnon, RssFile and VmHWM in KiB."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            found[name] = int(value.split()[0])
    return found


def _ids(pages: int) -> list[str]:
    return [f"p{i}" for i in range(pages)]


def run(pages: int, repeat: int, seed: int) -> int:
    import dataclasses

    import bm25s
    import synthetic

    from evaluation.retrieval.search.bm25 import BM25Index, BM25Params
    from evaluation.retrieval.search.build import build_postings
    from goldenset.text import tokenize

    started = time.perf_counter()
    tokens = list(synthetic.token_lists(pages, tokenize, seed=seed))
    query_texts = synthetic.queries(tokenize)
    query_tokens = [tokenize(q) for q in query_texts]
    n_tokens = sum(map(len, tokens))
    print(
        f"# synthetic corpus: {pages:,} pages, {n_tokens:,} tokens ({n_tokens / pages:.0f} a page), "
        f"{len(query_texts)} real queries, top {DEPTH}, one thread; generated in {time.perf_counter() - started:.0f} s\n"
    )
    failures = []
    folder = Path(tempfile.mkdtemp(prefix="evalsite-scale-"))
    try:
        # 1. builds
        started = time.perf_counter()
        (folder / "postings").mkdir()
        postings = build_postings(tokens, folder=folder / "postings")  # as the product builds: into files
        index = BM25Index(postings, BM25Params("lucene"))
        ours_build = time.perf_counter() - started
        started = time.perf_counter()
        np.save(folder / "idf.npy", index.idf)
        ours_save = time.perf_counter() - started
        on_disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        print(f"vocabulary: {postings.terms:,} terms, {len(postings.rows):,} postings\n")

        started = time.perf_counter()
        retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75, backend="numba")
        retriever.index(tokens, show_progress=False)
        bm25s_build = time.perf_counter() - started

        tantivy_index = _tantivy_build(tokens)
        print("## Build\n| engine | seconds | notes |\n|---|---|---|")
        print(
            f"| evalsite | {ours_build:.1f} | + {ours_save:.1f} s to save; files {on_disk / 2**20:,.0f} MiB "
            f"({on_disk / pages:,.0f} bytes a page) |"
        )
        print(f"| bm25s (lucene) | {bm25s_build:.1f} | in memory |")
        if tantivy_index is not None:
            print(
                f"| tantivy | {tantivy_index[1]:.1f} | in memory, whitespace tokenizer over the same tokens |"
            )
        print()

        # 2. queries per second in this process
        ids = _ids(pages)
        rank = np.arange(pages, dtype=np.int64)
        order = sorted(range(pages), key=lambda i: ids[i].encode())
        rank[order] = np.arange(pages)
        id_array = np.array(ids, dtype=object)

        def ours():
            for q in query_texts:
                rows, _, _ = index.top_documents(tokenize(q), DEPTH, rank)
                id_array[rows].tolist()

        def ours_tokens():  # bm25s's input (the token lists) and output (rows and scores in order)
            for q in query_tokens:
                index.top_documents(q, DEPTH, rank)

        # the same index adding every term posting by posting: what the common-term rows bring
        no_common = dataclasses.replace(
            postings,
            common_terms=postings.common_terms[:0],
            common_codes=np.zeros((0, 0), dtype=postings.codes.dtype),
        )
        postings_only = BM25Index(no_common, index.params, idf=index.idf)

        def ours_postings_only():
            for q in query_tokens:
                postings_only.top_documents(q, DEPTH, rank)

        def bm25s_run(engine, backend):
            return lambda: engine.retrieve(
                query_tokens, k=DEPTH, show_progress=False, n_threads=1, backend_selection=backend
            )

        ours()
        bm25s_run(retriever, "numba")()
        ours_tokens()
        ours_postings_only()
        results = best_interleaved(
            repeat,
            {
                "evalsite (this process)": ours,
                "evalsite from the token lists (this process)": ours_tokens,
                f"the same without the {len(postings.common_terms)} common-term rows": ours_postings_only,
                "bm25s numba": bm25s_run(retriever, "numba"),
            },
        )
        if pages <= 300_000:
            plain = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
            plain.index(tokens, show_progress=False)
            results["bm25s numpy"] = best_of(max(1, repeat // 2), bm25s_run(plain, "numpy"))
            del plain
        if tantivy_index is not None:
            results["tantivy"] = best_of(repeat, lambda: _tantivy_search(tantivy_index[0], query_tokens))
        del retriever
        gc.collect()

        # the serving process: a fresh interpreter that maps the saved files
        np.save(folder / "rank.npy", rank)
        (folder / "queries.json").write_text(json.dumps(query_texts))
        served = json.loads(
            subprocess.run(
                [sys.executable, __file__, "--serve", str(folder), str(repeat)],
                check=True,
                capture_output=True,
                text=True,
                cwd=ROOT,
            ).stdout
        )
        results["evalsite (fresh process, mapped files)"] = served["seconds"]
        results["evalsite from the token lists (fresh process)"] = served["seconds_tokens"]
        n = len(query_texts)
        reference = results["bm25s numba"]
        print(
            "## Queries per second (best of passes, evalsite and bm25s numba taking turns; evalsite: query text to "
            "ids in order, and from the same token lists as bm25s to rows and scores in order)"
        )
        print("| engine | qps | vs bm25s numba |\n|---|---|---|")
        for name, seconds in results.items():
            print(f"| {name} | {n / seconds:,.0f} | {reference / seconds:.2f}x |")
        memory = served["memory"]
        print(
            f"\n## Memory of the serving process after {repeat} passes\nRSS {memory['VmRSS'] / 1024:,.0f} MiB "
            f"(peak {memory['VmHWM'] / 1024:,.0f}): private {memory['RssAnon'] / 1024:,.0f} MiB "
            f"({memory['RssAnon'] * 1024 / pages:,.0f} bytes a page), mapped files "
            f"{memory['RssFile'] / 1024:,.0f} MiB (shared by every process mapping them); "
            f"interpreter and libraries before opening the index: {served['baseline']['VmRSS'] / 1024:,.0f} MiB\n"
        )

        # 4. exactness against brute force
        rng = np.random.default_rng(seed)
        sample = rng.choice(len(query_texts), size=min(20, len(query_texts)), replace=False)
        lengths = np.asarray(postings.lengths, dtype=np.float64)
        norm = 1.5 * (1 - 0.75 + 0.75 * lengths / (lengths.sum() / pages))  # lucene, k1 1.5, b 0.75
        exact = 0
        for i in sample.tolist():
            query = tokenize(query_texts[i])
            dense = np.zeros(pages)  # every page's sum, term by term in query order, off the postings
            for column in index.query_terms(query):
                lo, hi = postings.indptr[column], postings.indptr[column + 1]
                rows = np.asarray(postings.rows[lo:hi])
                tf = postings.code_tfs[postings.codes[lo:hi]].astype(
                    np.float64
                )  # the formula, posting by posting
                np.add.at(dense, rows, index.idf[column] * (tf / (tf + norm[rows])))
            rows = np.flatnonzero(dense > 0)
            expected = rows[np.lexsort((-rank[rows], -dense[rows].astype(np.float32)))][:DEPTH]
            got, scores, _ = index.top_documents(query, DEPTH, rank)
            exact += got.tolist() == expected.tolist() and scores.tolist() == dense[expected].tolist()
        print(
            f"exact (top {DEPTH} equal to the brute-force ranking, scores bit for bit): {exact}/{len(sample)}"
        )
        if exact != len(sample):
            failures.append("rankings differ from brute force")
        if pages <= 100_000:
            _rank_bm25_figure(tokens, query_tokens[:20], index, rank, results["evalsite (this process)"] / n)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    return 0


def _rank_bm25_figure(tokens, queries, index, rank, ours_per_query) -> None:
    import rank_bm25

    from evaluation.retrieval.search.bm25 import BM25Index, BM25Params

    okapi = BM25Index(index.postings, BM25Params("okapi"))
    reference = rank_bm25.BM25Okapi(tokens)
    started = time.perf_counter()
    for q in queries:
        scores = reference.get_scores(q)
        top = np.argpartition(-scores, DEPTH)[:DEPTH]
        top[np.argsort(-scores[top])]
    theirs = (time.perf_counter() - started) / len(queries)
    same = all(np.array_equal(okapi.scores(q), reference.get_scores(q)) for q in queries[:5])
    print(
        f"rank-bm25 BM25Okapi, {len(queries)} queries: {1 / theirs:,.1f} qps; evalsite lucene is "
        f"{theirs / ours_per_query:,.0f}x as fast; okapi scores identical to rank-bm25's: {same}"
    )


def _tantivy_build(tokens):
    try:
        import tantivy
    except ImportError:
        print("(tantivy not installed: pip install tantivy to compare it)\n")
        return None
    started = time.perf_counter()
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
    schema = builder.build()
    index = tantivy.Index(schema)
    writer = index.writer(heap_size=1_000_000_000, num_threads=1)
    for page in tokens:
        writer.add_document(tantivy.Document(body=" ".join(page)))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return (index, time.perf_counter() - started)


def _tantivy_search(index, query_tokens) -> None:
    import tantivy

    searcher = index.searcher()
    schema = index.schema
    for tokens in query_tokens:
        clauses = [
            (tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", token)) for token in tokens
        ]
        if clauses:
            assert searcher.search(tantivy.Query.boolean_query(clauses), DEPTH).hits is not None


def serve(folder: Path, repeat: int) -> None:
    """The fresh process: map the saved files, answer every query `repeat` times, report time and memory."""
    from evaluation.retrieval.search.bm25 import BM25Index, BM25Params
    from evaluation.retrieval.search.postings import Postings, load_mapped
    from goldenset.text import tokenize

    baseline = _memory()
    postings = Postings.open(folder / "postings")
    index = BM25Index(postings, BM25Params("lucene"), idf=load_mapped(folder / "idf.npy"))
    rank = load_mapped(folder / "rank.npy")
    queries = json.loads((folder / "queries.json").read_text())
    id_array = np.array(_ids(postings.size), dtype=object)

    def ours():
        for q in queries:
            rows, _, _ = index.top_documents(tokenize(q), DEPTH, rank)
            id_array[rows].tolist()

    query_tokens = [tokenize(q) for q in queries]

    def ours_tokens():
        for q in query_tokens:
            index.top_documents(q, DEPTH, rank)

    ours()
    ours_tokens()
    timed = best_interleaved(repeat, {"text": ours, "tokens": ours_tokens})
    seconds, seconds_tokens = timed["text"], timed["tokens"]
    print(
        json.dumps(
            {"seconds": seconds, "seconds_tokens": seconds_tokens, "memory": _memory(), "baseline": baseline}
        )
    )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    if sys.argv[1] == "--serve":
        serve(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(run(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 3, 0))
