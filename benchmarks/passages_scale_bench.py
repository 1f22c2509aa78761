"""MS MARCO's scale through the product (issue 42 item 2): 8.8M passages imported, built under the default memory
budget, served, published to the shared index store and fetched by a second machine.

    .venv/bin/python benchmarks/passages_scale_bench.py [--pages 8800000] [--postgres [URL]] [--cache DIR]
        [--queries 1000] [--clients 8] [--web-processes 4] [--quick]

A synthetic BEIR corpus of --pages passages with real word statistics (import_bench.write_corpus,
benchmarks/synthetic.py: words drawn from the reference collections' unigram distribution, page lengths from
their pages', a Zipf tail of made-up words so the vocabulary grows as a real one does) goes through the
product as a user's would, DEBUG off, each step a process of its own:
1. `manage.py import_beir` (its IndexBuild job left queued: no worker here; step 2 is what that job runs);
2. `manage.py build_index` under the default EVALSITE_INDEX_BUILD_MEMORY (the shell's setting is dropped):
   segments counted within the budget, spilled, merged into the index folder; with --postgres the build
   publishes the index to the database (EVALSITE_INDEX_STORE=database, the default there);
3. the index from one thread: a fresh process maps the saved index and ranks --queries real queries of the
   reference collections to depth 100 (SearchIndex.rank_documents: the engine, no HTTP, no page read), then
   the same queries top 10 through the search service (the pages of the results read from the database);
4. `manage.py serve` (gunicorn, --web-processes processes, the index warmed in the master before it forks):
   `POST /lmkit/v1/search` FullText top 10 from 1 client, then from --clients clients (closed loop, a keep-alive
   connection each): queries/s, p50/p95/p99, the web processes' memory after the load;
5. with --postgres, a second machine: a serving process with an empty index directory of its own; its first
   search fetches the published files (the index store's log line gives their size and time), then maps them.
Each step's wall time and peak RSS (VmHWM, read while it runs), and the disk each part takes (the corpus file,
the database, the index directory, the published copy in the database), are printed as tables.

--cache DIR keeps the database (SQLite in DIR/<pages>, or the PostgreSQL database evalsite_passages_<pages>)
and the index directory between runs, with each step's figures (DIR/<pages>/figures.json): a run after a
failure resumes at the first step not done, and reports the earlier steps' figures as measured then. Without
--cache everything is temporary. `--quick`: 3,000 pages, 100 queries, 2 web processes. Every request goes to
127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench_django import start_server, stop_server
from build_memory_bench import folder_size
from hybrid_scale_bench import (
    api_key,
    environment,
    load,
    memory,
    percentile,
    query_texts,
    serving_processes,
)
from import_bench import run_measured as run
from import_bench import write_corpus
from load_bench import postgres_database
from serve_scale_bench import store_lines

ROOT = Path(__file__).resolve().parent.parent
SCOPE = ["--cluster", "bench", "--tenant", "bench", "--collection", "synthetic"]
QUICK_PAGES, QUICK_QUERIES = 3000, 100
MIB = 2**20

INDEX = r"""
import hashlib, json, sys, time
from pathlib import Path
import django
django.setup()
from evaluation.configs import RunConfig
from evaluation.retrieval import indexes
from evaluation.retrieval.read_path import search
from evaluation.retrieval.search.engine import SearchConfig, SearchIndex
from goldenset.models import Collection
from build_memory_bench import status as memory  # benchmarks/ on PYTHONPATH

queries = json.loads(Path(sys.argv[1]).read_text())
collection = Collection.objects.get(slug="synthetic")
config = SearchConfig()
started = time.perf_counter()
index = indexes.get_index(collection, parts=SearchIndex.parts_for(config), build=False)
opened = time.perf_counter() - started
for query in queries[:50]:
    index.rank_documents(query, config, 100)  # compiled kernels, mapped pages read once
started = time.perf_counter()
answers = []
for query in queries:
    ranking = index.rank_documents(query, config, 100)
    answers.append([list(ranking.document_ids), [round(float(s), 5) for s in ranking.scores]])
engine = len(queries) / (time.perf_counter() - started)
run_config = RunConfig(label="FullText", search_type="FullText")
with indexes.builds_off():  # as in a web request
    started = time.perf_counter()
    for query in queries:
        search(collections=[collection], query=query, config=run_config, top_k=10)
    service = len(queries) / (time.perf_counter() - started)
print(json.dumps({"opened": opened, "engine_qps": engine, "service_qps": service,
                  "digest": hashlib.sha256(json.dumps(answers).encode()).hexdigest()[:16],
                  "returned": sum(len(a[0]) for a in answers),
                  "queries": len(queries), "memory": memory(), "documents": len(index.corpus.document_ids),
                  "pages": index.corpus.size}))
"""


class Figures:
    """Each step's figures, kept in DIR/figures.json so that a resumed run reports the steps done before it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.steps: dict = json.loads(path.read_text()) if path.is_file() else {}

    def done(self, step: str) -> bool:
        return step in self.steps

    def record(self, step: str, **values) -> None:
        self.steps[step] = {**values, "measured": time.strftime("%Y-%m-%d %H:%M")}
        self.path.write_text(json.dumps(self.steps, indent=1))


@contextlib.contextmanager
def database(args: argparse.Namespace, pages: int) -> Iterator[str | None]:
    """None (SQLite in the data folder), or a PostgreSQL database: kept when cached, else dropped afterwards."""
    if not args.postgres:
        yield None
        return
    if not args.cache:
        with postgres_database(args.postgres) as url:
            yield url
        return
    import psycopg
    from psycopg import sql

    name = f"evalsite_passages_{pages}"
    with psycopg.connect(f"{args.postgres}/postgres", autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield f"{args.postgres}/{name}"


def database_bytes(env: dict[str, str], data: Path) -> dict[str, int]:
    """The database's size on disk, and on PostgreSQL the published index's share of it."""
    if "DATABASE_URL" not in env:
        return {"database": sum(f.stat().st_size for f in data.glob("evalsite.sqlite3*"))}
    import psycopg

    with psycopg.connect(env["DATABASE_URL"]) as connection:
        whole = connection.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        published = connection.execute("SELECT pg_total_relation_size('evaluation_indexfile')").fetchone()[0]
    return {"database": whole, "published index": published}


def imported(data: Path, pages: int, env: dict[str, str], figures: Figures) -> None:
    if figures.done("import_beir"):
        return
    manage = [sys.executable, str(ROOT / "manage.py")]
    run([*manage, "migrate", "-v0"], env)
    corpus = data / "corpus"
    started = time.perf_counter()
    size = write_corpus(corpus, pages)
    figures.record("corpus", seconds=time.perf_counter() - started, bytes=size)
    print(f"corpus written: {size / 1e9:,.2f} GB in {time.perf_counter() - started:,.0f} s", flush=True)
    seconds, peak, output = run([*manage, "import_beir", str(corpus), *SCOPE], env)
    figures.record("import_beir", seconds=seconds, peak=peak, last=output.strip().splitlines()[-1:])
    shutil.rmtree(corpus)
    print(f"import_beir: {seconds:,.0f} s, peak RSS {peak / MIB:,.0f} MiB", flush=True)


def built(data: Path, env: dict[str, str], figures: Figures) -> None:
    if figures.done("build_index"):
        return
    seconds, peak, output = run([sys.executable, str(ROOT / "manage.py"), "build_index", *SCOPE], env)
    lines = [line for line in output.splitlines() if line.strip()]
    figures.record(
        "build_index",
        seconds=seconds,
        peak=peak,
        last=lines[-1:],
        published=store_lines(output),
        index_bytes=folder_size(Path(env["EVALSITE_INDEX_DIR"])),
        **database_bytes(env, data),
    )
    print(f"build_index: {seconds:,.0f} s, peak RSS {peak / MIB:,.0f} MiB; {lines[-1:]}", flush=True)


def from_index(queries: Path, env: dict[str, str], figures: Figures, step: str = "from the index") -> dict:
    seconds, peak, output = run(
        [sys.executable, "-c", INDEX, str(queries)], {**env, "PYTHONPATH": f"{ROOT}:{ROOT / 'benchmarks'}"}
    )
    found = json.loads(output.strip().splitlines()[-1])
    figures.record(step, seconds=seconds, peak=peak, fetched=store_lines(output), **found)
    return found


def over_rest(env: dict[str, str], data: Path, texts: list[str], clients: int, figures: Figures) -> None:
    key = api_key(env)
    server, url, ready = start_server(env, data / "serve.log", timeout=900)
    try:
        master, webs = serving_processes(server, int(env["EVALSITE_WEB_PROCESSES"]))
        before = {pid: memory(pid) for pid in [master, *webs]}
        one = load(url, key, texts, 1, "FullText")
        many = load(url, key, texts, clients, "FullText")
        after = {pid: memory(pid) for pid in [master, *webs]}
    finally:
        stop_server(server)
    if one["digest"] != many["digest"]:
        raise SystemExit(f"1 client and {clients} clients got different answers")
    cpu = sum(after[pid]["cpu"] - before[pid]["cpu"] for pid in webs)
    figures.record(
        "over REST",
        ready=ready,
        runs={str(n): _latencies(found) for n, found in ((1, one), (clients, many))},
        digest=one["digest"],
        cpu_ms_a_query=cpu / (2 * len(texts)),
        master=after[master],
        webs=[after[pid] for pid in webs],
    )


def _latencies(found: dict) -> dict:
    wall = found["wall"]
    return {
        "qps": len(wall) / found["seconds"],
        **{f"p{q}": percentile(wall, q / 100) for q in (50, 95, 99)},
        "max": max(wall),
        "took_p50": percentile(found["took"], 0.5),
    }


def second_machine(queries: Path, env: dict[str, str], data: Path, figures: Figures) -> None:
    """A serving process with an empty index directory of its own: it fetches the published index, then maps it."""
    folder = data / "second-machine"
    shutil.rmtree(folder, ignore_errors=True)
    other = {**env, "EVALSITE_INDEX_DIR": str(folder), "LOG_LEVEL": "INFO"}
    found = from_index(queries, other, figures, "second machine")
    figures.record("second machine", **figures.steps["second machine"], index_bytes=folder_size(folder))
    shutil.rmtree(folder, ignore_errors=True)
    if found["digest"] != figures.steps["from the index"]["digest"]:
        raise SystemExit("the second machine's index answered differently")


def report(figures: Figures, pages: int, backend: str, clients: int) -> None:
    steps = figures.steps
    served = steps["from the index"]
    print(
        f"\n## {served['documents']:,} passages ({served['pages']:,} pages), {backend}, "
        f"DEBUG off, build budget: the default\n"
    )
    print("| step | wall time | peak RSS MiB | measured |\n|---|---|---|---|")
    corpus = steps["corpus"]
    print(f"| corpus written ({corpus['bytes'] / 1e9:,.2f} GB of JSON lines) | {corpus['seconds']:,.0f} s | | "
          f"{corpus['measured']} |")  # fmt: skip
    for name in ("import_beir", "build_index", "from the index", "second machine"):
        if name in steps:
            step = steps[name]
            said = "; ".join(step.get("last", []) + step.get("published", []) + step.get("fetched", []))
            print(
                f"| {name}{': ' + said if said else ''} | {step['seconds']:,.0f} s | {step['peak'] / MIB:,.0f} | "
                f"{step['measured']} |"
            )
    build = steps["build_index"]
    print("\n| on disk | MiB |\n|---|---|")
    print(f"| the corpus (JSON lines, removed after the import) | {corpus['bytes'] / MIB:,.0f} |")
    print(f"| the database, after the build | {build['database'] / MIB:,.0f} |")
    if "published index" in build:
        print(f"| of which the published index (IndexFile) | {build['published index'] / MIB:,.0f} |")
    print(f"| the index directory | {build['index_bytes'] / MIB:,.0f} |")
    if "second machine" in steps:
        print(
            f"| the second machine's index directory | {steps['second machine']['index_bytes'] / MIB:,.0f} |"
        )
    print(
        "\n| serving, FullText | queries/s | p50 ms | p95 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n"
        f"| from the index, 1 thread, depth 100 (rank_documents) | {served['engine_qps']:,.1f} | | | | |\n"
        f"| the search service, 1 thread, top 10 (pages read) | {served['service_qps']:,.1f} | | | | |"
    )
    rest = steps["over REST"]
    for count, row in rest["runs"].items():
        print(
            f"| REST, {count} client{'s' if count != '1' else ''}, top 10 | {row['qps']:,.1f} | {row['p50']:,.1f} | "
            f"{row['p95']:,.1f} | {row['p99']:,.1f} | {row['max']:,.1f} |"
        )
    print(
        f"\nserver ready in {rest['ready']:,.1f} s; the web processes' CPU a query {rest['cpu_ms_a_query']:,.1f} ms; "
        f"answers digest {rest['digest']} (1 and {clients} clients alike)"
    )
    print("\n| process | RssAnon MiB (private) | RssFile MiB (mapped, shared) | Pss MiB |\n|---|---|---|---|")
    for name, found in [("gunicorn master", rest["master"])] + [("web process", w) for w in rest["webs"]]:
        print(
            f"| {name} | {found['RssAnon'] / MIB:,.0f} | {found['RssFile'] / MIB:,.0f} | {found['Pss'] / MIB:,.0f} |"
        )
    memory_then = served["memory"]
    print(
        f"\nthe one-thread process after its queries: RSS {memory_then['VmRSS'] / MIB:,.0f} MiB, private "
        f"{memory_then['RssAnon'] / MIB:,.0f}, mapped {memory_then['RssFile'] / MIB:,.0f}; first open "
        f"{served['opened']:,.2f} s; answers digest {served['digest']}"
    )
    if "second machine" in steps:
        other = steps["second machine"]
        print(
            f"the second machine: first open (fetch and map) {other['opened']:,.1f} s, then "
            f"{other['engine_qps']:,.1f} queries/s; answers digest {other['digest']} (the same)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=8_800_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--web-processes", type=int, default=4, help="EVALSITE_WEB_PROCESSES (4)")
    parser.add_argument("--cache", type=Path, help="keep the database, index and figures in DIR/<pages>")
    parser.add_argument(
        "--postgres", nargs="?", const="postgres://postgres@127.0.0.1:5432", metavar="URL",
        help="a database of this PostgreSQL server: the index published there, fetched by a second machine",
    )  # fmt: skip
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_PAGES:,} pages, {QUICK_QUERIES} queries"
    )
    args = parser.parse_args()
    if args.quick:
        args.pages, args.queries, args.web_processes = QUICK_PAGES, QUICK_QUERIES, 2
    data = args.cache / str(args.pages) if args.cache else Path(tempfile.mkdtemp(prefix="evalsite-passages-"))
    data.mkdir(parents=True, exist_ok=True)
    try:
        with database(args, args.pages) as url:
            env = environment(data, args.web_processes)
            env.pop("EVALSITE_INDEX_BUILD_MEMORY", None)  # the default budget
            if url:
                env["DATABASE_URL"] = url
            env["LOG_LEVEL"] = "INFO" if url else "WARNING"  # the index store's lines
            measure(args, data, env)
    finally:
        if not args.cache:
            shutil.rmtree(data, ignore_errors=True)
    return 0


def measure(args: argparse.Namespace, data: Path, env: dict[str, str]) -> None:
    figures = Figures(data / "figures.json")
    texts = query_texts(args.queries)
    queries = data / "queries.json"
    queries.write_text(json.dumps(texts))
    imported(data, args.pages, env, figures)
    built(data, env, figures)
    found = from_index(queries, env, figures)
    print(f"from the index: {found['engine_qps']:,.1f} queries/s (depth 100, one thread)", flush=True)
    over_rest(env, data, texts, args.clients, figures)
    if "DATABASE_URL" in env:
        second_machine(queries, env, data, figures)
    report(figures, args.pages, "PostgreSQL" if "DATABASE_URL" in env else "SQLite", args.clients)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
