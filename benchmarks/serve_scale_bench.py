"""A collection of a million pages through the product: import, index build, and the memory of a serving process.

    .venv/bin/python benchmarks/serve_scale_bench.py [--pages 1000000] [--queries 300] [--hybrid]
        [--postgres [URL]] [--quick]

On a temporary SQLite database (or with --postgres a new database on that server, postgres://postgres@127.0.0.1:5432
by default), DEBUG off, each step a process of its own, as in production:
1. `manage.py import_beir` of a synthetic BEIR corpus with real word statistics (import_bench.write_corpus);
   its content change queues an IndexBuild job, left queued (no worker runs here);
2. `manage.py build_index`: what that job does (read the pages, tokenize, postings, weights, saved files);
3. a fresh process that maps the saved index and answers --queries FullText searches through the search
   service with builds off (as a web request does): queries per second, and its memory (RSS, split into
   private pages and mapped files, which every process mapping the same index shares);
4. with --hybrid: `manage.py build_index --parts vectors`, then the same process kind answering Hybrid searches.
5. with --postgres: the builds publish the index to the database (EVALSITE_INDEX_STORE=database, the default
   there), and a second machine is played by a serving process with an empty index directory of its own: its
   first search fetches the published files, then maps them. The publication's and the fetch's own times and
   sizes are read from their log lines.
Each build's wall time and peak RSS (VmHWM) are printed beside the issue's targets. `--quick`: 3,000 pages, Hybrid included.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench_django import private_django
from import_bench import run_measured as run
from import_bench import write_corpus
from load_bench import postgres_database

ROOT = Path(__file__).resolve().parent.parent
SCOPE = ["--cluster", "bench", "--tenant", "bench", "--collection", "synthetic"]
QUICK_PAGES = 3000


SERVE = r"""
import json, sys, time
from pathlib import Path
import django
django.setup()
from evaluation.retrieval import indexes
from evaluation.configs import RunConfig
from evaluation.retrieval.read_path import search
from goldenset.models import Collection

def memory():
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            found[name] = int(value.split()[0]) * 1024
    return found

search_type, count = sys.argv[1], int(sys.argv[2])
queries = json.loads(Path(sys.argv[3]).read_text())[:count]
before = memory()
collection = Collection.objects.get(slug="synthetic")
config = RunConfig(label=search_type, search_type=search_type)
with indexes.builds_off():  # as in a web request
    started = time.perf_counter()
    first = search(collections=[collection], query=queries[0], config=config, top_k=10)
    opened = time.perf_counter() - started
    started = time.perf_counter()
    for query in queries:
        body = search(collections=[collection], query=query, config=config, top_k=10)
    seconds = time.perf_counter() - started
print(json.dumps({"opened": opened, "seconds": seconds, "queries": len(queries), "memory": memory(),
                  "before": before, "index": first["index"], "results": len(body["results"])}))
"""


def serve(search_type: str, count: int, queries: Path, env: dict[str, str]) -> dict:
    argv = [sys.executable, "-c", SERVE, search_type, str(count), str(queries)]
    _, _, output = run(argv, env)
    found = json.loads(output.strip().splitlines()[-1])
    found["log"] = output
    return found


STORE_LINE = re.compile(r"index \S+: (published|fetched) ([\d.]+) MB(?: of \d+ files)? in ([\d.]+) s")


def store_lines(output: str) -> list[str]:
    """What the index store said it published or fetched, and how long it took (its log lines)."""
    return [f"{m[1]} {float(m[2]):,.1f} MB in {float(m[3]):.1f} s" for m in STORE_LINE.finditer(output)]


def report_serving(name: str, served: dict, pages: int, limit_gib: float) -> None:
    memory = served["memory"]
    mib = 2**20
    private = memory["RssAnon"] - served["before"]["RssAnon"]
    print(
        f"| {name} | {served['opened']:.2f} | {served['queries'] / served['seconds']:,.0f} | "
        f"{memory['VmRSS'] / mib:,.0f} (target < {limit_gib * 1024:,.0f}) | {memory['RssAnon'] / mib:,.0f} | "
        f"{memory['RssFile'] / mib:,.0f} | {private / pages:,.0f} (target <= 1,536) |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--hybrid", action="store_true", help="also build the vectors and serve Hybrid")
    parser.add_argument(
        "--postgres",
        nargs="?",
        const="postgres://postgres@127.0.0.1:5432",
        metavar="URL",
        help="on a new database of this PostgreSQL server, the index published to it and fetched by a second "
        "machine's serving process",
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PAGES} pages, in seconds")
    args = parser.parse_args()
    pages = QUICK_PAGES if args.quick else args.pages
    args.hybrid = args.hybrid or args.quick
    if not args.postgres:
        return measure(args, pages, None)
    with postgres_database(args.postgres) as database:
        return measure(args, pages, database)


def measure(args: argparse.Namespace, pages: int, database: str | None) -> int:
    second = None
    with private_django("evalsite-serve-scale-", database_url=database, DEBUG="0") as data_dir:
        env = {
            **os.environ,
            "EVALSITE_Q_SYNC": "0",
            "EVALSITE_INDEX_DIR": str(Path(data_dir) / "indexes"),
            "LOG_LEVEL": "INFO" if database else "WARNING",  # the index store's lines
        }
        folder = Path(tempfile.mkdtemp(prefix="evalsite-serve-scale-corpus-"))
        try:
            started = time.perf_counter()
            size = write_corpus(folder, pages)
            print(
                f"synthetic corpus: {pages:,} documents, {size / 1e6:,.0f} MB, {time.perf_counter() - started:.0f} s"
            )
            import synthetic

            from goldenset.text import tokenize

            queries = folder / "queries.json"
            queries.write_text(json.dumps(synthetic.queries(tokenize)))
            manage = [sys.executable, str(ROOT / "manage.py")]
            steps = [("import_beir", run([*manage, "import_beir", str(folder), *SCOPE], env), 600, 1.0)]
            steps.append(("build_index (FullText)", run([*manage, "build_index", *SCOPE], env), 300, None))
            fulltext = serve("FullText", args.queries, queries, env)
            hybrid = None
            if args.hybrid:
                steps.append(
                    (
                        "build_index --parts vectors",
                        run([*manage, "build_index", *SCOPE, "--parts", "vectors"], env),
                        None,
                        None,
                    )
                )
                hybrid = serve("Hybrid", max(20, args.queries // 10), queries, env)
            if database:  # a second machine: its own, empty, index directory; the database shared
                other = {**env, "EVALSITE_INDEX_DIR": str(Path(data_dir) / "second-machine")}
                second = serve("Hybrid" if args.hybrid else "FullText", args.queries, queries, other)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\n## {pages:,} pages, {'PostgreSQL' if database else 'SQLite'}, one process per step\n")
    print("| step | wall time s | target | peak RSS MiB | target |\n|---|---|---|---|---|")
    for name, (seconds, peak, output), limit_s, limit_gib in steps:
        print(
            f"| {name} | {seconds:,.1f} | {'< ' + str(limit_s) if limit_s else ''} | {peak / 2**20:,.0f} | "
            f"{'< ' + str(int(limit_gib * 1024)) if limit_gib else ''} |"
        )
        last = [line for line in output.splitlines() if line.strip()][-1:]
        if name.startswith("build_index"):
            print(f"|  | {last[0] if last else ''} | | | |")
            for line in store_lines(output):
                print(f"|  | the index store: {line} | | | |")
    print(
        "\n| serving process | first search s (maps the index) | qps | RSS MiB | private MiB | mapped files MiB | "
        "private bytes a page |\n|---|---|---|---|---|---|---|"
    )
    report_serving("FullText", fulltext, pages, 2.0)
    if hybrid is not None:
        report_serving("Hybrid", hybrid, pages, 4.0)
    if second is not None:
        report_serving(f"second machine, {'Hybrid' if args.hybrid else 'FullText'}", second, pages, 4.0)
        print(f"\nthe second machine's first search (fetch and map): {'; '.join(store_lines(second['log']))}")
    print(f"\nFullText answered {fulltext['results']} results; index {fulltext['index']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
