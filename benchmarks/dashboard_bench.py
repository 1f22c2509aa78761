"""Dashboard pages under 10,000 stored runs (issue 4's figures): p50 / p95 of the runs page, a compare of 5 runs
and the trends page, measured over HTTP on loopback against a real server process.

    .venv/bin/python benchmarks/dashboard_bench.py [--runs 10000] [--questions 200] [--requests 60]

Builds a temporary SQLite database (one collection, `--questions` golden entries, `--runs` runs of
`--questions` question results each, spread over 180 days across 5 configuration labels, batches of 5), starts
`manage.py runserver --noreload` on it, logs in as a member, warms each page, then times `--requests`
sequential GETs per page with httpx (one client, keep-alive) and prints the latency distribution.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LABELS = ["fulltext", "fulltext okapi", "vector lsi", "hybrid rrf", "hybrid rrf + rerank"]
KS = [1, 5, 10]


def metric_names() -> list[str]:
    return [f"recall@{k}" for k in KS] + [f"ndcg@{k}" for k in KS] + ["mrr"]


def build(data_dir: str, runs: int, questions: int) -> dict:
    os.environ.update(
        {"DJANGO_SETTINGS_MODULE": "evalsite.settings", "DEBUG": "1", "EVALSITE_DATA_DIR": data_dir}
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection, transaction

    from evaluation.models import EvaluationRun, QuestionResult
    from goldenset import services
    from goldenset.models import Membership

    call_command("migrate", verbosity=0)
    tenant = services.tenant_get_or_create(cluster_slug="bench", tenant_slug="bench")
    collection = services.collection_create(tenant=tenant, slug="docs")
    services.documents_upsert(
        collection=collection,
        documents=[
            services.DocumentInput.from_text(id=f"d{i}", text=f"document {i} text") for i in range(questions)
        ],
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
    Membership.objects.create(user=user, tenant=tenant)

    rng = random.Random(0)
    start = datetime.now(UTC) - timedelta(days=180)
    names = metric_names()
    run_table = EvaluationRun._meta.db_table
    result_table = QuestionResult._meta.db_table
    m2m_table = EvaluationRun.collections.through._meta.db_table
    started = time.perf_counter()
    batch_ids: list[str] = []
    with transaction.atomic(), connection.cursor() as cursor:
        for first in range(0, runs, len(LABELS)):
            batch = uuid.uuid4().hex
            batch_ids.append(batch)
            moment = start + timedelta(seconds=(first / runs) * 180 * 86400)
            run_rows, result_rows, links = [], [], []
            for offset, label in enumerate(LABELS[: runs - first]):
                run_id = uuid.uuid4().hex
                skill = 0.4 + 0.1 * offset + rng.uniform(-0.05, 0.05)
                per_question = []
                for position, entry in enumerate(entries):
                    values = {name: min(1.0, max(0.0, rng.gauss(skill, 0.25))) for name in names}
                    per_question.append(values)
                    ranked = [f"d{rng.randrange(questions)}" for _ in range(10)]
                    result_rows.append(
                        (
                            run_id, position, entry.pk.hex, entry.key, "docs", entry.question,
                            json.dumps({entry.expected_document_ids[0]: 1}), "\n".join(ranked),
                            np.linspace(10, 1, 10).tobytes(), rng.choice([1, 2, None]), json.dumps([]),
                            json.dumps(values), "", "", "[]", "[]",
                        )
                    )  # fmt: skip
                means = {name: statistics.fmean(q[name] for q in per_question) for name in names}
                run_rows.append(
                    (
                        run_id, tenant.pk, json.dumps(["docs"]), batch, "retrieval", label,
                        json.dumps({"label": label}), json.dumps(KS), json.dumps(means),
                        json.dumps(dict.fromkeys(names, "trec_eval")), "", len(entries), "[]", "", "{}", 12.5,
                        None, (moment + timedelta(seconds=offset)).strftime("%Y-%m-%d %H:%M:%S.%f"),
                    )
                )  # fmt: skip
                links.append((run_id, collection.pk))
            cursor.executemany(
                f"INSERT INTO {run_table} (id, tenant_id, collection_ids, batch_id, kind, label, config, ks, metrics,"
                " metric_methods, mode, question_count, warnings, golden_fingerprint, index_info, duration_ms,"
                " job_id, created_at) VALUES (" + ", ".join(["%s"] * 18) + ")",
                run_rows,
            )
            cursor.executemany(
                f"INSERT INTO {m2m_table} (evaluationrun_id, collection_id) VALUES (%s, %s)", links
            )
            cursor.executemany(
                f"INSERT INTO {result_table} (run_id, position, entry_id, entry_key, collection_id, question,"
                " expected, ranked_ids, ranked_scores, first_relevant_rank, missing_document_ids, metrics,"
                " diagnosis, answer, citations, warnings) VALUES (" + ", ".join(["%s"] * 16) + ")",
                result_rows,
            )
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    data_dir = tempfile.mkdtemp(prefix="evalsite-dash-bench-")
    info = build(data_dir, args.runs, args.questions)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalsite.settings", "DEBUG": "0", "SECRET_KEY": "bench",
           "ALLOWED_HOSTS": "127.0.0.1", "EVALSITE_DATA_DIR": data_dir}  # fmt: skip
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{args.port}", "--noreload", "--insecure"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{args.port}"
        for _ in range(100):
            try:
                import httpx

                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        today = datetime.now(UTC).date()
        count = args.requests + 3
        measure(
            base,
            {
                "runs (page n)": [f"/runs/?page={1 + n % 200}" for n in range(count)],
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
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
