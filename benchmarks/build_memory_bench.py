"""The memory of an index build: evalsite's segmented build (search.build) under its memory budget, side by side
with bm25s (whichever version the given interpreter has: bm25s 0.2 is the leanest peer measured), each in a
fresh process given the same token lists (benchmarks/synthetic.py: real word statistics), one after the other
in one run.

    .venv/bin/python benchmarks/build_memory_bench.py --pages 1000000 [--budget 2G] \\
        [--bm25s-python /path/to/venv-with-bm25s-0.2/bin/python]

Each process generates the token lists (held as a list, as bm25s needs them), then resets its peak (VmHWM,
through /proc/self/clear_refs) and builds: "peak above" is the build's peak RSS above what the process held
before it. evalsite builds into files (as the product does: the postings folder, then the idf), bm25s in memory
(then `save`). Index arrays: evalsite's files a search maps (every array but first_order.npy, which only an
incremental update reads: shown apart), bm25s's saved files.

`--stream`: evalsite alone, its pages generated one at a time as the product reads them from the database
(none held: for sizes whose token lists would not fit beside a peer, such as MS MARCO's 8.8M passages), then
its queries per second over the built index (top 100, one thread, the real queries of the synthetic corpus).

`--peer-only`: bm25s alone (its token lists held, as it needs them), for a size where a `--stream` run gives
evalsite's figures.

`--check` (tests/evaluation/test_segmented_build.py): one evalsite build of `--pages` pages generated one at a
time (none held), under `--budget`; prints JSON with the peak above the process, the budget, the segments and
whether the arrays equal those of one build with the default budget. Exits 1 when the peak passes the budget.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def status() -> dict[str, int]:
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            found[name] = int(value.split()[0]) * 1024
    return found


def _reset_peak() -> int:
    """Reset VmHWM to the current RSS; returns that RSS (bytes)."""
    Path("/proc/self/clear_refs").write_text("5")
    return status()["VmRSS"]


def folder_size(folder: Path, skip: tuple[str, ...] = ()) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and f.name not in skip)


def _parse_bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def _tokens(pages: int, seed: int) -> list[list[str]]:
    import synthetic

    from goldenset.text import tokenize

    return list(synthetic.token_lists(pages, tokenize, seed=seed))


def _built(pages, budget: int, out: Path):
    """(postings, lucene index, seconds, peak above the process) of a build into `out` as the product builds:
    the postings folder, then the idf; the peak reset just before it."""
    import numpy as np

    from evaluation.retrieval.search.bm25 import BM25Index, BM25Params
    from evaluation.retrieval.search.build import build_postings

    before = _reset_peak()
    started = time.perf_counter()
    folder = out / "postings"
    folder.mkdir(parents=True)
    postings = build_postings(pages, folder=folder, budget=budget)
    index = BM25Index(postings, BM25Params("lucene"))
    np.save(out / "idf.npy", index.idf)
    return postings, index, time.perf_counter() - started, status()["VmHWM"] - before


def _figures(engine: str, postings, seconds: float, peak: int, out: Path) -> dict:
    """An evalsite build's figures: its time, peak, the index arrays a search maps and the file only updates read."""
    return {
        "engine": engine,
        "seconds": seconds,
        "peak_above": peak,
        "index_arrays": folder_size(out, skip=("first_order.npy",)),
        "update_only": (out / "postings" / "first_order.npy").stat().st_size,
        "postings": len(postings.rows),
        "terms": postings.terms,
    }


def engine_evalsite(pages: int, seed: int, budget: int, out: Path) -> dict:
    postings, _index, seconds, peak = _built(_tokens(pages, seed), budget, out)
    return _figures("evalsite", postings, seconds, peak, out)


def engine_bm25s(pages: int, seed: int, out: Path) -> dict:
    import bm25s

    tokens = _tokens(pages, seed)
    before = _reset_peak()
    started = time.perf_counter()
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    retriever.index(tokens, show_progress=False)
    seconds = time.perf_counter() - started
    peak = status()["VmHWM"] - before
    retriever.save(str(out / "bm25s"))
    return {
        "engine": f"bm25s {bm25s.__version__}",
        "seconds": seconds,
        "peak_above": peak,
        "index_arrays": folder_size(out / "bm25s"),
    }


def _one_at_a_time(pages: int, seed: int):
    """A callable giving `pages` token lists anew, generated one thousand at a time (none held)."""
    import numpy as np
    import synthetic

    from goldenset.text import tokenize

    words, probabilities, lengths, _ = synthetic.statistics(tokenize)
    vocabulary = np.array(words, dtype=object)

    def generate():
        rng = np.random.default_rng(seed)
        for start in range(0, pages, 1000):
            count = min(1000, pages - start)
            sizes = rng.choice(lengths, size=count)
            drawn = vocabulary[rng.choice(len(words), size=int(sizes.sum()), p=probabilities)].tolist()
            tail = (rng.zipf(1.3, size=len(drawn)) % 5_000_000).tolist()
            at = 0
            for size in sizes.tolist():
                yield [
                    w if t % 10 else f"t{t}"
                    for w, t in zip(drawn[at : at + size], tail[at : at + size], strict=False)
                ]
                at += size

    return generate


def engine_stream(pages: int, seed: int, budget: int, out: Path) -> dict:
    import numpy as np
    import synthetic

    from goldenset.text import tokenize

    queries = [tokenize(q) for q in synthetic.queries(tokenize)]
    postings, index, seconds, peak = _built(_one_at_a_time(pages, seed), budget, out)
    rank = np.arange(pages, dtype=np.int64)
    for q in queries[:50]:
        index.top_documents(q, 100, rank)  # compiled, mapped pages read once
    timed = time.perf_counter()
    for q in queries:
        index.top_documents(q, 100, rank)
    qps = len(queries) / (time.perf_counter() - timed)
    return {
        **_figures("evalsite (streamed pages)", postings, seconds, peak, out),
        "qps": qps,
        "serving": status(),
    }


def check(pages: int, budget: int, out: Path) -> int:
    import numpy as np

    from evaluation.retrieval.search import build

    generate = _one_at_a_time(pages, seed=0)
    segments = []
    real = build._sorted_segment

    def counted(*args):
        segments.append(1)
        return real(*args)

    build._sorted_segment = counted
    folder = out / "postings"
    folder.mkdir(parents=True)
    before = _reset_peak()
    postings = build.build_postings(generate, folder=folder, budget=budget)
    peak = status()["VmHWM"] - before
    build._sorted_segment = real
    whole = build.build_postings(generate)
    identical = all(
        np.asarray(getattr(postings, name)).tobytes() == np.asarray(getattr(whole, name)).tobytes()
        for name in (
            "indptr",
            "rows",
            "codes",
            "lengths",
            "term_hashes",
            "term_offsets",
            "term_bytes",
            "first_seen",
        )
        + ("code_tfs", "code_lengths", "common_terms", "common_codes")
    )
    figures = {
        "pages": pages,
        "postings": len(postings.rows),
        "terms": postings.terms,
        "budget": budget,
        "peak_above": peak,
        "segments": len(segments),
        "one_segment_estimate": len(whole.rows) * build.POSTING_BYTES + whole.terms * build.TERM_BYTES,
        "identical": identical,
    }
    print(json.dumps(figures))
    return 0 if peak <= budget and identical else 1


def _child(args) -> None:
    out = Path(args.out)
    if args.engine == "evalsite":
        figures = engine_evalsite(args.pages, args.seed, _parse_bytes(args.budget), out)
    elif args.engine == "stream":
        figures = engine_stream(args.pages, args.seed, _parse_bytes(args.budget), out)
    else:
        figures = engine_bm25s(args.pages, args.seed, out)
    print(json.dumps(figures))


def _print_stream(args, row: dict) -> None:
    serving = row["serving"]
    print(
        f"# {args.pages:,} pages streamed ({row['postings']:,} postings, {row['terms']:,} terms), budget "
        f"{args.budget}: built in {row['seconds']:.0f} s, peak {row['peak_above'] / 2**20:,.0f} MiB above the "
        f"process, index arrays {row['index_arrays'] / 2**20:,.0f} MiB (+ {row['update_only'] / 2**20:,.0f} "
        f"MiB read by updates only); {row['qps']:,.1f} queries/s (top 100, one thread); then RSS "
        f"{serving['VmRSS'] / 2**20:,.0f} MiB: private {serving['RssAnon'] / 2**20:,.0f}, mapped "
        f"{serving['RssFile'] / 2**20:,.0f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--budget", default="2G")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--bm25s-python", default=sys.executable, help="an interpreter with the bm25s to compare"
    )
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--quick", action="store_true", help="20,000 pages (tests/test_benchmarks_quick.py)")
    parser.add_argument("--stream", action="store_true", help="evalsite alone, pages generated one at a time")
    parser.add_argument(
        "--peer-only", action="store_true", help="bm25s alone (beside a --stream run's figures)"
    )
    parser.add_argument("--engine", choices=("evalsite", "bm25s", "stream"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.pages = 20_000
    if args.check:
        return check(args.pages, _parse_bytes(args.budget), Path(args.out or tempfile.mkdtemp()))
    if args.engine:
        _child(args)
        return 0
    rows = []
    engines = [("evalsite", sys.executable), ("bm25s", args.bm25s_python)]
    if args.stream or args.peer_only:
        engines = [("stream", sys.executable)] if args.stream else [("bm25s", args.bm25s_python)]
    for engine, python in engines:
        out = Path(tempfile.mkdtemp(prefix=f"build-memory-{engine}-"))
        try:
            command = [
                python,
                __file__,
                "--engine",
                engine,
                "--pages",
                str(args.pages),
                "--seed",
                str(args.seed),
            ]
            command += ["--budget", args.budget, "--out", str(out)]
            done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
            if done.returncode:
                print(done.stdout, done.stderr, file=sys.stderr)
                return 1
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        finally:
            shutil.rmtree(out, ignore_errors=True)
    if args.stream:
        _print_stream(args, rows[0])
        return 0
    if args.peer_only:
        row = rows[0]
        print(
            f"# {row['engine']} alone, {args.pages:,} pages: built in {row['seconds']:.0f} s, peak "
            f"{row['peak_above'] / 2**20:,.0f} MiB above the process, index arrays {row['index_arrays'] / 2**20:,.0f} MiB"
        )
        return 0
    ours, theirs = rows
    print(
        f"# build of {args.pages:,} synthetic pages ({ours['postings']:,} postings, {ours['terms']:,} terms); budget {args.budget}\n"
    )
    print("| engine | build s | peak above the process | index arrays |\n|---|---|---|---|")
    for row in rows:
        note = (
            f" (+ {row['update_only'] / 2**20:,.0f} MiB read by updates only)" if "update_only" in row else ""
        )
        print(
            f"| {row['engine']} | {row['seconds']:.1f} | {row['peak_above'] / 2**20:,.0f} MiB | "
            f"{row['index_arrays'] / 2**20:,.0f} MiB{note} |"
        )
    print(
        f"\nevalsite / {theirs['engine']}: peak {ours['peak_above'] / theirs['peak_above']:.2f}x, "
        f"index arrays {ours['index_arrays'] / theirs['index_arrays']:.2f}x, build time "
        f"{ours['seconds'] / theirs['seconds']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.exit(main())
