"""Every benchmark's `--quick` run: the same code path as the full benchmark at a tiny size, so that a benchmark
cannot rot unnoticed. Each runs as a subprocess of this interpreter and must exit 0 and print its figures.

The runs start when the first of these tests runs, PARALLEL at a time (most of their time is spent waiting on a
server starting, a scripted model's latency or a database), and each test waits for its own. Deselect them with
`-m "not benchmark"`. The load and serving-scale benchmarks run on the backend of this suite: PostgreSQL (+ Redis)
when DATABASE_URL names a PostgreSQL server (a database of its own on that server, dropped afterwards; the
serving-scale one then also publishes its index there and fetches it as a second machine), SQLite otherwise. The others
use a temporary SQLite database whatever the suite's backend: they run with the suite on SQLite only (CI runs it
on both), not twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT.parent / "shared" / "datasets"
PARALLEL = 2
TIMEOUT = 300  # seconds per benchmark, a generous bound: each takes seconds to a minute on 2 busy cores

# What each must print (besides exiting 0): its figures, and the verdicts of its checks.
EXPECTED: dict[str, list[str]] = {
    "dashboard_bench": [
        "stored 25 runs x 10 questions",
        "| runs (page n)",
        "| compare (5 runs",
        "| trends (",
    ],
    "generate_bench": ["concurrency  1:", "concurrency  3:", "speed-up:", "questions accepted)"],
    "answers_bench": [
        "concurrency  1:",
        "speed-up:",
        "same metrics, refusals, diagnoses and per-question results: yes",
    ],
    "clapnq_answers": ["12 golden entries kept", "Hybrid High", "support-threshold sweep", "0.95 "],
    "search_bench": [
        "| evalsite lucene |",
        "| bm25s lucene (numpy) |",
        "okapi scores identical to rank-bm25 on query 1: True",
        "| lucene | 0.",
        "| POST /search/evaluate, persisted |",
        "builds no index: True",
        "| bm25s numba | ",
        "exact (top 100 equal to the brute-force ranking, scores bit for bit): 20/20",
    ],
    "serve_scale_bench": ["| import_beir |", "| build_index (FullText) |", "| FullText | ", "| Hybrid | "],
    "hybrid_scale_bench": [
        "## Hybrid (Rrf, top 10) over REST, 3,000 pages, 40 queries",
        "answers digest (documents and scores of every answer, in order): ",
        "| web process ",
        "verdict: the largest private memory (RssAnon) of a web process ",
    ],
    "vector_quality": [
        "## vaswani_npl (--quick sample)",
        "LSI fit:",
        "| Hybrid Rrf | 0.",
        "| Hybrid Rrf + proximity | 0.",
        "| FullText + feedback | 0.",
    ],
    "incremental_bench": [
        "| upsert call -> a search returns the new document |",
        "a search waited on the build (spanned the whole job): no",
        "| incremental (the update) |",
        "| full rebuild |",
        "incremental arrays identical to a full rebuild's (postings, idf, weights, both variants): yes",
    ],
    "load_bench": [
        "| every request kind answered 2xx | all | yes |",
        "| 0 server errors (5xx) | 0 | yes |",
        "| fresh Hybrid | 100% | 3 |",
        "no process left",
    ],
    "target_bench": [
        "| target concurrency | wall s |",
        "speed-up, concurrency 8 over 1:",
        "evalsite's own overhead per question (one at a time):",
        "same metrics and rankings in both settings: True",
    ],
    "index_load_bench": [
        "| the description (index.json) |",
        "| read_index in a fresh process, median of 7 |",
        "| private memory the load added to that process (RssAnon, median) |",
        "the loaded index answers as the built one (FullText lucene and okapi, Vector, Hybrid; 20 queries, top 10, "
        "scores bit for bit): yes",
    ],
    "golden_import_bench": ["| dry run (preview) |", "| import |", "| the same file again |"],
    "fluency_bench": [
        "clapnq: human questions accepted",
        "clapnq: old 'known about' questions rejected",
        "seed 1, new writer, new gate:",
        "clapnq: every page: a clear sentence on",
    ],
    "import_bench": [
        "| import_beir wall time (s) | pages/s | peak RSS of the import (MB) |",
        "all 3000 documents and their pages in the database: yes",
    ],
    "judge_agreement": [
        "## extractive, dev part: n 173 in 41 groups",
        "plain content-word recall    AUC ",
        "this judge                   AUC ",
        "AUC minus plain recall's +",
        "previous release bfd3e8a7: not measured (--quick)",
    ],
    "judging_load": [
        "## sqlite, adaptive order: a pool of ",
        "every request answered 2xx: yes",
        "every judgment answered 201 stored once, with its grade: yes",
        "nothing stored that no client was told was stored: yes",
        "no rater given an item twice: yes",
        "no item given to more than 2 raters: yes",
        "no traceback in the server's log: yes",
    ],
    "pooling_bench": [
        "## cranfield (--quick sample): ",
        "## vaswani_npl (--quick sample): ",
        "| 0% (0) | ",
        "| 100% (",
        "nDCG@10: mean tau >= 0.9 after ",
        "before any judging, condensed nDCG@10 and bpref at least as close",
        "leave one out: judged@10 of the left-out system ",
        "| condensed nDCG@10 | ",
    ],
    "lexical_assessor": [
        "chosen cuts (dev halves): related ",
        "shipped cuts (evaluation.judgments.lexical.CUTS): ",
        "| cranfield | ",
        "| clapnq, question only | ",
        "cranfield test half, people's grade (rows) against the assessor's (columns)",
    ],
    "workbench_bench": [
        "| one column (FullText) | ",
        "| three columns | ",
        "| three columns, explain | ",
        "first call, three columns: ",
        "verdict: three built-in columns (FullText, Hybrid, FullText k1 0.9 b 0.4), p95 ",
        "## Where the time goes (cProfile, in-process)",
        "| evaluation/workbench/question.py:",
    ],
    "wide_bench": [
        "| study, 12-trial grid |",
        "| evaluation, 2 configurations |",
        "grid study, seed 7: same trials and winner with 1 and 2 workers: yes",
        "evaluation: same metrics for every configuration with 1 and 2 workers: yes",
    ],
    "calibration_bench": [
        "200 labels (2 raters, 100 items)",
        "report, cold (every item scored by the heuristic now):",
        "heuristic faithfulness (statement): n 90, AUC",
    ],
    "build_memory_bench": ["| evalsite | ", "| bm25s ", "evalsite / bm25s "],
    "passages_scale_bench": [
        "## 3,000 passages (3,0",
        "| import_beir: synthetic: 3000 documents (3000 created",
        "| from the index, 1 thread, depth 100 (rank_documents) | ",
        "| REST, 8 clients, top 10 | ",
        "(1 and 8 clients alike)",
    ],
    "search_digest": [
        "lucene k1=1.5 b=0.75: ",
        "okapi k1=0.9 b=0.4: ",
        "built by evaluation.retrieval.search.build",
    ],
}
# Printed besides on PostgreSQL.
EXPECTED_ON_POSTGRES: dict[str, list[str]] = {
    "serve_scale_bench": [
        "## 3,000 pages, PostgreSQL",
        "| the index store: published ",
        "| second machine, Hybrid | ",
        "the second machine's first search (fetch and map): fetched ",
    ],
    "passages_scale_bench": [
        "), PostgreSQL, DEBUG off",
        "published ",
        "| second machine: fetched ",
        "| of which the published index (IndexFile) | ",
        "(the same)",
    ],
}
NEEDS_DATASET = {
    "search_bench": DATASETS / "vaswani_npl",
    "vector_quality": DATASETS / "vaswani_npl",
    "pooling_bench": DATASETS / "cranfield",
    "lexical_assessor": DATASETS / "clapnq",
}
BACKEND_BOUND = {"load_bench", "serve_scale_bench", "passages_scale_bench", "wide_bench"}
POSTGRES_ONLY = {
    "wide_bench"
}  # work spread over the workers is measured on PostgreSQL + Redis  # the others always run on a temporary SQLite database
# Started longest first (as measured), so that the longest does not run alone at the end.
LONGEST_FIRST = [
    "load_bench",
    "wide_bench",
    "clapnq_answers",
    "search_bench",
    "dashboard_bench",
    "vector_quality",
    "judging_load",
    "answers_bench",
    "generate_bench",
    "target_bench",
    "golden_import_bench",
    "import_bench",
    "serve_scale_bench",
    "hybrid_scale_bench",
    "passages_scale_bench",
    "workbench_bench",
    "incremental_bench",
    "index_load_bench",
    "fluency_bench",
    "judge_agreement",
    "calibration_bench",
    "pooling_bench",
    "lexical_assessor",
    "build_memory_bench",
    "search_digest",
]
# Settings the benchmarks choose themselves: the suite's own must not leak into them.
SUITE_ONLY = ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "EVALSITE_REDIS_URL", "DEBUG", "EVALSITE_DATA_DIR")


def server_url(url: str) -> str:
    """scheme://user@host:port of a database URL, without the database."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def on_postgres() -> bool:
    return os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))


def skip_reason(name: str) -> str | None:
    if name in NEEDS_DATASET and not NEEDS_DATASET[name].is_dir():
        return f"{name} needs {NEEDS_DATASET[name]}, absent here (CI has ../shared/datasets)"
    if name in POSTGRES_ONLY and not on_postgres():
        return f"{name} runs on PostgreSQL + Redis: run with the suite on PostgreSQL"
    if on_postgres() and name not in BACKEND_BOUND:
        return f"{name} runs on SQLite whatever DATABASE_URL says: run with the suite on SQLite"
    return None


def command(name: str) -> list[str]:
    argv = [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--quick"]
    database = os.environ.get("DATABASE_URL", "")
    if name == "load_bench" and on_postgres():
        argv += ["--backend", "postgres", "--postgres-url", server_url(database)]
        if os.environ.get("EVALSITE_REDIS_URL"):
            argv += ["--redis-url", server_url(os.environ["EVALSITE_REDIS_URL"])]
    if name in ("serve_scale_bench", "passages_scale_bench") and on_postgres():
        argv += ["--postgres", server_url(database)]
    if name == "wide_bench":
        argv += ["--postgres-url", server_url(database)]
        if os.environ.get("EVALSITE_REDIS_URL"):
            argv += ["--redis-url", server_url(os.environ["EVALSITE_REDIS_URL"])]
    return argv


@dataclass
class Finished:
    returncode: int
    output: str
    seconds: float


def run(name: str) -> Finished:
    env = {k: v for k, v in os.environ.items() if k not in SUITE_ONLY and not k.startswith("EVALSITE_LLM_")}
    started = time.perf_counter()
    process = subprocess.Popen(
        command(name), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        output, _ = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        # SIGTERM first: the load benchmark stops its servers and removes its data on it (SIGKILL would not).
        process.send_signal(signal.SIGTERM)
        try:
            output, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        output += f"\n[timed out after {TIMEOUT} s]"
    return Finished(process.returncode, output, time.perf_counter() - started)


@pytest.fixture(scope="module")
def launched(request: pytest.FixtureRequest):
    """name -> the future of its run, for every benchmark selected in this session (PARALLEL at a time)."""
    selected = [
        item.callspec.params["name"]
        for item in request.session.items
        if getattr(item, "module", None) is sys.modules[__name__] and hasattr(item, "callspec")
    ]
    runnable = [name for name in LONGEST_FIRST if name in selected and skip_reason(name) is None]
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        futures: dict[str, Future[Finished]] = {name: pool.submit(run, name) for name in runnable}
        yield futures


def server_processes_of(data_dir: str) -> list[str]:
    """Processes whose environment names this data directory (a server the load benchmark started)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"EVALSITE_DATA_DIR={data_dir}".encode() in environ:
                found.append(entry)
    return found


@pytest.mark.benchmark
@pytest.mark.parametrize("name", list(EXPECTED))
def test_quick_benchmark_runs_and_prints_its_figures(
    name: str, launched: dict[str, Future[Finished]]
) -> None:
    """`benchmarks/<name>.py --quick` exits 0 and prints its figures and the verdicts of its checks."""
    reason = skip_reason(name)
    if reason:
        pytest.skip(reason)
    finished = launched[name].result()
    print(f"{name} --quick: {finished.seconds:.1f} s")
    assert finished.returncode == 0, f"exit {finished.returncode}:\n{finished.output[-6000:]}"
    expected = EXPECTED[name] + (EXPECTED_ON_POSTGRES.get(name, []) if on_postgres() else [])
    missing = [text for text in expected if text not in finished.output]
    assert not missing, f"not printed: {missing}\n{finished.output[-6000:]}"
    if name == "load_bench":
        data_dirs = [
            line.split()[2].rstrip(";")
            for line in finished.output.splitlines()
            if line.startswith("data directory ")
        ]
        assert data_dirs, finished.output[-3000:]
        for data_dir in data_dirs:
            assert not Path(data_dir).exists(), f"{data_dir} left behind"
            assert not server_processes_of(data_dir), f"processes of {data_dir} left behind"
