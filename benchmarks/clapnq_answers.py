"""Groundedness on ClapNQ, offline (the issue's figure: "a stricter groundedness level must raise refusal recall
without raising the false-refusal rate as much; show both numbers"): answer evaluation of FullText and Hybrid,
each at groundedness Off, Low, Medium and High, with the extractive answer and the heuristic judge.

    .venv/bin/python benchmarks/clapnq_answers.py [--dataset ../shared/datasets/clapnq] [--max-questions N]
        [--sweep] [--quick]

The dataset (ClapNQ dev: 300 answerable questions with a human reference answer and their gold passage, 300
unanswerable ones whose on-topic passage does not answer them; the same files are in demo/clapnq) is imported
with `manage.py import_beir` into a temporary SQLite database (removed at the end), so every golden entry carries
`answerable` and its reference answer. One `evaluate_answers(offline=True)` call scores the 8 configurations
(no network: no chat endpoint is configured). For each configuration it prints refusal recall (declined
unanswerable / unanswerable), false-refusal rate (declined answerable / answerable), the five metric means,
the score (0-100) and the diagnosis counts, then checks the ladder: from each level to the next stricter one,
refusal recall rises by more than the false-refusal rate does.

`--sweep` also prints, per search type, refusal recall and false-refusal rate at a grid of support thresholds
(the extractive answer declines when its support is below GROUNDEDNESS_MIN_SUPPORT[level]): the figures to
calibrate those thresholds on.

`--quick` runs the same steps (the sweep included) on 6 answerable and 6 unanswerable questions in seconds: every
figure is printed, the ladder too, but not held (too few questions to show it); any failure exits non-zero.
Without `--dataset`, the repository's copy in demo/clapnq is used when ../shared/datasets/clapnq is absent.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path
from typing import Any

from bench_django import private_django

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATASET = ROOT.parent / "shared" / "datasets" / "clapnq"
DEMO_DATASET = ROOT / "demo" / "clapnq"  # the same files, shipped with the repository
QUICK_PER_KIND = 6  # --quick: answerable and unanswerable questions kept each
SEARCH_TYPES = ("FullText", "Hybrid")
LEVELS = ("Off", "Low", "Medium", "High")
METRICS = ("faithfulness", "context_recall", "answer_relevancy", "citation_precision", "context_relevancy")
SHORT = {
    "refusal_recall": "refusal rec",
    "false_refusal_rate": "false ref",
    "faithfulness": "faithful",
    "context_recall": "ctx recall",
    "answer_relevancy": "ans relev",
    "citation_precision": "cite prec",
    "context_relevancy": "ctx relev",
    "score": "score",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, help=f"a BEIR folder (ClapNQ; default {DEFAULT_DATASET})")
    parser.add_argument("--max-questions", type=int, help="evaluate only the first N golden entries")
    parser.add_argument("--sweep", action="store_true", help="also print a grid of support thresholds")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_PER_KIND} answerable and {QUICK_PER_KIND} unanswerable questions, the sweep included",
    )
    args = parser.parse_args()
    if args.dataset is None:
        args.dataset = DEFAULT_DATASET if (DEFAULT_DATASET / "corpus.jsonl").is_file() else DEMO_DATASET
    if args.quick:
        args.sweep = True
    if not (args.dataset / "corpus.jsonl").is_file():
        parser.error(f"{args.dataset} holds no corpus.jsonl (try demo/clapnq)")

    with private_django("evalsite-clapnq-answers-") as data_dir:
        run(args, data_dir)


def _cell(value: Any, width: int) -> str:
    if value is None:
        return "-".rjust(width)
    return f"{value:{width}.3f}" if isinstance(value, float) else str(value).rjust(width)


def run(args: argparse.Namespace, data_dir: str) -> None:
    from django.core.management import call_command

    from evaluation.answers import writer as answer_writer
    from evaluation.answers.configs import parse_answer_configs
    from evaluation.answers.evaluate import evaluate_answers
    from evaluation.reports.presenter import run_summary
    from evaluation.retrieval.read_path import available_rerankers
    from goldenset.models import Collection, GoldenEntry

    started = time.perf_counter()
    call_command(
        "import_beir",
        str(args.dataset.resolve()),
        cluster="bench",
        tenant="bench",
        collection="clapnq",
        stdout=io.StringIO(),
    )
    collection = Collection.objects.get(slug="clapnq")
    entries = GoldenEntry.objects.filter(collection=collection)
    if args.quick:  # the first few of each kind, in the order evaluate_answers reads them
        kept = [
            pk
            for answerable in (True, False)
            for pk in entries.filter(answerable=answerable)
            .order_by("created_at", "id")
            .values_list("pk", flat=True)[:QUICK_PER_KIND]
        ]
        entries.exclude(pk__in=kept).delete()
        print(f"--quick: {len(kept)} golden entries kept ({QUICK_PER_KIND} of each kind), the rest deleted")
    answerable = entries.filter(answerable=True)
    with_reference = answerable.exclude(reference_answer="").count()
    print(
        f"{args.dataset}: {collection.documents.count()} passages, {answerable.count()} answerable questions "
        f"({with_reference} with a reference answer), {entries.filter(answerable=False).count()} unanswerable; "
        f"imported in {time.perf_counter() - started:.1f} s"
    )
    print(f"GROUNDEDNESS_MIN_SUPPORT = {answer_writer.GROUNDEDNESS_MIN_SUPPORT}")

    raw = [
        {"label": f"{search_type} {level}", "search_type": search_type, "groundedness": level}
        for search_type in SEARCH_TYPES
        for level in LEVELS
    ]
    configs = parse_answer_configs(raw, available_rerankers())
    started = time.perf_counter()
    _, runs = evaluate_answers(
        tenant=collection.tenant,
        collections=[collection],
        configs=configs,
        max_questions=args.max_questions,
        offline=True,
    )
    print(
        f"{len(configs)} configurations x {runs[0].question_count} questions, extractive answers + heuristic "
        f"judge (top_k {configs[0].top_k}), in {time.perf_counter() - started:.1f} s\n"
    )

    summaries = [run_summary(r) for r in runs]
    columns = list(SHORT)
    header = f"{'configuration':<18}" + "".join(f"{SHORT[c]:>12}" for c in columns) + "  diagnosis"
    print(header)
    print("-" * len(header))
    figures: dict[str, dict[str, Any]] = {}
    for summary in summaries:
        refusal = summary["refusal"] or {}
        row = {
            "refusal_recall": refusal.get("refusal_recall"),
            "false_refusal_rate": refusal.get("false_refusal_rate"),
            **{m: summary["metrics"].get(m) for m in METRICS},
            "score": summary["score"],
        }
        figures[summary["label"]] = row
        diagnosis = ", ".join(f"{k} {v}" for k, v in sorted((summary["diagnosis"] or {}).items()))
        print(
            f"{summary['label']:<18}"
            + "".join(_cell(row[c], 12) if c != "score" else f"{row[c]:12.1f}" for c in columns)
            + f"  {diagnosis}"
        )
    print(
        "\nrefusal recall = declined unanswerable / unanswerable; false ref = declined answerable / answerable"
    )
    print(
        "faithful .. ctx relev: means over the questions that have a value (a declined answer has none); "
        "score: 0-100\n"
    )

    ok = mixed = True
    for search_type in SEARCH_TYPES:
        for looser, stricter in zip(LEVELS, LEVELS[1:], strict=False):
            a, b = figures[f"{search_type} {looser}"], figures[f"{search_type} {stricter}"]
            if None in (a["refusal_recall"], a["false_refusal_rate"]):
                print(f"{search_type}: the questions evaluated are not both answerable and unanswerable")
                ok = mixed = False
                break
            gain = b["refusal_recall"] - a["refusal_recall"]
            cost = b["false_refusal_rate"] - a["false_refusal_rate"]
            holds = gain > 0 and gain > cost
            ok &= holds
            print(
                f"{search_type} {looser} -> {stricter}: refusal recall {a['refusal_recall']:.3f} -> "
                f"{b['refusal_recall']:.3f} (+{gain:.3f}), false-refusal rate {a['false_refusal_rate']:.3f} -> "
                f"{b['false_refusal_rate']:.3f} (+{cost:.3f}): {'holds' if holds else 'DOES NOT HOLD'}"
            )
    print(f"\nstricter level raises refusal recall more than the false-refusal rate: {'yes' if ok else 'NO'}")
    if args.quick:
        print(f"(--quick: not held on {runs[0].question_count} questions)")

    if args.sweep:
        sweep(collection, configs, args.max_questions)
    if not mixed or (not ok and not args.quick):
        sys.exit(1)


def sweep(collection: Any, configs: list[Any], max_questions: int | None) -> None:
    """Refusal recall and false-refusal rate per support threshold, per search type (the Off configuration's
    retrieval and extractive answer: the level only moves the threshold its support is compared with)."""
    from evaluation.answers import writer as answer_writer
    from evaluation.answers.answering import load_passages, retrieve
    from evaluation.answers.batch import answer_questions
    from evaluation.retrieval.read_path import CollectionSearch

    questions, _ = answer_questions([collection], [], max_questions)
    engine = CollectionSearch([collection])
    grid = [round(0.05 * i, 2) for i in range(1, 20)]
    print(
        "\nsupport-threshold sweep (refusal recall / false-refusal rate; declines when support < threshold)"
    )
    print(
        f"{'threshold':<12}" + "".join(f"{c.run.search_type:>18}" for c in configs if c.groundedness == "Off")
    )
    supports: list[tuple[list[float], list[float]]] = []
    for config in configs:
        if config.groundedness != "Off":
            continue
        answerable: list[float] = []
        unanswerable: list[float] = []
        for q in questions:
            keys, _, page_ids = retrieve(engine, q.question, config)
            answer = answer_writer.extractive_answer(q.question, load_passages(page_ids, keys), "Off")
            (answerable if q.answerable else unanswerable).append(answer.support)
        supports.append((answerable, unanswerable))
    for threshold in grid:
        cells = []
        for answerable, unanswerable in supports:
            recall = sum(s < threshold for s in unanswerable) / len(unanswerable)
            false = sum(s < threshold for s in answerable) / len(answerable)
            cells.append(f"{recall:8.3f} / {false:.3f}")
        print(f"{threshold:<12.2f}" + "".join(f"{c:>18}" for c in cells))


if __name__ == "__main__":
    main()
