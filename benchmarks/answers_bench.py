"""Answer evaluation with a slow model (the issue's figure: "100 questions x 2 configurations with the scripted
server at 200 ms latency finish at least 10x faster than sequential judging"): `evaluate_answers` over
`--questions` golden entries and two configurations (FullText, Hybrid), LLM answers and the LLM judge against the
scripted OpenAI-compatible server answering every call after `--latency` seconds, one call at a time
(EVALSITE_LLM_CONCURRENCY=1) and then with `--concurrency` calls in flight, side by side in one run.

    .venv/bin/python benchmarks/answers_bench.py [--questions 100] [--latency 0.2] [--concurrency 16]
        [--sequential-estimate N] [--quick]

The sequential run is real and long by default (100 questions x 2 configurations x 6 calls x 0.2 s is about
4 minutes); `--sequential-estimate N` times only the first N questions (x 2 configurations) one call at a time
and extrapolates to all of them, and then compares those N questions' results with the concurrent run's.

Both measurements run the whole `evaluate_answers` call (retrieval, answering, judging, the call cache,
persistence) on one temporary SQLite database (removed at the end), after a warm-up that builds the search
indexes, with the call cache (LLMCall) emptied before each so every call reaches the server. It prints the calls
made, the wall time and the answer+judge phase time of each, the speed-up, and checks that both runs give the same
metrics, refusal counts, diagnoses and per-question answers and judgements. `--quick` runs the same steps at a
tiny size (4 questions, 20 ms latency, 4 in flight) in seconds, with the same checks except the speed-up target
(too few calls to measure it; the figure is printed); any failure exits non-zero.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bench_django import private_django

CONFIGS = [{"label": "fulltext", "search_type": "FullText"}, {"label": "hybrid", "search_type": "Hybrid"}]


def golden_entries(n: int) -> list[tuple[str, str, str]]:
    """(question, expected document id, reference answer) for the first n synthetic companies."""
    from tests.generation_support import _CITIES, _PRODUCTS, company_name

    entries = []
    for i in range(n):
        name = company_name(i)
        kind = i % 3
        if kind == 0:
            year = 1850 + (i * 37) % 170
            entry = (f"When was {name} founded?", f"{name} was founded in {year} by a family of clockmakers.")
        elif kind == 1:
            city = _CITIES[i % len(_CITIES)]
            entry = (f"Where is the head office of {name}?", f"{name} has its head office in {city}.")
        else:
            product = _PRODUCTS[i % len(_PRODUCTS)]
            entry = (f"What does {name} manufacture?", f"{name} is a manufacturer of {product}.")
        entries.append((entry[0], f"company-{i:03d}", entry[1]))
    return entries


def snapshot(runs: list[Any], questions: int | None = None) -> list[Any]:
    """What must not depend on the concurrency: per configuration, the run's figures (when whole) and the first
    `questions` question results (answer, refusal, metrics, diagnosis)."""
    from evaluation.models import QuestionResult

    out: list[Any] = []
    for run in runs:
        rows = QuestionResult.objects.filter(run=run).order_by("position")
        if questions is not None:
            rows = rows[:questions]
        per_question = [
            (r.question, r.answer, r.refused, r.metrics, r.diagnosis, r.passed, r.citations) for r in rows
        ]
        whole = (
            None
            if questions is not None
            else (run.metrics, run.summary.get("refusal"), run.summary.get("diagnosis"), run.mode)
        )
        out.append((run.label, whole, per_question))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server waits per call")
    parser.add_argument("--concurrency", type=int, default=16, help="calls in flight in the concurrent run")
    parser.add_argument(
        "--sequential-estimate",
        type=int,
        metavar="N",
        help="time only N questions (x 2 configurations) sequentially and extrapolate (default: the full run)",
    )
    parser.add_argument("--min-speedup", type=float, default=10.0, help="the figure the issue asks for")
    parser.add_argument("--quick", action="store_true", help="the same steps at a tiny size, in seconds")
    args = parser.parse_args()
    if args.quick:
        args.questions, args.latency, args.concurrency, args.min_speedup = 4, 0.02, 4, 0.0
    if args.questions < 1 or args.concurrency < 2:
        parser.error("--questions must be at least 1 and --concurrency at least 2")
    sample = args.sequential_estimate
    if sample is not None and not 1 <= sample <= args.questions:
        parser.error("--sequential-estimate must be from 1 to --questions")

    with private_django("evalsite-answers-bench-") as data_dir:
        run_bench(args, data_dir)


def run_bench(args: argparse.Namespace, data_dir: str) -> None:
    from django.conf import settings

    from evalsite.llm.models import LLMCall
    from evalsite.tenancy.services import tenant_get_or_create
    from evaluation.answers.configs import parse_answer_configs
    from evaluation.answers.evaluate import evaluate_answers
    from evaluation.retrieval.read_path import available_rerankers
    from goldenset import services
    from tests.answer_support import scripted_rag
    from tests.generation_support import synthetic_corpus
    from tests.llm_server import ScriptedLLMServer

    tenant = tenant_get_or_create(cluster_slug="bench", tenant_slug="bench")
    collection = services.collection_create(tenant=tenant, slug="companies", actor="command:benchmark")
    corpus = synthetic_corpus(max(100, args.questions))
    services.documents_upsert(
        collection=collection,
        documents=[services.DocumentInput.from_text(id=d, text=t) for d, t in corpus.items()],
        actor="command:benchmark",
    )
    services.golden_entries_add(
        collection=collection,
        entries=[
            services.EntryInput(question=q, expected_document_ids=[d], reference_answer=a, key=d)
            for q, d, a in golden_entries(args.questions)
        ],
        actor="bench",
    )
    configs = parse_answer_configs(CONFIGS, available_rerankers())
    # Warm-up: build and persist both configurations' search indexes, so neither measurement pays for them.
    evaluate_answers(tenant=tenant, collections=[collection], configs=configs, max_questions=1, offline=True)

    sample = args.sequential_estimate
    pairs = args.questions * len(configs)
    print(
        f"{len(corpus)} documents, {args.questions} questions x {len(configs)} configurations "
        f"({', '.join(c.label for c in configs)}) = {pairs} answers, LLM answers + LLM judge; "
        f"scripted server latency {args.latency * 1000:.0f} ms per call"
    )

    measured: dict[int, dict[str, Any]] = {}
    with ScriptedLLMServer(latency=args.latency) as server:
        server.reply(r".", scripted_rag)
        settings.EVALSITE_LLM_BASE_URL = server.url
        settings.EVALSITE_LLM_MODEL = "scripted"
        for concurrency in (1, args.concurrency):
            settings.EVALSITE_LLM_CONCURRENCY = concurrency
            LLMCall.objects.all().delete()  # every call a real one
            questions = sample if concurrency == 1 and sample is not None else args.questions
            sent = server.count("/v1/chat/completions")
            started = time.perf_counter()
            _, runs = evaluate_answers(
                tenant=tenant,
                collections=[collection],
                configs=configs,
                judge_model="scripted",
                max_questions=questions,
            )
            wall = time.perf_counter() - started
            calls = server.count("/v1/chat/completions") - sent
            usage = [run.summary["usage"] for run in runs]
            phase = sum(run.duration_ms for run in runs) / 1000  # answering + judging (split evenly per run)
            measured[concurrency] = {
                "questions": questions,
                "wall": wall,
                "phase": phase,
                "calls": calls,
                "runs": runs,
            }
            answer_calls = sum(u["answer_calls"] for u in usage)
            judge_calls = sum(u["judge_calls"] for u in usage)
            cached = sum(u["cached_calls"] for u in usage)
            latency_ms = sum(u["call_latency_ms"] for u in usage) / max(
                1, answer_calls + judge_calls - cached
            )
            per_run = ", ".join(f"{r.label} {u['cached_calls']}" for r, u in zip(runs, usage, strict=True))
            print(
                f"  concurrency {concurrency:2d}: {questions * len(configs):3d} answers, {calls} HTTP calls "
                f"({answer_calls} answer + {judge_calls} judge calls, {cached} of them answered by the run's "
                f"own cache: {per_run})"
            )
            print(
                f"                  wall {wall:7.2f} s, answer+judge phase {phase:7.2f} s "
                f"({calls / phase:5.1f} calls/s, {latency_ms:.0f} ms per call as the client saw it)"
            )
            for run in runs:
                assert run.mode == "llm-judge", (run.label, run.mode, run.warnings)

    sequential, concurrent = measured[1], measured[args.concurrency]
    if sample is None:
        seq_wall, seq_phase = sequential["wall"], sequential["phase"]
        same = snapshot(sequential["runs"]) == snapshot(concurrent["runs"])
        what = "metrics, refusals, diagnoses and per-question results"
    else:
        scale = args.questions / sample
        seq_wall, seq_phase = sequential["wall"] * scale, sequential["phase"] * scale
        print(
            f"  sequential estimate: {sample} of {args.questions} questions timed, x{scale:.2f}: "
            f"wall {seq_wall:7.2f} s, answer+judge phase {seq_phase:7.2f} s"
        )
        same = snapshot(sequential["runs"], sample) == snapshot(concurrent["runs"], sample)
        what = f"per-question results of the first {sample} questions"
    floor = concurrent["calls"] * args.latency / args.concurrency  # every call at `concurrency` at a time
    print(
        f"speed-up: {seq_wall / concurrent['wall']:.1f}x wall, {seq_phase / concurrent['phase']:.1f}x "
        f"answer+judge phase (ideal {args.concurrency}x; the concurrent phase's floor is about {floor:.1f} s)"
    )
    print(f"same {what}: {'yes' if same else 'NO'}")
    for run in concurrent["runs"]:
        metrics = ", ".join(f"{k} {v:.3f}" for k, v in sorted(run.metrics.items()))
        print(f"  {run.label}: {metrics}; diagnosis {run.summary.get('diagnosis')}")
    assert same, "the sequential and concurrent runs disagree"
    speedup = seq_wall / concurrent["wall"]
    if speedup < args.min_speedup:
        print(f"BELOW TARGET: {speedup:.1f}x < {args.min_speedup:g}x")
        sys.exit(1)


if __name__ == "__main__":
    main()
