"""Dashboard pages under 10,000 stored runs (issue 4's figures): p50 / p95 of the runs page, a compare of 5 runs
and the trends page, measured over HTTP on loopback against a real server process.

    .venv/bin/python benchmarks/dashboard_bench.py [--runs 10000] [--questions 200] [--requests 60] [--quick]

Builds a temporary SQLite database (one collection, `--questions` golden entries, `--runs` runs of
`--questions` question results each, spread over 180 days across 5 configuration labels, batches of 5), starts
`manage.py runserver --noreload` on it (a free port), logs in as a member, warms each page, then times
`--requests` sequential GETs per page with httpx (one client, keep-alive) and prints the latency distribution.
The rows are written through the models (bulk_create), so every column gets its model's default. `--quick` runs
the same steps at a tiny size (25 runs x 10 questions, 5 requests a page) in seconds; any failure exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_django import free_port, private_django

ROOT = Path(__file__).resolve().parent.parent
LABELS = ["fulltext", "fulltext okapi", "vector lsi", "hybrid rrf", "hybrid rrf + rerank"]
KS = [1, 5, 10]


def metric_names() -> list[str]:
    """The names a retrieval run of these cutoffs stores (the standard measures and those for incomplete
    judgments), as evaluation.retrieval.metrics gives them."""
    sys.path.insert(0, str(ROOT))
    from evaluation.retrieval.metrics import evaluate_query  # noqa: PLC0415  (pure: no Django needed)

    return list(evaluate_query([], {}, KS))


def build(data_dir: str, runs: int, questions: int) -> dict:
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from evalsite.tenancy.models import Membership
    from evalsite.tenancy.services import tenant_get_or_create
    from evaluation.models import EvaluationRun, QuestionResult
    from goldenset import services

    tenant = tenant_get_or_create(cluster_slug="bench", tenant_slug="bench")
    collection = services.collection_create(tenant=tenant, slug="docs", actor="command:benchmark")
    services.documents_upsert(
        collection=collection,
        documents=[
            services.DocumentInput.from_text(id=f"d{i}", text=f"document {i} text") for i in range(questions)
        ],
        actor="command:benchmark",
    )
    entries, _ = services.golden_entries_add(
        collection=collection,
        entries=[
            services.EntryInput(question=f"question {i}?", expected_document_ids=[f"d{i}"], key=f"q{i}")
            for i in range(questions)
        ],
        actor="bench",
    )
    user = get_user_model().objects.create_user("bench", password="bench-password-123")
    Membership.objects.create(user=user, tenant=tenant, role="admin")

    rng = random.Random(0)
    start = datetime.now(UTC) - timedelta(days=180)
    names = metric_names()
    link = EvaluationRun.collections.through
    started = time.perf_counter()
    batch_ids: list[str] = []
    # Through the models (bulk_create), so that every column gets its model default: a column added to a model
    # later cannot break this benchmark. Written 50 runs at a time to bound memory at 10,000 runs.
    chunk = 10 * len(LABELS)
    with transaction.atomic():
        for first_of_chunk in range(0, runs, chunk):
            run_objects, results, links = [], [], []
            for first in range(first_of_chunk, min(runs, first_of_chunk + chunk), len(LABELS)):
                batch = uuid.uuid4()
                batch_ids.append(batch.hex)
                moment = start + timedelta(seconds=(first / runs) * 180 * 86400)
                for offset, label in enumerate(LABELS[: runs - first]):
                    skill = 0.4 + 0.1 * offset + rng.uniform(-0.05, 0.05)
                    run = EvaluationRun(
                        tenant=tenant,
                        collection_ids=["docs"],
                        batch_id=batch,
                        kind="retrieval",
                        label=label,
                        config={"label": label},
                        ks=KS,
                        metric_methods=dict.fromkeys(names, "trec_eval"),
                        question_count=len(entries),
                        duration_ms=12.5,
                    )
                    per_question = []
                    for position, entry in enumerate(entries):
                        values = {name: min(1.0, max(0.0, rng.gauss(skill, 0.25))) for name in names}
                        per_question.append(values)
                        ranked = [f"d{rng.randrange(questions)}" for _ in range(10)]
                        results.append(
                            QuestionResult(
                                run=run,
                                position=position,
                                entry_id=entry.pk,
                                entry_key=entry.key,
                                collection_id="docs",
                                question=entry.question,
                                expected={entry.expected_document_ids[0]: 1},
                                first_relevant_rank=rng.choice([1, 2, None]),
                                metrics=values,
                                **QuestionResult.ranked_fields(
                                    list(zip(ranked, np.linspace(10, 1, 10), strict=True))
                                ),
                            )
                        )
                    run.metrics = {name: statistics.fmean(q[name] for q in per_question) for name in names}
                    run_objects.append((run, moment + timedelta(seconds=offset)))
                    links.append(link(evaluationrun_id=run.pk, collection_id=collection.pk))
            EvaluationRun.objects.bulk_create([run for run, _ in run_objects])
            for run, created_at in run_objects:  # auto_now_add stamped them now: spread them over 180 days
                run.created_at = created_at
            EvaluationRun.objects.bulk_update([run for run, _ in run_objects], ["created_at"])
            link.objects.bulk_create(links)
            QuestionResult.objects.bulk_create(results, batch_size=2000)
    print(f"stored {runs:,} runs x {questions} questions in {time.perf_counter() - started:.0f} s")
    return {"batches": batch_ids}


def measure(base: str, paths: dict[str, list[str]], requests: int) -> None:
    """GET each page `requests` times, cycling through its URLs (distinct URLs defeat the pages' caches of
    finished runs, so every request is a first view)."""
    import logging

    import httpx

    logging.getLogger("httpx").setLevel(logging.WARNING)  # no line per request

    with httpx.Client(base_url=base, timeout=60) as client:
        login = client.get("/accounts/login/")
        token = client.cookies.get("csrftoken")
        response = client.post(
            "/accounts/login/",
            data={"username": "bench", "password": "bench-password-123", "csrfmiddlewaretoken": token},
            headers={"Referer": f"{base}/accounts/login/"},
        )
        assert response.status_code in (200, 302) and client.cookies.get("sessionid"), (
            login.status_code,
            response,
        )
        print("| page | requests | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|")
        for name, urls in paths.items():
            for path in urls[-3:]:  # warm: imports, templates, the SQLite page cache (URLs not measured)
                assert client.get(path).status_code == 200, path
            times = []
            for number in range(requests):
                path = urls[number % max(1, len(urls) - 3)]
                started = time.perf_counter()
                response = client.get(path)
                times.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, (path, response.status_code)
            times.sort()
            p95 = times[min(len(times) - 1, int(round(0.95 * len(times))) - 1)]
            print(
                f"| {name}, {len(set(urls[: len(urls) - 3]))} distinct URLs | {requests} | {statistics.median(times):.0f} | {p95:.0f} | {times[-1]:.0f} |"
            )


def wait_ready(server: subprocess.Popen, base: str, log: Path, timeout: float = 60.0) -> None:
    import logging

    import httpx

    logging.getLogger("httpx").setLevel(logging.WARNING)  # no line per request

    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if server.poll() is not None:
            sys.exit(
                f"the server exited (code {server.returncode}):\n{log.read_text(errors='replace')[-3000:]}"
            )
        try:
            httpx.get(f"{base}/healthz", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    sys.exit(f"no answer on {base}/healthz after {timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--port", type=int, help="default: a free port")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the same steps at a tiny size (25 runs x 10 questions, 5 requests)",
    )
    args = parser.parse_args()
    if args.quick:
        args.runs, args.questions, args.requests = 25, 10, 5
    if args.runs < len(LABELS) or args.questions < 1 or args.requests < 1:
        parser.error(f"--runs must be at least {len(LABELS)}, --questions and --requests at least 1")
    with private_django("evalsite-dash-bench-") as data_dir:
        run(args, data_dir)


def run(args: argparse.Namespace, data_dir: str) -> None:
    os.environ.pop("DATABASE_URL", None)  # the temporary SQLite database, whatever the shell says
    info = build(data_dir, args.runs, args.questions)
    port = args.port or free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalsite.settings", "DEBUG": "0", "SECRET_KEY": "bench",
           "ALLOWED_HOSTS": "127.0.0.1", "EVALSITE_DATA_DIR": data_dir}  # fmt: skip
    log = Path(data_dir) / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--insecure"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(server, base, log)
        today = datetime.now(UTC).date()
        count = args.requests + 3
        pages = min(200, -(-args.runs // 50))  # the runs list shows 50 runs a page
        measure(
            base,
            {
                "runs (page n)": [f"/runs/?page={1 + n % pages}" for n in range(count)],
                "compare (5 runs, a new batch each time)": [
                    f"/compare/?batch={batch}" for batch in info["batches"][-count:]
                ],
                "trends (90 days, a new window each time)": [
                    f"/trends/?collection=docs&metric=ndcg%4010&date_from={today - timedelta(days=90 + n)}"
                    f"&date_to={today - timedelta(days=n)}"
                    for n in range(count)
                ],
            },
            args.requests,
        )
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
