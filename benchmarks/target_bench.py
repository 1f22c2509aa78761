"""External targets (issue 13's figures: "1,000 questions against a target answering after 50 ms: concurrency 8 at
least 6x faster than one at a time; evalsite's own overhead per question beyond the target's latency under
2 ms"): the whole `evaluate_retrieval` call of an `http` target over `--questions` golden questions, against the
scripted server (tests/llm_server.py, its generic /search endpoint over the same synthetic corpus; a process of its
own) answering every call after `--latency` seconds, with the target's concurrency 1 and then `--concurrency`, taking turns
(`--rounds` each, best round per setting), on one temporary SQLite database.

    .venv/bin/python benchmarks/target_bench.py [--questions 1000] [--latency 0.05] [--concurrency 8]
        [--rounds 2] [--quick]

Printed per setting: wall time of the whole call (target calls, mapping, metrics, the stored run), the calls'
own latency as the client measured them (p50, p95: request sent to answer read), and evalsite's overhead per
question, (wall time - the sum of the calls' latencies) / questions, from the one-at-a-time run, where the calls
do not overlap. Checks that both settings give the same metrics and rankings. `--quick`: 40 questions, 20 ms,
one round, the same checks, the speed-up target printed but not held.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from answers_bench import golden_entries
from bench_django import private_django

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.questions, args.latency, args.rounds = 40, 0.02, 1
    # The scripted target listens on loopback, which targets may reach only where the operator allows it.
    with private_django("evalsite-target-bench-", EVALSITE_OUTBOUND_ALLOW="127.0.0.1"):
        sys.exit(run(args))


@contextlib.contextmanager
def scripted_server(corpus: dict[str, str], latency: float) -> Iterator[str]:
    """The scripted server (tests/llm_server.py) in a process of its own, so that its work does not share this
    process's interpreter with the evaluation being timed; yields its URL."""
    import httpx

    from tests.worker_support import free_port

    folder = Path(tempfile.mkdtemp(prefix="evalsite-target-bench-"))
    (folder / "corpus.json").write_text(json.dumps(corpus))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.llm_server", "--port", str(port), "--latency", str(latency),
         "--documents", str(folder / "corpus.json")],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/v1/models", timeout=2)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the scripted server did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


def run(args) -> int:
    from evalsite.tenancy.services import tenant_get_or_create
    from evaluation.configs import parse_configs
    from evaluation.models import QuestionResult
    from evaluation.retrieval.evaluate import evaluate_retrieval
    from evaluation.targets.services import target_create
    from goldenset import services
    from goldenset.services import EntryInput
    from tests.generation_support import synthetic_corpus

    tenant = tenant_get_or_create(cluster_slug="bench", tenant_slug="bench")
    collection = services.collection_create(tenant=tenant, slug="companies", actor="bench")
    corpus = synthetic_corpus(max(args.questions, 200))
    services.documents_upsert(
        collection=collection,
        documents=[services.DocumentInput.from_text(id=i, title=i, text=t) for i, t in corpus.items()],
        actor="bench",
    )
    entries = golden_entries(args.questions)
    for start in range(0, len(entries), 1000):
        services.golden_entries_add(
            collection=collection,
            entries=[
                EntryInput(question=q, expected_document_ids=[doc], reference_answer=a, key=f"q{start + i}")
                for i, (q, doc, a) in enumerate(entries[start : start + 1000])
            ],
            actor="bench",
        )
    failures: list[str] = []
    with scripted_server(corpus, args.latency) as url:
        for name, concurrency in (("one-at-a-time", 1), ("concurrent", args.concurrency)):
            target_create(
                tenant=tenant,
                data={
                    "name": name,
                    "kind": "http",
                    "base_url": url + "/search",
                    "concurrency": concurrency,
                    "timeout_s": 30,
                    "options": {
                        "request_template": {"query": "{{query}}", "limit": "{{top_k}}"},
                        "response_mapping": {"ids": "data.hits[].id", "scores": "data.hits[].relevance"},
                    },
                },
                actor="bench",
            )
        best: dict[str, tuple[float, object]] = {}
        for _ in range(args.rounds):
            for name in ("one-at-a-time", "concurrent"):
                started = time.perf_counter()
                _, (run,) = evaluate_retrieval(
                    tenant=tenant,
                    collections=[collection],
                    ks=[1, 5, 10],
                    configs=parse_configs([{"label": name, "target": name}], []),
                )
                seconds = time.perf_counter() - started
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, run)
    n = args.questions
    print(
        f"# {n} questions, the target answering after {args.latency * 1000:.0f} ms (the scripted server in a "
        f"process of its own on 127.0.0.1), {args.rounds} rounds, best per setting\n"
    )
    print(
        "| target concurrency | wall s | questions/s | call latency p50 / p95 ms | overhead per question ms |"
    )
    print("|---|---|---|---|---|")
    rankings = {}
    overhead = None
    for name, (seconds, run) in best.items():
        rows = list(QuestionResult.objects.filter(run=run).order_by("position"))
        latencies = [r.latency_ms for r in rows if r.latency_ms is not None]
        own = (seconds * 1000 - sum(latencies)) / n
        if name == "one-at-a-time":
            overhead = own
        latency = run.summary["latency_ms"]
        cell = f"{own:.2f}" if name == "one-at-a-time" else "(calls overlap)"
        label = "1" if name == "one-at-a-time" else str(args.concurrency)
        print(
            f"| {label} | {seconds:.2f} | {n / seconds:,.0f} | {latency['p50']:.1f} / {latency['p95']:.1f} | {cell} |"
        )
        rankings[name] = (run.metrics, [r.ranked_ids for r in rows], run.status)
        if run.status != "complete":
            failures.append(f"{name}: run {run.status}: {run.warnings}")
    speedup = best["one-at-a-time"][0] / best["concurrent"][0]
    print(f"\nspeed-up, concurrency {args.concurrency} over 1: {speedup:.2f}x (target at least 6x)")
    print(f"evalsite's own overhead per question (one at a time): {overhead:.2f} ms (target under 2 ms)")
    same = rankings["one-at-a-time"][:2] == rankings["concurrent"][:2]
    print(f"same metrics and rankings in both settings: {same}; metrics {rankings['concurrent'][0]}")
    if not same:
        failures.append("the two settings disagree")
    if not args.quick:
        if speedup < 6:
            failures.append(f"speed-up {speedup:.2f}x < 6x")
        if overhead is not None and overhead >= 2:
            failures.append(f"overhead {overhead:.2f} ms >= 2 ms")
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
