"""Calibration at scale: `--labels` human labels (half statement labels of faithfulness, half question labels,
two raters each) of a synthetic collection's golden set, imported in one call, then the calibration report
built cold (the heuristic scoring every labelled item now, the measures) and warm (the process's cache: what
an answer run's page reads for the figure beside each metric), on one temporary SQLite database.

    .venv/bin/python benchmarks/calibration_bench.py [--labels 10000] [--quick]

Printed: the import's wall time, the report's cold and warm times, and the report's n and AUC (exit 1 unless
every item was scored or left out as an even split). `--quick`: 200 labels.
"""

from __future__ import annotations

import argparse
import sys
import time

from answers_bench import golden_entries
from bench_django import private_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.labels = 200
    with private_django("evalsite-calibration-bench-"):
        sys.exit(run(args.labels))


def label_rows(n: int) -> list[tuple[str, dict]]:
    """n label rows over n / 4 entries: per entry a true and a false statement of its reference sentence (the
    year, city or product changed), each labelled by two raters, who disagree on one item in ten."""
    rows = []
    entries = golden_entries(max(1, n // 4))
    for i, (_, document_id, sentence) in enumerate(entries):
        passages = [{"document_id": document_id, "title": document_id, "text": sentence}]
        false = sentence.replace("18", "17").replace("in ", "in North ").replace("of ", "of used ")
        for truth, statement in ((True, sentence), (False, false)):
            for rater in ("ann", "bob"):
                flip = rater == "bob" and i % 10 == 0
                label = "supported" if truth != flip else "not supported"
                row = {"question_id": f"q{i}", "rater": rater, "metric": "faithfulness", "label": label,
                       "statement": statement, "passages": passages}  # fmt: skip
                rows.append((f"line {len(rows) + 1}", row))
    return rows[:n]


def run(n: int) -> int:
    from evalsite.tenancy.services import tenant_get_or_create
    from evaluation.judgments import calibration
    from evaluation.judgments.label_import import labels_import
    from evaluation.judgments.labels import read_rows
    from goldenset import services
    from goldenset.services import EntryInput

    tenant = tenant_get_or_create(cluster_slug="bench", tenant_slug="bench")
    collection = services.collection_create(tenant=tenant, slug="companies", actor="bench")
    entries = golden_entries(max(1, n // 4))
    services.golden_entries_add(
        collection=collection,
        entries=[
            EntryInput(question=q, key=f"q{i}", reference_answer=r) for i, (q, _, r) in enumerate(entries)
        ],
        actor="bench",
    )
    rows = read_rows(label_rows(n))
    started = time.perf_counter()
    summary = labels_import(tenant=tenant, collection=collection, rows=rows, actor="bench")
    imported = time.perf_counter() - started
    started = time.perf_counter()
    report = calibration.calibration_report(collection=collection)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(10):
        calibration.calibration_report(collection=collection)
    warm = (time.perf_counter() - started) / 10
    (row,) = report["judges"]
    print(f"{summary['labels']:,} labels ({len(report['raters'])} raters, {report['items']:,} items)")
    print(f"import: {imported:.2f} s")
    print(f"report, cold (every item scored by the heuristic now): {cold:.2f} s")
    print(f"report, warm (cached until a label or threshold changes): {warm * 1000:.1f} ms")
    print(f"heuristic {row['metric']} ({row['level']}): n {row['n']:,}, AUC {row['auc']:.3f}")
    agreement = report["agreement"][0]
    print(f"raters' alpha {agreement['krippendorff_alpha']}, items split evenly {agreement['tied_items']:,}")
    return 0 if row["n"] + agreement["tied_items"] == report["items"] else 1


if __name__ == "__main__":
    main()
