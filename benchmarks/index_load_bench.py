"""A saved search index read back: how long a process takes to load it, how large it is on disk, what it costs
a process in private memory, and that the loaded index answers exactly as the one built.

    .venv/bin/python benchmarks/index_load_bench.py [--pages 100000] [--rounds 7] [--seed 0] [--list] [--quick]

In a temporary SQLite database (bench_django.private_django), a collection of `--pages` synthetic pages
(incremental_bench.write_collection: real word statistics, three pages a document) gets its index built as the
IndexBuild job builds it (BM25 lucene and okapi, and the LSI vectors), saved in the index directory. Then:
1. the folder: its files and bytes, the description's among them (the file renamed into place last, which names
   the others), and the time to write that description again (its arrays are written once a version);
   `--list` prints every file's size;
2. `index_files.read_index`, what every process does when it first needs the index, in `--rounds` fresh
   processes (Django set up first; the files in the page cache, as on a serving machine): the median and best
   time, and the private memory (RssAnon) the loaded index added to the process (mapped files are shared);
3. the loaded index against the one built: the same ranking and scores for FullText (both variants), Vector and
   Hybrid searches of 20 queries, bit for bit.
`--quick` runs the same steps on 3,000 pages. Exits 1 when the loaded index answers differently.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_django import private_django

ROOT = Path(__file__).resolve().parent.parent
PARTS = ["bm25:lucene", "bm25:okapi", "vectors"]
QUERIES = 20


LOAD = r"""
import json, sys, time
from pathlib import Path
import django
django.setup()
from evaluation.retrieval import index_files

def rss_anon():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0

before = rss_anon()
started = time.perf_counter()
index = index_files.read_index(Path(sys.argv[1]))
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "private": rss_anon() - before, "read": index is not None}))
"""


def _load_in_a_fresh_process(path: Path) -> dict:
    """read_index in a new process with this one's settings (the same database and index directory)."""
    done = subprocess.run(
        [sys.executable, "-c", LOAD, str(path)],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"the loading process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _folder_sizes(folder: Path, description: Path) -> tuple[int, int, int]:
    """(files, bytes of every file, bytes of the description) of a saved index folder."""
    files = [p for p in folder.rglob("*") if p.is_file() and p.suffix != ".lock"]
    return len(files), sum(p.stat().st_size for p in files), description.stat().st_size


def _answers(index, queries: list[str]) -> list:
    from evaluation.retrieval.search.engine import SearchConfig

    configs = [
        SearchConfig("FullText", bm25_variant="lucene"),
        SearchConfig("FullText", bm25_variant="okapi"),
        SearchConfig("Vector"),
        SearchConfig("Hybrid"),
    ]
    found = []
    for config in configs:
        for query in queries:
            ranking = index.rank_documents(query, config, 10)
            found.append((ranking.document_ids, ranking.scores.tobytes(), ranking.page_rows.tolist()))
    return found


def run(pages: int, rounds: int, seed: int, listed: bool = False) -> int:
    import incremental_bench

    from evaluation.retrieval import index_files, indexes
    from evaluation.retrieval.indexes import IndexStats

    started = time.perf_counter()
    collection = incremental_bench.write_collection(pages, seed)
    print(f"# {pages:,} synthetic pages (3 a document) written in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    built = indexes.get_index(collection, IndexStats(), PARTS, build=True, keep=False)
    print(
        f"built ({', '.join(PARTS)}) as the IndexBuild job builds it: {time.perf_counter() - started:.1f} s"
    )
    path = index_files.index_path(index_files.index_key(collection))
    files, total, description = _folder_sizes(path.parent, path)
    writes = []
    for _ in range(3):
        started = time.perf_counter()
        index_files.write_index(collection, path, built)
        writes.append(time.perf_counter() - started)

    loads = [_load_in_a_fresh_process(path) for _ in range(rounds)]
    loaded = index_files.read_index(path)
    if loaded is None or not all(load["read"] for load in loads):
        print("FAILED: the saved index could not be read")
        return 1
    if not all(loaded.has_part(part) for part in PARTS):  # a part missing would be built by the comparison
        print(f"FAILED: the saved index lacks {[p for p in PARTS if not loaded.has_part(p)]}")
        return 1
    loaded.embedder_factory = indexes.embedder_factory
    times = [load["seconds"] for load in loads]
    private = statistics.median(load["private"] for load in loads)
    print(
        f"\n## the saved index ({path.name}, {pages:,} pages, {len(built.corpus.document_ids):,} documents)\n"
    )
    print("| measure | value |\n|---|---|")
    print(f"| files in the folder | {files} |")
    print(f"| bytes on disk, every file | {total / 1e6:.1f} MB |")
    print(f"| the description ({path.name}) | {description / 1e6:.2f} MB |")
    print(f"| writing the description again (best of 3) | {min(writes) * 1000:.0f} ms |")
    if listed:
        for item in sorted(p for p in path.parent.rglob("*") if p.is_file() and p.suffix != ".lock"):
            print(f"| {item.relative_to(path.parent)} | {item.stat().st_size / 1e6:.2f} MB |")
    print(f"| read_index in a fresh process, median of {rounds} | {statistics.median(times) * 1000:.0f} ms |")
    print(f"| read_index in a fresh process, best | {min(times) * 1000:.0f} ms |")
    print(f"| private memory the load added to that process (RssAnon, median) | {private / 1e6:.1f} MB |")

    words = " ".join(
        built.corpus.texts_of(range(0, built.corpus.size, max(1, built.corpus.size // 200)))
    ).split()
    queries = [" ".join(words[i * 7 : i * 7 + 3]) for i in range(QUERIES)]
    same = _answers(loaded, queries) == _answers(built, queries)
    print(
        f"\nthe loaded index answers as the built one (FullText lucene and okapi, Vector, Hybrid; {QUERIES} "
        f"queries, top 10, scores bit for bit): {'yes' if same else 'NO'}"
    )
    return 0 if same else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--list", action="store_true", help="print every file's size")
    parser.add_argument("--quick", action="store_true", help="3,000 pages")
    args = parser.parse_args()
    pages = 3000 if args.quick else args.pages
    sys.path.insert(0, str(ROOT / "benchmarks"))
    with private_django("evalsite-index-load-"):
        return run(pages, max(1, args.rounds), args.seed, args.list)


if __name__ == "__main__":
    sys.exit(main())
