"""The demo's figures as one JSON document, to compare two checkouts: every run `manage.py load_demo` stores and
every question result, with ids, timings and fingerprints of ids left out, keys sorted. A reshaping of the code
must leave it byte for byte the same.

    .venv/bin/python benchmarks/demo_figures.py > after.json
    git worktree add /tmp/before <commit>
    .venv/bin/python benchmarks/demo_figures.py --checkout /tmp/before > before.json
    cmp before.json after.json

Each checkout loads the demo into a data directory of its own (a temporary one), offline and inline (no worker).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Differ between two loads of the same data: primary keys, entry ids, times, and digests that include them.
VOLATILE = re.compile(r"(^id$|entry_id|batch_id|_ms$|_at$|fingerprint|uid$|seconds|version_key|path)")

DUMP = r"""
import json, sys
import django
django.setup()
from evaluation.models import EvaluationRun, QuestionResult
runs = []
for run in EvaluationRun.objects.order_by("created_at", "label"):
    row = {f.name: getattr(run, f.name) for f in run._meta.concrete_fields if not f.is_relation}
    row["questions"] = [
        {f.name: getattr(q, f.name) for f in q._meta.concrete_fields if not f.is_relation}
        for q in QuestionResult.objects.filter(run=run).order_by("pk")
    ]
    runs.append(row)
json.dump(runs, sys.stdout, default=str)
"""


def stable(value):
    """The value without the keys that differ between two loads of the same data."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if not VOLATILE.search(k)}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def figures(checkout: Path) -> list:
    with tempfile.TemporaryDirectory(prefix="demo-figures-") as data:
        env = {
            **os.environ,
            "EVALSITE_DATA_DIR": data,
            "EVALSITE_Q_SYNC": "1",
            "DJANGO_SETTINGS_MODULE": "evalsite.settings",
            "PYTHONPATH": str(checkout),
        }
        env.pop("DATABASE_URL", None)
        env.pop("EVALSITE_REDIS_URL", None)
        manage = [sys.executable, "manage.py"]
        for command in (["migrate", "-v0"], ["load_demo"]):
            subprocess.run([*manage, *command], cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL)
        dumped = subprocess.run(
            [sys.executable, "-c", DUMP], cwd=checkout, env=env, check=True, capture_output=True, text=True
        )
    return stable(json.loads(dumped.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--checkout", type=Path, default=ROOT, help="the checkout whose demo to load (this one)"
    )
    args = parser.parse_args()
    runs = figures(args.checkout.resolve())
    json.dump(runs, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    questions = sum(len(run["questions"]) for run in runs)
    print(f"{len(runs)} runs, {questions} question results", file=sys.stderr)


if __name__ == "__main__":
    main()
