"""Raters judging one pool at once against the production server (issue 26): no error, no judgment lost or
doubled, no item given to more raters than the pool asks for, none twice to one rater.

    .venv/bin/python benchmarks/judging_load.py [--raters 10] [--seconds 60] [--raters-per-item 2]
                                                [--backend sqlite|postgres] [--order adaptive|fixed|both]
                                                [--quick]

Sets up the demo as `scripts/run` does (migrate, load_demo) in a temporary data directory, on SQLite or on a new
PostgreSQL database with a Redis broker, starts `manage.py serve` (DEBUG off) on a free port, makes a pool of
the demo's retrieval runs at depth 10 over REST, then runs `--raters` threads for `--seconds`, each a rater with
a client and a key of its own (a person, rater-NN, with a rater key): GET .../next, then POST its grade of that item, again and again, until the time is up
or nothing is left for it. Afterwards it reads every judgment back over REST and checks, against what the
clients sent and were told: every judgment answered 201 is stored once, with the grade sent; no rater was given
an item twice; no item went to more raters than the pool asks for; no request answered 5xx or 4xx; the server's
log holds no traceback. `--order` is the pool's (adaptive, the default, or fixed); `both` runs the drill once for
each, one after the other, each on a fresh data directory and server. Exits 1 when a check fails. `--quick` runs 4 raters for 5 s on a demo of a few
questions (benchmarks/load_bench.py's quick demo).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_django import free_port  # noqa: E402
from load_bench import (  # noqa: E402
    COLLECTION,
    Server,
    manage,
    postgres_database,
    quick_demo,
    redis_database,
    server_environment,
    server_log_findings,
)


class Rater(threading.Thread):
    def __init__(self, name: str, base: str, key: str, pool_id: str, until: float, seed: int) -> None:
        super().__init__(name=name, daemon=True)
        # a person judging through a key of their own: stored as the rater user:<name>
        self.rater, self.base, self.pool_id, self.until = f"user:{name}", base, pool_id, until
        self.client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        self.rng = random.Random(seed)
        self.given: list[tuple[str, str]] = []  # items handed to this rater, in order
        self.sent: dict[tuple[str, str], int | None] = {}  # judgments answered 201
        self.statuses: Counter[int] = Counter()
        self.latencies: list[float] = []
        self.failures: list[str] = []

    def call(self, method: str, path: str, **kwargs) -> httpx.Response:
        started = time.perf_counter()
        response = self.client.request(method, path, **kwargs)
        self.latencies.append((time.perf_counter() - started) * 1000)
        self.statuses[response.status_code] += 1
        if response.status_code >= 400 and len(self.failures) < 5:
            self.failures.append(f"{method} {path}: {response.status_code} {response.text[:200]}")
        return response

    def run(self) -> None:
        try:
            while time.monotonic() < self.until:
                answer = self.call("GET", f"/lmkit/v1/search/judgments/pools/{self.pool_id}/next")
                if answer.status_code != 200:
                    continue
                item = answer.json()["item"]
                if item is None:
                    return
                pair = (item["question_id"], item["document_id"])
                if not self.given or self.given[-1] != pair:
                    self.given.append(pair)
                # A grade of the collection's scale, as the workspace offers them (`next` names it), or none.
                scale = [int(g) for g in answer.json()["grades"]]
                grade = self.rng.choice([*scale, None])
                body = {
                    "collection_id": COLLECTION,
                    "pool_id": self.pool_id,
                    "judgments": [{"question_id": pair[0], "document_id": pair[1], "grade": grade}],
                }
                if self.call("POST", "/lmkit/v1/search/judgments", json=body).status_code == 201:
                    self.sent[pair] = grade
        except (
            httpx.HTTPError
        ) as exc:  # a dropped connection is a failure to report, not a crash of the drill
            self.failures.append(f"{type(exc).__name__}: {exc}")
        finally:
            self.client.close()


def read_back(base: str, key: str, pool_id: str) -> list[dict]:
    rows, page = [], 1
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        while True:
            answer = client.get("/lmkit/v1/search/judgments",
                                params={"collection_id": COLLECTION, "pool_id": pool_id, "page": page,
                                        "page_size": 1000})  # fmt: skip
            answer.raise_for_status()
            body = answer.json()
            rows += body["results"]
            if not body.get("next"):
                return rows
            page += 1


# Raters are people: each judges through a key of their own (a rater's key, with its person).
RATER_KEYS = """
from django.contrib.auth import get_user_model
from evalsite.tenancy.models import Membership, Tenant
from evalsite.tenancy.services import api_key_create
tenant = Tenant.objects.get(cluster__slug="demo", slug="demo")
for n in range({count}):
    user, _ = get_user_model().objects.get_or_create(username=f"rater-{{n:02d}}")
    Membership.objects.get_or_create(user=user, tenant=tenant, defaults={{"role": "rater"}})
    _, secret = api_key_create(tenant=tenant, role="rater", user=user, name=user.username, actor="command:bench")
    print(user.username, secret)
"""


def rater_keys(env: dict[str, str], count: int) -> dict[str, str]:
    """{rater name: the secret of their key}, made in the demo tenant."""
    printed = manage(env, "shell", "-c", RATER_KEYS.format(count=count))
    return dict(line.split(" ", 1) for line in printed.splitlines() if line.startswith("rater-"))


def drill(args: argparse.Namespace, stack: contextlib.ExitStack) -> list[str]:
    data_dir = Path(tempfile.mkdtemp(prefix="evalsite-judging-"))
    stack.callback(shutil.rmtree, data_dir, ignore_errors=True)
    port = free_port()
    env = server_environment(data_dir, f"127.0.0.1:{port}", argparse.Namespace(processes=None, threads=None))
    if args.backend == "postgres":
        env["DATABASE_URL"] = stack.enter_context(postgres_database(args.postgres_url, 7))
        env["EVALSITE_REDIS_URL"] = stack.enter_context(redis_database(args.redis_url))
    manage(env, "migrate", "--noinput")
    manage(env, "collectstatic", "--noinput", "-v0")
    if args.quick:
        folder = quick_demo(data_dir / "quick-demo")
        manage(env, "import_beir", str(folder), "--cluster", "demo", "--tenant", "demo",
               "--collection", COLLECTION, "--name", "ClapNQ")  # fmt: skip
    manage(env, "load_demo")
    key = (data_dir / "demo_api_key").read_text().strip()
    base = f"http://127.0.0.1:{port}"
    server = Server("serve", env, data_dir / "server.log")
    stack.callback(server.stop)
    server.start(f"127.0.0.1:{port}")
    server.wait_ready(base)
    headers = {"Authorization": f"Bearer {key}"}
    runs = httpx.get(f"{base}/lmkit/v1/search/evaluate/runs", params={"collection_id": COLLECTION,
                     "kind": "retrieval"}, headers=headers, timeout=60).json()["results"]  # fmt: skip
    made = httpx.post(f"{base}/lmkit/v1/search/judgments/pools", headers=headers, timeout=120,
                      json={"collection_id": COLLECTION, "run_ids": [r["run_id"] for r in runs], "depth": 10,
                            "raters_per_item": args.raters_per_item, "order": args.order})  # fmt: skip
    made.raise_for_status()
    pool = made.json()
    print(f"## {args.backend}, {args.order} order: a pool of {pool['items']:,} documents from {len(runs)} runs, "
          f"{args.raters_per_item} raters each; {args.raters} raters for {args.seconds:.0f} s\n")  # fmt: skip
    until = time.monotonic() + args.seconds
    keys = rater_keys(env, args.raters)
    raters = [Rater(name, base, keys[name], pool["pool_id"], until, n) for n, name in enumerate(keys)]
    started = time.perf_counter()
    for rater in raters:
        rater.start()
    for rater in raters:
        rater.join(args.seconds + 120)
    elapsed = time.perf_counter() - started
    stored = read_back(base, key, pool["pool_id"])
    stopped = server.stop()

    sent = {(r.rater, *pair): grade for r in raters for pair, grade in r.sent.items()}
    kept = Counter((row["rater"], row["question_id"], row["document_id"]) for row in stored)
    grades = {(row["rater"], row["question_id"], row["document_id"]): row["grade"] for row in stored}
    statuses = sum((r.statuses for r in raters), Counter())
    latencies = sorted(ms for r in raters for ms in r.latencies)
    per_item = Counter(pair for r in raters for pair in set(r.given))
    checks = {
        "every request answered 2xx": all(code < 400 for code in statuses),
        "every judgment answered 201 stored once, with its grade": all(kept[k] == 1 and grades[k] == g
                                                                       for k, g in sent.items()),
        "nothing stored that no client was told was stored": set(kept) == set(sent),
        "no rater given an item twice": all(len(r.given) == len(set(r.given)) for r in raters),
        f"no item given to more than {args.raters_per_item} raters": max(per_item.values(), default=0)
        <= args.raters_per_item,
        "no traceback in the server's log": "0 traceback(s)" in server_log_findings(server.log_path),
    }  # fmt: skip
    print("| raters | judgments stored | requests | per second | p50 ms | p95 ms | statuses |")
    print("|---|---|---|---|---|---|---|")
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan")
    print(f"| {args.raters} | {len(stored):,} | {len(latencies):,} | {len(latencies) / elapsed:.0f} | "
          f"{statistics.median(latencies) if latencies else float('nan'):.0f} | {p95:.0f} | "
          f"{dict(sorted(statuses.items()))} |\n")  # fmt: skip
    failed = []
    for check, passed in checks.items():
        print(f"{check}: {'yes' if passed else 'NO'}")
        if not passed:
            failed.append(check)
    for rater in raters:
        for failure in rater.failures:
            print(f"  {rater.rater}: {failure}")
    print(f"\n{server_log_findings(server.log_path)}; the server stopped in {stopped.seconds:.1f} s")
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raters", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--raters-per-item", type=int, default=2)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379")
    parser.add_argument("--order", choices=["adaptive", "fixed", "both"], default="adaptive")
    parser.add_argument("--quick", action="store_true", help="4 raters for 5 s on a small demo")
    args = parser.parse_args()
    if args.quick:
        args.raters, args.seconds = 4, 5.0
    failed = []
    for order in ("adaptive", "fixed") if args.order == "both" else (args.order,):
        with contextlib.ExitStack() as stack:
            failed += drill(argparse.Namespace(**{**vars(args), "order": order}), stack)
    if failed:
        sys.exit(f"failed: {'; '.join(failed)}")


if __name__ == "__main__":
    main()
