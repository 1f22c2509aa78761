"""Work spread over the workers (issue 42, part 4): the wall time of a 100-trial study and of a 6-configuration
evaluation with 2 worker processes against 1, on PostgreSQL + Redis, and whether the spread results are the
serial ones.

    .venv/bin/python benchmarks/wide_bench.py [--postgres-url postgres://postgres@127.0.0.1:5432]
        [--redis-url redis://127.0.0.1:6379[/DB]] [--dataset ../shared/datasets/cranfield] [--rounds 1] [--quick]

What runs, as a deployment runs it: a fresh database evalsite_wide_<pid> on the PostgreSQL server, the Redis
database given (emptied before and after; without one, an empty one of the server's 1-12, as load_bench takes
it), a temporary data directory; `migrate`, then the dataset imported
(import_beir: Cranfield's 1,400 documents and 225 questions by default) and its index built once (by a first
evaluation in this process, published to the database as every machine finds it). Then, for 1 and for 2 worker
processes, one `manage.py worker` cluster with EVALSITE_WORKERS set to that, waited for until each process beats, and
two jobs, each timed from its creation to its end (what a user waits for, queueing and every worker's first
load of the index included):
- **study**: a grid study of 100 points (FullText with the proximity reranker; BM25 k1 x b, 10 x 10), seed 7,
  tuned on 80% of the questions (`confirm_share` 0.2):
  with one worker it runs its trials in its one job, with two it spreads them (evaluation.studies.parallel);
- **evaluation**: 6 configurations (BM25 k1 and b varied, reranked) of the whole golden set: one child job per
  configuration either way (evaluation.retrieval.config_jobs), taken by one worker or by two.
`--rounds R` repeats the pair R times, alternating which goes first; the median is reported. Printed: each wall
time, the ratio 1 worker / 2 workers (the issue's goal: at least 1.7), the CPU time the workers used over the
pair's wall time (how many cores they had: another load on a shared machine takes its share) and the load average,
the mean seconds of a trial and of a configuration (the work each worker does between two jobs' overheads), and
the checks: the grid's trials and
winner identical with 1 and 2 workers; the 6 runs' metrics identical. Exit 1 when a check fails.

`--quick` runs the same steps at a tiny size (a 12-point grid, 2 configurations, 40 questions of the demo's
ClapNQ) to keep the code path alive; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import load_bench  # noqa: E402  (its empty Redis database)

DATASETS = ROOT.parent / "shared" / "datasets"
GRID_SPACE = {
    "bm25_k1": {"low": 0.3, "high": 3.0, "step": 0.3},  # 10 points
    "bm25_b": {"low": 0.1, "high": 1.0, "step": 0.1},  # 10 points
}
QUICK_SPACE = {
    "bm25_k1": {"low": 0.5, "high": 2.0, "step": 0.5},
    "bm25_b": {"low": 0.25, "high": 0.75, "step": 0.25},
}
BASE = {"search_type": "FullText", "rerank": "proximity"}
# The study tunes on 80% of the questions (Cranfield: 180), so that a trial's work dominates what Optuna's RDB
# storage costs a trial of a spread study (about 60 statements, 40-80 ms on this machine's PostgreSQL).
CONFIRM_SHARE = 0.2


def _configs(n: int) -> list[dict]:
    return [
        {"label": f"k1 {0.6 + 0.4 * i:.1f} b {0.3 + 0.1 * i:.1f}", **BASE, "bm25_k1": round(0.6 + 0.4 * i, 1),
         "bm25_b": round(0.3 + 0.1 * i, 1)}
        for i in range(n)
    ]  # fmt: skip


def _env(args, data_dir: Path, database: str) -> dict[str, str]:
    server = urlsplit(args.postgres_url)
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("EVALSITE_", "DATABASE_"))},
        "DJANGO_SETTINGS_MODULE": "evalsite.settings",
        "DATABASE_URL": f"{server.scheme}://{server.netloc}/{database}",
        "EVALSITE_REDIS_URL": args.redis_url,
        "EVALSITE_DATA_DIR": str(data_dir),
        "SECRET_KEY": "wide-bench-" + "x" * 40,
        "DEBUG": "0",
        "EVALSITE_JOB_HEARTBEAT_SECONDS": "2",
        "EVALSITE_JOB_STALE_SECONDS": "10",
    }


@contextlib.contextmanager
def _cluster(env: dict[str, str], workers: int, log: Path):
    """`manage.py worker` with `workers` processes, in a process group of its own; stopped with SIGTERM."""
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "worker"], cwd=ROOT, env={**env, "EVALSITE_WORKERS": str(workers)},
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _wait_for_workers(count: int, timeout: float = 120.0) -> None:
    from evalsite.jobs.fan_out import workers_alive  # late: Django is set up in main()

    deadline = time.monotonic() + timeout
    while workers_alive() < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"{count} worker process(es) did not beat within {timeout:.0f} s")
        time.sleep(0.2)


def _wait_for_job(job_id, timeout: float = 3600.0) -> float:
    """Seconds from the job's creation to its end (raises when it did not complete)."""
    from evalsite.jobs.models import Job  # late: Django is set up in main()

    deadline = time.monotonic() + timeout
    while True:
        job = Job.objects.get(pk=job_id)
        if job.status in Job.FINISHED:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job_id} did not end within {timeout:.0f} s")
        time.sleep(0.1)
    if job.status != "Completed":
        raise SystemExit(f"job {job_id} ({job.kind}) ended {job.status}: {job.error}")
    assert job.finished_at is not None
    return (job.finished_at - job.created_at).total_seconds()


def _timeline(job_id) -> None:
    """When a job's children started and ended, and when it ended, in seconds from its creation."""
    from evalsite.jobs.models import Job  # late: Django is set up in main()

    job = Job.objects.get(pk=job_id)
    children = list(Job.objects.filter(parent=job).order_by("position"))
    if not children:
        return

    def at(moment) -> str:
        return f"{(moment - job.created_at).total_seconds():.1f}"

    parts = ", ".join(f"{at(c.started_at)}-{at(c.finished_at)}" for c in children)
    print(f"  {job.kind} job: children ran {parts} s; it ended at {at(job.finished_at)} s")


def _study(tenant, collection, space: dict, trials: int) -> tuple[float, list, dict, float]:
    """(wall s, the trials, the winner, mean s of a trial) of a grid study run by the workers."""
    from evaluation.models import Study  # late: Django is set up in main()
    from evaluation.studies.services import study_create

    raw = {"base": BASE, "space": space, "sampler": "grid", "budget": {"trials": trials}, "seed": 7}
    raw["confirm_share"] = CONFIRM_SHARE
    study = study_create(tenant=tenant, collection=collection, raw=raw, actor="bench")
    seconds = _wait_for_job(study.job_id)
    _timeline(study.job_id)
    study = Study.objects.get(pk=study.pk)
    trial_rows = [(t["number"], t["values"], t["value"]) for t in study.trials]
    return seconds, trial_rows, study.best, statistics.mean(t["seconds"] for t in study.trials)


def _evaluation(tenant, collection, configs: list[dict]) -> tuple[float, dict, float]:
    """(wall s, label -> metrics, mean s of a configuration's searches) of an evaluation run by the workers."""
    from evaluation.models import EvaluationRun  # late: Django is set up in main()
    from evaluation.reports.batch_jobs import batch_job_create
    from evaluation.retrieval.request import RetrievalRequest

    request = RetrievalRequest.from_job_input({"ks": [10, 100], "configs": configs})
    job = batch_job_create(tenant=tenant, collections=[collection], request=request, actor="bench")
    seconds = _wait_for_job(job.pk)
    _timeline(job.pk)
    runs = EvaluationRun.objects.filter(job=job)
    per_config = statistics.mean(r.index_info["search_ms"] / 1000 for r in runs)
    return seconds, {r.label: r.metrics for r in runs}, per_config


def _setup(dataset: Path, quick: bool):
    """The tenant, the collection imported from `dataset`, its index built and published."""
    from django.core.management import call_command  # late: Django is set up in main()

    from evalsite.tenancy.services import tenant_get_or_create
    from evaluation.configs import parse_configs
    from evaluation.retrieval.evaluate import evaluate_retrieval
    from evaluation.retrieval.read_path import available_rerankers
    from goldenset.beir_import import beir_import
    from goldenset.models import Collection, GoldenEntry

    call_command("migrate", verbosity=0)
    tenant = tenant_get_or_create(cluster_slug="bench", tenant_slug="wide")
    beir_import(folder=dataset, tenant=tenant, collection_id="bench", actor="bench")
    collection = Collection.objects.get(tenant=tenant, slug="bench")
    if quick:  # a few questions: the code path, not the figures
        keep = list(
            GoldenEntry.objects.filter(collection=collection).order_by("pk").values_list("pk", flat=True)[:40]
        )
        GoldenEntry.objects.filter(collection=collection).exclude(pk__in=keep).delete()
    evaluate_retrieval(
        tenant=tenant, collections=[collection], ks=[10],
        configs=parse_configs([{"label": "warm", "search_type": "FullText"}], available_rerankers()),
    )  # fmt: skip
    return tenant, collection


def _measure(args, env, work: Path, tenant, collection) -> dict:
    space, trials = (QUICK_SPACE, 12) if args.quick else (GRID_SPACE, 100)
    configs = _configs(2 if args.quick else 6)
    found: dict = {}
    for round_ in range(args.rounds):
        for workers in (1, 2) if round_ % 2 == 0 else (2, 1):
            with _cluster(env, workers, work / f"worker-{workers}-{round_}.log") as cluster:
                _wait_for_workers(workers)
                before = _group_cpu(cluster.pid)
                study = _study(tenant, collection, space, trials)
                evaluation = _evaluation(tenant, collection, configs)
                cpu = _group_cpu(cluster.pid) - before
            _forget_workers()
            found.setdefault(workers, []).append((study, evaluation))
            print(
                f"round {round_ + 1}, {workers} worker(s): study {study[0]:.1f} s, evaluation {evaluation[0]:.1f} s; "
                f"the workers' CPU {cpu:.0f} s: {cpu / (study[0] + evaluation[0]):.2f} cores on average; load "
                f"average now {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)"
            )
    return found


def _group_cpu(pgid: int) -> float:
    """CPU seconds (user + system) the live processes of a process group have used (/proc/<pid>/stat)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _forget_workers() -> None:
    from evalsite.jobs.models import Worker  # late: Django is set up in main()

    Worker.objects.all().delete()  # a stopped cluster's rows (gone already when it stopped cleanly)


def _report(found: dict, trials: int, configs: int) -> int:
    def median(workers: int, part: int) -> float:
        return statistics.median(run[part][0] for run in found[workers])

    rows = [("study", f"{trials}-trial grid", 0), ("evaluation", f"{configs} configurations", 1)]
    print("\n| work | 1 worker (s) | 2 workers (s) | 1 / 2 |")
    print("|---|---|---|---|")
    for name, what, part in rows:
        one, two = median(1, part), median(2, part)
        print(f"| {name}, {what} | {one:.1f} | {two:.1f} | {one / two:.2f}x |")
    trial_s = statistics.mean(run[0][3] for runs in found.values() for run in runs)
    config_s = statistics.mean(run[1][2] for runs in found.values() for run in runs)
    print(f"\nmean seconds of a trial: {trial_s:.2f}; of a configuration's searches: {config_s:.2f}")
    (one_study, one_eval), (two_study, two_eval) = found[1][0], found[2][0]
    same_grid = one_study[1] == two_study[1] and one_study[2] == two_study[2]
    same_runs = one_eval[1] == two_eval[1]
    print(f"grid study, seed 7: same trials and winner with 1 and 2 workers: {'yes' if same_grid else 'NO'}")
    print(
        f"evaluation: same metrics for every configuration with 1 and 2 workers: {'yes' if same_runs else 'NO'}"
    )
    return 0 if same_grid and same_runs else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379")
    parser.add_argument("--dataset", type=Path, default=DATASETS / "cranfield")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    dataset = ROOT / "demo" / "clapnq" if args.quick else args.dataset
    database = f"evalsite_wide_{os.getpid()}"
    server = urlsplit(args.postgres_url)
    admin = f"{server.scheme}://{server.netloc}/postgres"
    work = Path(tempfile.mkdtemp(prefix="evalsite-wide-bench-"))
    subprocess.run(["psql", admin, "-qc", f"CREATE DATABASE {database}"], check=True)
    with contextlib.ExitStack() as stack:
        if urlsplit(args.redis_url).path.strip("/"):  # a database named: emptied before and after
            subprocess.run(
                ["redis-cli", "-u", args.redis_url, "FLUSHDB"], check=True, stdout=subprocess.DEVNULL
            )
            stack.callback(
                subprocess.run, ["redis-cli", "-u", args.redis_url, "FLUSHDB"], stdout=subprocess.DEVNULL
            )
        else:  # a server: an empty database of it, as the load benchmark takes one
            args.redis_url = stack.enter_context(load_bench.redis_database(args.redis_url.rstrip("/")))
        env = _env(args, work, database)
        os.environ.update(env)
        try:
            import django  # late: the environment above is the settings'

            django.setup()
            tenant, collection = _setup(dataset, args.quick)
            found = _measure(args, env, work, tenant, collection)
            return _report(found, 12 if args.quick else 100, 2 if args.quick else 6)
        finally:
            from django.db import connections  # late: as above

            connections.close_all()
            subprocess.run(["psql", admin, "-qc", f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"])
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
