"""Golden-set generation with a slow model (issue 5's figure): the Generate job over `--pages` pages against the
scripted OpenAI-compatible server answering every call after `--latency` seconds, one call at a time
(EVALSITE_LLM_CONCURRENCY=1) and then with `--concurrency` calls in flight, side by side in one run.

    .venv/bin/python benchmarks/generate_bench.py [--pages 100] [--latency 0.2] [--concurrency 8] [--quick]

Each measurement is the whole job as a worker runs it (django-q2 in sync mode runs it inline: sampling, the chat writer, the
quality gate, one committed golden entry per accepted page, progress and cache writes) on a fresh temporary
SQLite database with an empty call cache, so every page costs one real HTTP call. It checks that both runs
accepted the same questions (the gate runs in sample order whatever the concurrency) and prints the speed-up.
`--quick` runs the same steps at a tiny size (6 pages, 20 ms latency, 3 in flight) in seconds; any failure exits
non-zero.
"""

from __future__ import annotations

import argparse
import time

from bench_django import private_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="the same steps at a tiny size, in seconds")
    args = parser.parse_args()
    if args.quick:
        args.pages, args.latency, args.concurrency = 6, 0.02, 3
    if args.pages < 1 or args.concurrency < 2:
        parser.error("--pages must be at least 1 and --concurrency at least 2")

    with private_django("evalsite-generate-bench-") as data_dir:
        run(args, data_dir)


def run(args: argparse.Namespace, data_dir: str) -> None:
    from django.conf import settings

    from evalsite.llm.models import LLMCall
    from evalsite.tenancy.services import tenant_get_or_create
    from goldenset import services
    from goldenset.services.generate import generate_job_create
    from tests.generation_support import scripted_writer, synthetic_corpus
    from tests.llm_server import ScriptedLLMServer

    tenant = tenant_get_or_create(cluster_slug="bench", tenant_slug="bench")
    corpus = synthetic_corpus(args.pages)
    print(f"{args.pages} pages, scripted server latency {args.latency * 1000:.0f} ms per call")

    with ScriptedLLMServer(latency=args.latency) as server:
        server.reply(r"Passage:", scripted_writer)
        settings.EVALSITE_LLM_BASE_URL = server.url
        settings.EVALSITE_LLM_MODEL = "scripted"
        runs: dict[int, tuple[float, list[str], dict]] = {}
        for run, concurrency in enumerate((1, args.concurrency)):
            settings.EVALSITE_LLM_CONCURRENCY = concurrency
            LLMCall.objects.all().delete()  # every page a real call
            collection = services.collection_create(
                tenant=tenant, slug=f"run-{run}", actor="command:benchmark"
            )
            services.documents_upsert(
                collection=collection,
                documents=[services.DocumentInput.from_text(id=d, text=t) for d, t in corpus.items()],
                actor="command:benchmark",
            )
            sent = server.count()
            started = time.perf_counter()
            # django-q2 in sync mode (EVALSITE_Q_SYNC=1): the job runs inline once created, as a worker runs it.
            job = generate_job_create(
                tenant=tenant,
                collection=collection,
                count=args.pages,
                model="scripted",
                seed=1,
                actor="bench",
            )
            elapsed = time.perf_counter() - started
            job.refresh_from_db()
            assert job.status == "Completed", job.error
            assert server.count() - sent == job.result["calls"] == args.pages, job.result
            questions = list(
                collection.golden_entries.order_by("question").values_list("question", flat=True)
            )
            runs[concurrency] = (elapsed, questions, job.result)
            print(
                f"  concurrency {concurrency:2d}: {elapsed:6.2f} s  ({args.pages / elapsed:5.1f} pages/s), "
                f"accepted {job.result['accepted']}, calls {job.result['calls']}"
            )

    sequential, concurrent = runs[1], runs[args.concurrency]
    assert sequential[1] == concurrent[1], "the two runs accepted different questions"
    assert concurrent[1], "the quality gate accepted no question"
    print(f"speed-up: {sequential[0] / concurrent[0]:.1f}x (same {len(concurrent[1])} questions accepted)")


if __name__ == "__main__":
    main()
