"""BEIR import benchmark: `manage.py import_beir` of a synthetic corpus, its wall time and peak memory.

    .venv/bin/python benchmarks/import_bench.py [--pages 1000000] [--quick]

Writes a synthetic BEIR folder of --pages documents (one page each, mostly: a text longer than
EVALSITE_PAGE_CHARS is split) with real word statistics (benchmarks/synthetic.py), ids doc-0000001..., plus 100
queries judging the first documents, into a temporary folder; then runs `manage.py import_beir` on it in a
subprocess against a temporary SQLite database (DEBUG off, as in production: with DEBUG on Django keeps the
text of the last 9,000 queries), and reports its wall time, pages per second and the peak resident memory of
the import process (its VmHWM). Checks that the database then holds every document and page.
`--quick` imports a few thousand pages in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_django import private_django

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
QUICK_PAGES = 3000
QUERIES = 100


def write_corpus(folder: Path, pages: int) -> int:
    """The BEIR folder: corpus.jsonl (one document per token list), queries.jsonl, qrels.tsv; its size."""
    import synthetic

    from goldenset.text import tokenize

    folder.mkdir(parents=True, exist_ok=True)
    width = max(7, len(str(pages)))
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as corpus:
        for number, tokens in enumerate(synthetic.token_lists(pages, tokenize, seed=0), 1):
            row = {"_id": f"doc-{number:0{width}d}", "title": "", "text": " ".join(tokens)}
            corpus.write(json.dumps(row) + "\n")
    texts = synthetic.queries(tokenize)[:QUERIES]
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as queries:
        for number, text in enumerate(texts, 1):
            queries.write(json.dumps({"_id": f"q{number}", "text": text}) + "\n")
    with (folder / "qrels.tsv").open("w", encoding="utf-8") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        for number in range(1, len(texts) + 1):
            qrels.write(f"q{number}\tdoc-{min(number, pages):0{width}d}\t1\n")
    return (folder / "corpus.jsonl").stat().st_size


def peak_rss(pid: int) -> int | None:
    """VmHWM of a running process, in bytes (None once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next(
        (int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:")), None
    )


def run_measured(
    argv: list[str], env: dict[str, str] | None = None, echo: bool = False
) -> tuple[float, int, str]:
    """Run a command in a subprocess: (seconds, its peak RSS in bytes, its output); `echo` prints its lines as
    they come.

    The peak is the process's own VmHWM, read every 0.05 s while it runs (it only grows). Not ru_maxrss from
    wait4: Linux folds the forking parent's RSS at exec into it, and a benchmark's parent can be large."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    peak = 0

    def watch() -> None:
        nonlocal peak
        while process.poll() is None:
            peak = max(peak, peak_rss(process.pid) or 0)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    lines = []
    for line in process.stdout:
        peak = max(peak, peak_rss(process.pid) or 0)
        if echo:
            print(f"  {line.rstrip()}", flush=True)
        lines.append(line)
    process.wait()
    seconds = time.perf_counter() - started
    watcher.join()
    if process.returncode:
        raise SystemExit(f"{' '.join(argv[1:3])} exited {process.returncode}:\n{''.join(lines[-30:])}")
    return seconds, peak, "".join(lines)


def run_import(folder: Path) -> tuple[float, int, str]:
    """import_beir of the folder in a subprocess, its progress printed: (seconds, peak RSS in bytes, output)."""
    argv = [sys.executable, str(ROOT / "manage.py"), "import_beir", str(folder)]
    argv += ["--cluster", "bench", "--tenant", "bench", "--collection", "synthetic", "--verbosity", "2"]
    # Tasks queued, not run inline: its commit queues the collection's index build for a worker, as in production
    return run_measured(argv, env={**os.environ, "EVALSITE_Q_SYNC": "0"}, echo=True)


def counts(data_dir: str) -> tuple[int, int]:
    """(documents, pages) in the benchmark's database."""
    with sqlite3.connect(Path(data_dir) / "evalsite.sqlite3") as db:
        documents = db.execute("SELECT count(*) FROM goldenset_document").fetchone()[0]
        pages = db.execute("SELECT count(*) FROM goldenset_page").fetchone()[0]
    return documents, pages


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PAGES} pages, in seconds")
    args = parser.parse_args()
    pages = QUICK_PAGES if args.quick else args.pages

    with private_django("evalsite-import-bench-", DEBUG="0") as data_dir:
        folder = Path(tempfile.mkdtemp(prefix="evalsite-import-corpus-"))
        try:
            started = time.perf_counter()
            size = write_corpus(folder, pages)
            print(
                f"synthetic corpus: {pages} documents, {size / 1e6:.0f} MB corpus.jsonl, "
                f"written in {time.perf_counter() - started:.1f} s",
                flush=True,
            )
            seconds, peak, output = run_import(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        documents, stored_pages = counts(data_dir)
    print()
    print("| documents | pages | import_beir wall time (s) | pages/s | peak RSS of the import (MB) |")
    print("|---:|---:|---:|---:|---:|")
    print(
        f"| {documents} | {stored_pages} | {seconds:.1f} | {stored_pages / seconds:,.0f} | {peak / 2**20:,.0f} |"
    )
    summary = [line for line in output.splitlines() if line.startswith("synthetic: ")]
    ok = documents == pages and stored_pages >= pages and len(summary) == 1
    print(f"all {pages} documents and their pages in the database: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
