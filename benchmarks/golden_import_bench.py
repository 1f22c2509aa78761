"""Importing a large golden set (issue 14's "50,000 entries import in one transaction within the request limits"):
`goldenset.importers.golden_import` of a CSV of `--entries` entries into a collection of 1,000 documents, on a
temporary SQLite database: the dry run (the dashboard's preview), the import, and the same file again (every
entry unchanged), each timed as one call, with the request time limit (EVALSITE_REQUEST_TIMEOUT) beside them.

    .venv/bin/python benchmarks/golden_import_bench.py [--entries 50000] [--format csv] [--quick]

Checks the counts (all created, then all unchanged, and nothing written by the dry run); exits 1 otherwise.
`--quick`: 500 entries.
"""

from __future__ import annotations

import argparse
import sys
import time

from bench_django import private_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=50_000)
    parser.add_argument("--format", default="csv", help="any golden-set format (the file is written in it)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.entries = 500
    with private_django("evalsite-golden-import-"):
        sys.exit(run(args))


def run(args) -> int:
    from django.conf import settings

    from evalsite.tenancy.services import tenant_get_or_create
    from goldenset import importers, services
    from goldenset.formats import Entry, write_entries
    from goldenset.models import GoldenEntry

    tenant = tenant_get_or_create(cluster_slug="bench", tenant_slug="bench")
    collection = services.collection_create(tenant=tenant, slug="c", actor="bench")
    services.documents_upsert(
        collection=collection,
        documents=[
            services.DocumentInput.from_text(id=f"d{i}", title="", text=f"page {i}") for i in range(1000)
        ],
        actor="bench",
    )
    entries = [
        Entry(
            question=f"question number {i} about the subject",
            key=f"k{i}",
            expected_document_ids=(f"d{i % 1000}",),
            reference_answer=f"answer {i}",
            tags=("bench",),
        )  # fmt: skip
        for i in range(args.entries)
    ]
    written = write_entries(args.format, entries, name="bench")
    files = list(written.files.values())
    data, qrels = files[0].encode(), (files[1].encode() if len(files) > 1 else None)
    rows = []
    failures = []
    for step, dry_run, expect in (("dry run (preview)", True, "created"), ("import", False, "created"),
                                  ("the same file again", False, "unchanged")):  # fmt: skip
        started = time.perf_counter()
        result = importers.golden_import(
            collection=collection, fmt=args.format, data=data, qrels=qrels, actor="bench", dry_run=dry_run
        )
        seconds = time.perf_counter() - started
        rows.append((step, seconds, result))
        if result[expect] != args.entries:
            failures.append(f"{step}: {result[expect]} {expect}, expected {args.entries}")
        if dry_run and GoldenEntry.objects.exists():
            failures.append("the dry run wrote entries")
    size = len(data) + len(qrels or b"")
    print(f"# {args.entries:,} entries, {args.format}, {size / 2**20:.1f} MiB; one call each, SQLite\n")
    print("| step | seconds | created / updated / unchanged |\n|---|---|---|")
    for step, seconds, result in rows:
        print(
            f"| {step} | {seconds:.1f} | {result['created']} / {result['updated']} / {result['unchanged']} |"
        )
    print(f"\nthe request time limit (EVALSITE_REQUEST_TIMEOUT): {settings.EVALSITE_REQUEST_TIMEOUT} s")
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    main()
