"""Hybrid search at scale through the production server (issue 42 item 3: "Hybrid at 1M served with vectors
memory-mapped and shared: private memory per web process under 2 GiB").

    .venv/bin/python benchmarks/hybrid_scale_bench.py [--pages 1000000] [--queries 400] [--clients 8]
        [--web-processes N] [--cache DIR] [--quick]

On an SQLite database, DEBUG off, each step a process of its own as in production:
1. a synthetic BEIR corpus of --pages documents with real word statistics (import_bench.write_corpus,
   benchmarks/synthetic.py), imported with `manage.py import_beir` (its IndexBuild job left queued: no worker);
2. `manage.py build_index` and `build_index --parts vectors`: what that job does, the page vectors those of
   the offline default embedder (LSI, 256 float32 dimensions a page), all saved as .npy files the serving
   processes map;
3. `manage.py serve` as users start it (gunicorn, --web-processes web processes, the indexes warmed in its
   master before it forks; no worker cluster: nothing is left to build) on a free port of 127.0.0.1;
4. --clients clients, each on a keep-alive connection of its own, closed loop, POST /lmkit/v1/search Hybrid
   (Rrf, top 10) for --queries real queries of the reference collections (one round first, not timed): the
   client's latency p50/p95/p99, queries per second, every answer checked (200, results, not a stale index);
5. each web process's memory after the load, from /proc/<pid>/status and smaps_rollup: RssAnon (anonymous
   pages resident in the process, those it shares copy-on-write with the master it was forked from included),
   RssFile (mapped files: the index, shared by every process through the page cache), Private_Dirty (the pages
   this process alone has written: its own heap, and its copies of the master's pages it wrote to) and Pss,
   beside the target (private < 2 GiB a web process), and the CPU each process spent on the load (every one must
   have served) and the web processes' CPU a query.
A digest of every answer (documents and scores in order) is printed: two runs of the same corpus on two
versions of the code answer alike when their digests are equal.

--cache DIR keeps the database and the index directory in DIR/<pages> (made once, reused: the import is most of
a run at a million pages; the builds run again and do nothing when the saved index is current), else a temporary
directory removed afterwards. `--quick`: 3,000 pages, 40 queries, 2 web processes. Exits 1 when an answer is
wrong or the target is missed (the full size only). Every request goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
from bench_django import start_server, stop_server
from import_bench import run_measured as run
from import_bench import write_corpus

ROOT = Path(__file__).resolve().parent.parent
SCOPE = ["--cluster", "bench", "--tenant", "bench", "--collection", "synthetic"]
URL = "/lmkit/v1/search"
TARGET_PRIVATE = 2 << 30  # bytes of private memory a web process
QUICK_PAGES, QUICK_QUERIES = 3000, 40
MIB = 2**20


# --- the data: made once per --cache folder --------------------------------------------------------------


def environment(data: Path, web_processes: int) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "evalsite.settings",
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(40),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "EVALSITE_DATA_DIR": str(data),
        "EVALSITE_INDEX_DIR": str(data / "indexes"),
        "EVALSITE_Q_SYNC": "0",  # the import queues its index build, left queued: built below, as the job does
        "EVALSITE_WEB_PROCESSES": str(web_processes),
        "EVALSITE_WORKER_CLUSTERS": "0",
        "EVALSITE_ACCESS_LOG": "0",
        "LOG_LEVEL": "WARNING",
        "EVALSITE_API_RATE": "1000000",  # the searches, not the per-key limits, are measured
        "EVALSITE_API_COSTLY_RATE": "1000000",
    }
    for name in ("DATABASE_URL", "EVALSITE_REDIS_URL", "EVALSITE_LLM_BASE_URL", "PORT", "EVALSITE_BIND"):
        env.pop(name, None)
    return env


def prepare(data: Path, pages: int, env: dict[str, str]) -> list[str]:
    """The database holding the collection, and its index with the vectors, saved; what each step took."""
    manage = [sys.executable, str(ROOT / "manage.py")]
    done = data / "imported.json"
    lines = []
    run([*manage, "migrate", "-v0"], env)
    if not done.is_file():
        corpus = data / "corpus"
        started = time.perf_counter()
        size = write_corpus(corpus, pages)
        lines.append(
            f"synthetic corpus: {pages:,} documents, {size / 1e6:,.0f} MB, {time.perf_counter() - started:.0f} s"
        )
        seconds, peak, _ = run([*manage, "import_beir", str(corpus), *SCOPE], env)
        lines.append(f"import_beir: {seconds:,.0f} s, peak RSS {peak / MIB:,.0f} MiB")
        shutil.rmtree(corpus)
        done.write_text(json.dumps({"pages": pages, "import_seconds": seconds}))
    else:
        lines.append(f"the database and index directory of {data} reused ({done.read_text().strip()})")
    for step in (["build_index", *SCOPE], ["build_index", *SCOPE, "--parts", "vectors"]):
        seconds, peak, output = run([*manage, *step], env)
        last = [line for line in output.splitlines() if line.strip()][-1:]
        name = " ".join(step[:1] + step[-2:] if "--parts" in step else step[:1])
        lines.append(f"{name}: {seconds:,.1f} s, peak RSS {peak / MIB:,.0f} MiB; {last[0] if last else ''}")
    return lines


def api_key(env: dict[str, str]) -> str:
    argv = [sys.executable, "manage.py", "createapikey", "--cluster", "bench", "--tenant", "bench"]
    done = subprocess.run(
        [*argv, "--role", "viewer"], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    )
    return done.stdout.strip().splitlines()[-1]


def query_texts(count: int) -> list[str]:
    import synthetic  # late: reads the reference collections

    from goldenset.text import tokenize

    texts = list(dict.fromkeys(q.strip() for q in synthetic.queries(tokenize) if q.strip()))
    return [texts[i % len(texts)] for i in range(count)]


# --- the server's processes and their memory -------------------------------------------------------------


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                found.append(int(entry))
    return sorted(found)


def web_processes(server: subprocess.Popen) -> tuple[int, list[int]]:
    """(gunicorn's master, its web processes): the supervisor's child running gunicorn, and its children."""
    for child in children_of(server.pid):
        if b"gunicorn" in Path(f"/proc/{child}/cmdline").read_bytes():
            return child, children_of(child)
    raise SystemExit("no gunicorn master under the server")


def serving_processes(server: subprocess.Popen, count: int) -> tuple[int, list[int]]:
    """(gunicorn's master, its web processes), waited for (a minute at most) until `count` have started."""
    master, webs = web_processes(server)
    deadline = time.monotonic() + 60
    while len(webs) < count and time.monotonic() < deadline:
        time.sleep(0.2)
        webs = children_of(master)
    return master, webs


def memory(pid: int) -> dict[str, int]:
    """Bytes: RssAnon, RssFile, VmRSS, VmHWM (status), Pss and Private_Dirty (smaps_rollup; not Private_Clean,
    which counts the index's file pages no other process happens to map yet); and the CPU time the process has
    used (cpu, in ms)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("RssAnon", "RssFile", "VmHWM", "VmRSS"):
            found[name] = int(value.split()[0]) * 1024
    rollup = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, value = line.partition(":")
        rollup[name] = int(value.split()[0]) * 1024
    found["Pss"] = rollup["Pss"]
    found["Private_Dirty"] = rollup["Private_Dirty"]
    stat = Path(f"/proc/{pid}/stat").read_text()
    ticks = stat[stat.rindex(")") + 2 :].split()
    found["cpu"] = (int(ticks[11]) + int(ticks[12])) * 1000 // os.sysconf("SC_CLK_TCK")
    return found


# --- the load ---------------------------------------------------------------------------------------------


def check(answer: httpx.Response) -> dict:
    if answer.status_code != 200:
        raise SystemExit(f"{answer.status_code}: {answer.text[:500]}")
    found = answer.json()
    if not found["results"] or found["index"].get("stale"):
        raise SystemExit(f"wrong answer: {len(found['results'])} results, index {found['index']}")
    return found


def load(url: str, key: str, queries: list[str], clients: int, search_type: str = "Hybrid") -> dict:
    """Every query once, `clients` at a time (closed loop, a keep-alive connection each), after one untimed
    round; per query its latency (client wall time), took_ms and its answer's (document, score) list."""
    answers: list[list | None] = [None] * len(queries)
    wall = [0.0] * len(queries)
    took = [0.0] * len(queries)
    position = iter(range(len(queries)))
    lock = threading.Lock()
    errors: list[BaseException] = []
    barrier = threading.Barrier(clients + 1)

    def client(number: int) -> None:
        headers = {"Authorization": f"Bearer {key}"}
        try:
            with httpx.Client(base_url=url, headers=headers, timeout=300) as http:
                check(http.post(URL, json=body(queries[number % len(queries)], search_type)))  # untimed
                barrier.wait()
                while True:
                    with lock:
                        i = next(position, None)
                    if i is None:
                        return
                    started = time.perf_counter()
                    found = check(http.post(URL, json=body(queries[i], search_type)))
                    wall[i] = (time.perf_counter() - started) * 1000
                    took[i] = found["took_ms"]
                    answers[i] = [[r["document_id"], r["score"]] for r in found["results"]]
        except BaseException as exc:  # noqa: BLE001 (reported by the main thread, which exits)
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):  # a client failed: reported below
        barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    if errors:
        raise SystemExit(f"a client failed: {errors[0]!r}")
    digest = hashlib.sha256(json.dumps(answers).encode()).hexdigest()[:16]
    return {"wall": wall, "took": took, "seconds": seconds, "digest": digest}


def body(query: str, search_type: str = "Hybrid") -> dict:
    return {"collection_id": "synthetic", "query": query, "search_type": search_type, "top_k": 10}


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: the smallest value with at least q of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(np.ceil(q * len(ordered))) - 1))]


# --- the run ----------------------------------------------------------------------------------------------


def serve_and_measure(env: dict[str, str], data: Path, queries: list[str], clients: int) -> dict:
    key = api_key(env)
    server, url, seconds = start_server(env, data / "serve.log", timeout=900)
    try:
        banner = [line for line in (data / "serve.log").read_text().splitlines() if "web processes x" in line]
        master, webs = serving_processes(server, int(env["EVALSITE_WEB_PROCESSES"]))
        before = {pid: memory(pid) for pid in [master, *webs]}
        timed = load(url, key, queries, clients)
        after = {pid: memory(pid) for pid in [master, *webs]}
    finally:
        stop_server(server)
    return {
        "ready": seconds,
        "banner": banner[0].strip() if banner else "serve",
        "master": master,
        "webs": webs,
        "before": before,
        "after": after,
        **timed,
    }


def report(found: dict, pages: int, clients: int) -> bool:
    wall, took = found["wall"], found["took"]
    print(f"\nserver ready in {found['ready']:.1f} s: {found['banner']}")
    print(
        f"\n## Hybrid (Rrf, top 10) over REST, {pages:,} pages, {len(wall)} queries, {clients} clients "
        "(closed loop, keep-alive)\n"
    )
    print("| queries/s | p50 ms | p95 ms | p99 ms | max ms | took_ms (server's search) p50 / p95 |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {len(wall) / found['seconds']:,.1f} | {percentile(wall, 0.5):,.0f} | {percentile(wall, 0.95):,.0f} | "
        f"{percentile(wall, 0.99):,.0f} | {max(wall):,.0f} | {percentile(took, 0.5):,.0f} / "
        f"{percentile(took, 0.95):,.0f} |"
    )
    cpu = sum(found["after"][pid]["cpu"] - found["before"][pid]["cpu"] for pid in found["webs"])
    print(f"\nthe web processes' CPU a query: {cpu / len(wall):,.0f} ms")
    print(f"answers digest (documents and scores of every answer, in order): {found['digest']}")
    print(
        "\n| process | RssAnon MiB (private, COW pages shared with the master included) | Private_Dirty MiB "
        "(written by this process alone) | RssFile MiB (mapped files, shared) | Pss MiB | VmHWM MiB | "
        "CPU s in the load |"
    )
    print("|---|---|---|---|---|---|---|")
    worst = 0
    for pid in [found["master"], *found["webs"]]:
        now, then = found["after"][pid], found["before"][pid]
        name = "gunicorn master" if pid == found["master"] else f"web process {pid}"
        if pid != found["master"]:
            worst = max(worst, now["RssAnon"])
        print(
            f"| {name} | {now['RssAnon'] / MIB:,.0f} (before the load {then['RssAnon'] / MIB:,.0f}) | "
            f"{now['Private_Dirty'] / MIB:,.0f} | {now['RssFile'] / MIB:,.0f} | {now['Pss'] / MIB:,.0f} | "
            f"{now['VmHWM'] / MIB:,.0f} | {(now['cpu'] - then['cpu']) / 1000:,.1f} |"
        )
    idle = [pid for pid in found["webs"] if found["after"][pid]["cpu"] - found["before"][pid]["cpu"] < 100]
    passed = worst < TARGET_PRIVATE and not idle
    print(
        f"\nverdict: the largest private memory (RssAnon) of a web process {worst / MIB:,.0f} MiB against "
        f"< {TARGET_PRIVATE / MIB:,.0f} MiB: {'PASS' if worst < TARGET_PRIVATE else 'FAIL'}"
        f"{'; web processes that served nothing: ' + str(idle) if idle else '; every web process served'}"
    )
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--web-processes", type=int, default=4, help="EVALSITE_WEB_PROCESSES (4)")
    parser.add_argument("--cache", type=Path, help="keep the database and indexes in DIR/<pages>, reused")
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_PAGES:,} pages, {QUICK_QUERIES} queries"
    )
    args = parser.parse_args()
    if args.quick:
        args.pages, args.queries, args.clients, args.web_processes = QUICK_PAGES, QUICK_QUERIES, 4, 2
    data = args.cache / str(args.pages) if args.cache else Path(tempfile.mkdtemp(prefix="evalsite-hybrid-"))
    data.mkdir(parents=True, exist_ok=True)
    env = environment(data, args.web_processes)
    os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "EVALSITE_DATA_DIR")})
    try:
        for line in prepare(data, args.pages, env):
            print(line, flush=True)
        found = serve_and_measure(env, data, query_texts(args.queries), args.clients)
    finally:
        if not args.cache:
            shutil.rmtree(data, ignore_errors=True)
    passed = report(found, args.pages, args.clients)
    return 0 if passed or args.quick else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
