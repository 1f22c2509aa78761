"""Pooling against hidden judgments (issue 26): how fast judging a depth-10 pool brings the ranking of systems
back to the one complete judgments give, in the pool's own order and in a random order of the same pool.

    .venv/bin/python benchmarks/pooling_bench.py [--datasets DIR ...] [--hide 0.7] [--depth 10] [--shuffles 5]
                                                  [--seed 5] [--quick]

For each collection with complete human judgments (default: ../shared/datasets/cranfield and vaswani_npl;
every judgment read, grade 0 included):
1. every configuration of benchmarks/vector_quality.py (FullText, Vector LSI, Hybrid Rrf and Weighted, the
   proximity and feedback rerankers over FullText and Hybrid) and FullText with Okapi BM25 is run to depth 100;
2. `--hide` of the judged (question, document) pairs are hidden at random; what is left is what a team knows;
3. the pool (evaluation.judgments.pooling.pool_candidates) holds every system's top `--depth` documents that
   are not judged yet, in its priority order;
4. a scripted rater judges the pool from the complete judgments as trec_eval reads them (a pair's hidden grade,
   and 0 for a document they never graded: the complete ranking below counts it non-relevant too, so judging the
   whole pool brings every measure to its complete value for what the pool holds), in three orders: the adaptive
   one a pool gives raters (evaluation.judgments.pooling.AdaptiveOrder, MaxMean over the rater's answers so far),
   the pool's fixed priority order, and `--shuffles` random orders of the same pool;
5. after each tenth of the pool, the systems are ranked by nDCG@10, nDCG@10 over condensed lists and bpref
   (evaluation.retrieval.metrics, equal to trec_eval's), each ranking compared with the one that measure gives
   under the complete judgments by Kendall's tau (tau-b).
Means are over the questions with a relevant document in the complete judgments, the same set at every step.
It prints a table per collection and the three goals with yes / no: tau >= 0.9 with at most a third of the pool
judged in the adaptive order; the adaptive order reaching its tau with no more judgments than the random orders;
the condensed measures and bpref closer to the complete ranking than nDCG@10 before any judging.

Then the case Compare warns about, a system that found what nobody judged (leave one out, as Zobel 1998 tested
TREC's pools): for each system, the judgments are those a depth-`--depth` pool of the OTHER systems would have
produced (the complete grade of every document they pooled, nothing else), and the left-out system is scored
with the others under them. It prints, per measure, the places the left-out system moves in that ranking against
its place under the complete judgments, and Kendall's tau of the ranking in which every system is scored left out.

`--quick` runs the same steps on a sample (the first 20 judged questions, their judged documents, topped up to
300 documents) in seconds.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from evalsite.env import limit_blas_threads  # noqa: E402  (before numpy: one BLAS thread, as the servers run)

limit_blas_threads(1)

import numpy as np  # noqa: E402
import search_bench  # noqa: E402
from scipy.stats import kendalltau  # noqa: E402

from evaluation.judgments.pooling import AdaptiveOrder, pool_candidates  # noqa: E402
from evaluation.retrieval import metrics  # noqa: E402
from evaluation.retrieval.search.corpus import Corpus  # noqa: E402
from evaluation.retrieval.search.embeddings import LsiEmbedder  # noqa: E402
from evaluation.retrieval.search.engine import SearchConfig, SearchIndex  # noqa: E402
from goldenset.temporal import Validity  # noqa: E402

DATASETS = ROOT.parent / "shared" / "datasets"
DEFAULT = [DATASETS / "cranfield", DATASETS / "vaswani_npl"]
RUN_DEPTH = 100
MEASURES = ("nDCG@10", "condensed nDCG@10", "bpref")
HIDE = 0.7  # the share of the judged pairs hidden
TAU_GOAL, SHARE_GOAL = 0.9, 1 / 3

Qrels = dict[str, dict[str, int]]


def load(folder: Path, quick: bool) -> tuple[list[dict], list[dict], Qrels]:
    """The corpus, the judged questions and every judgment (grade 0 too)."""
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").open(encoding="utf-8")]
    qrels: Qrels = {}
    with (folder / "qrels.tsv").open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader)
        for query, doc, grade in reader:
            qrels.setdefault(query, {})[doc] = int(grade)
    if quick:  # the benchmarks' one sample: the first judged questions, their judged documents, topped up
        return search_bench.quick_sample(corpus, queries, qrels)
    return corpus, [q for q in queries if q["_id"] in qrels], qrels


def system_runs(corpus: list[dict], queries: list[dict]) -> dict[str, dict[str, list[str]]]:
    """Each configuration's top RUN_DEPTH document ids per question."""
    import vector_quality

    texts = [f"{d['title']}\n{d['text']}" if d.get("title") else d["text"] for d in corpus]
    ids = [d["_id"] for d in corpus]
    index = SearchIndex(
        Corpus(texts, np.arange(len(texts)), ids, [Validity(i) for i in ids]),
        embedder_factory=lambda _corpus: LsiEmbedder(),
    )
    systems = [
        (label, config, reranker, None) for label, config, reranker, _ in vector_quality.configurations(index)
    ]
    fulltext, vector = SearchConfig("FullText"), SearchConfig("Vector")
    systems += [
        ("FullText okapi", SearchConfig("FullText", bm25_variant="okapi"), None, None),
        ("Hybrid Weighted 0.2", SearchConfig("Hybrid", fusion="Weighted", fulltext_weight=0.2), None, None),
        ("Hybrid Weighted 0.8", SearchConfig("Hybrid", fusion="Weighted", fulltext_weight=0.8), None, None),
        # Terse users: the question's first three words only (weaker systems widen the spread to rank).
        ("FullText, 3 words", fulltext, None, 3),
        ("Vector, 3 words", vector, None, 3),
    ]
    runs = {}
    for label, config, reranker, words in systems:
        runs[label] = {
            q["_id"]: index.rank_documents(
                " ".join(q["text"].split()[:words]) if words else q["text"], config, RUN_DEPTH, reranker
            ).document_ids
            for q in queries
        }
    return runs


def means(
    runs: dict[str, dict[str, list[str]]], qrels: Qrels, questions: list[str]
) -> dict[str, list[float]]:
    """Per measure, each system's mean over `questions` (in the order of `runs`)."""
    table: dict[str, list[float]] = {measure: [] for measure in MEASURES}
    for rankings in runs.values():
        values: dict[str, list[float]] = {measure: [] for measure in MEASURES}
        for question in questions:
            ranking, grades = rankings[question], qrels.get(question, {})
            values["nDCG@10"].append(metrics.ndcg_at(ranking, grades, 10))
            values["condensed nDCG@10"].append(
                metrics.ndcg_at(metrics.condensed(ranking, grades), grades, 10)
            )
            values["bpref"].append(metrics.bpref(ranking, grades))
        for measure in MEASURES:
            table[measure].append(statistics.fmean(values[measure]))
    return table


def taus(table: dict[str, list[float]], reference: dict[str, list[float]]) -> dict[str, float]:
    return {measure: float(kendalltau(table[measure], reference[measure]).statistic) for measure in MEASURES}


def judge_in_order(order, known: Qrels, truth: Qrels, runs, questions, reference) -> list[tuple[int, dict]]:
    """(judgments spent, taus) before judging and after each tenth of `order`."""
    judged = {question: dict(grades) for question, grades in known.items()}
    steps = [(0, taus(means(runs, judged, questions), reference))]
    for tenth in range(1, 11):
        start, end = (tenth - 1) * len(order) // 10, tenth * len(order) // 10
        for candidate in order[start:end]:
            grade = truth[candidate.question][candidate.document_id]  # the scripted rater's answer
            judged.setdefault(candidate.question, {})[candidate.document_id] = grade
        steps.append((end, taus(means(runs, judged, questions), reference)))
    return steps


def first_reaching(curve: list[dict], measure: str, tau: float) -> int | None:
    """The first tenth of the pool (0-10) after which the mean tau reaches `tau`."""
    return next((tenth for tenth, values in enumerate(curve) if values[measure] >= tau), None)


def mean_curve(curves: list[list[tuple[int, dict]]]) -> list[dict]:
    return [{m: statistics.fmean(c[tenth][1][m] for c in curves) for m in MEASURES} for tenth in range(11)]


def complete(full: Qrels, runs) -> Qrels:
    """The complete judgments as trec_eval reads them, written out for every document a system retrieved: its
    grade, or 0 where it was never graded."""
    truth = {question: dict(grades) for question, grades in full.items()}
    for rankings in runs.values():
        for question, ranking in rankings.items():
            for doc in ranking:
                truth.setdefault(question, {}).setdefault(doc, 0)
    return truth


def one_hiding(seed: int, full: Qrels, truth: Qrels, runs, questions, reference, depth: int):
    """Hide a share of the judgments, pool, and judge the pool in its order and in a random one."""
    rng = random.Random(seed)
    pairs = sorted((q, d) for q, grades in full.items() for d in grades)
    hidden = set(rng.sample(pairs, round(HIDE * len(pairs))))
    known: Qrels = {}
    for question, doc in pairs:
        if (question, doc) not in hidden:
            known.setdefault(question, {})[doc] = full[question][doc]
    order = pool_candidates(list(runs.values()), known, depth=depth, questions=questions)
    shuffled = list(order)
    rng.shuffle(shuffled)
    graded = sum(1 for c in order if c.document_id in full.get(c.question, {}))
    return (
        len(order),
        graded,
        judge_in_order(adaptive(order, truth), known, truth, runs, questions, reference),
        judge_in_order(shuffled, known, truth, runs, questions, reference),
        judge_in_order(order, known, truth, runs, questions, reference),
    )


def adaptive(order, truth: Qrels) -> list:
    """The pool in the order AdaptiveOrder gives a rater who answers from the complete judgments."""
    moving = AdaptiveOrder(order)
    sequence = []
    while (index := moving.next()) is not None:
        candidate = order[index]
        sequence.append(candidate)
        moving.record(index, truth[candidate.question][candidate.document_id] > 0)
    return sequence


def measure_collection(folder: Path, args: argparse.Namespace) -> list[str]:
    started = time.perf_counter()
    corpus, queries, full = load(folder, args.quick)
    runs = system_runs(corpus, queries)
    questions = [q["_id"] for q in queries if any(grade > 0 for grade in full[q["_id"]].values())]
    truth = complete(full, runs)
    reference = means(runs, truth, questions)
    hidings = [
        one_hiding(args.seed + n, full, truth, runs, questions, reference, args.depth)
        for n in range(args.hidings)
    ]
    sizes = [h[0] for h in hidings]
    graded = [h[1] for h in hidings]
    ours, theirs, fixed = (mean_curve([h[n] for h in hidings]) for n in (2, 3, 4))
    judgments = sum(len(grades) for grades in full.values())
    name = folder.name + (" (--quick sample)" if args.quick else "")
    spread = ", ".join(
        f"{label} {value:.3f}" for label, value in zip(runs, reference["nDCG@10"], strict=True)
    )
    print(
        f"## {name}: {len(corpus):,} documents, {len(questions)} questions, {judgments:,} judgments, "
        f"{round(HIDE * 100)}% hidden, {args.hidings} hidings (seeds {args.seed}-{args.seed + args.hidings - 1})\n"
    )
    print(f"{len(runs)} systems, nDCG@10 under the complete judgments: {spread}\n")
    print(
        f"pool: depth {args.depth}, {statistics.fmean(sizes):,.0f} items on average "
        f"({statistics.fmean(graded):,.0f} graded in the hidden judgments; the others never graded: 0)\n"
    )
    print("| judged | " + " | ".join(f"tau {m} (adaptive / fixed / random order)" for m in MEASURES) + " |")
    print("|---|" + "---|" * len(MEASURES))
    for tenth in range(11):
        cells = " | ".join(
            f"{ours[tenth][m]:.3f} / {fixed[tenth][m]:.3f} / {theirs[tenth][m]:.3f}" for m in MEASURES
        )
        spent = statistics.fmean(h[2][tenth][0] for h in hidings)
        print(f"| {tenth * 10}% ({spent:,.0f}) | {cells} |")
    print()
    lines = []
    for measure in MEASURES:
        reached, by_random = (
            first_reaching(ours, measure, TAU_GOAL),
            first_reaching(theirs, measure, TAU_GOAL),
        )
        within = reached is not None and reached / 10 <= SHARE_GOAL
        fewer = reached is not None and (by_random is None or reached <= by_random)
        lines.append(
            f"{measure}: mean tau >= {TAU_GOAL} after {_tenths(reached)} of the pool in the adaptive order "
            f"(fixed order: {_tenths(first_reaching(fixed, measure, TAU_GOAL))}, random order: "
            f"{_tenths(by_random)}); within a third of the pool: {'yes' if within else 'no'}; "
            f"no later than the random order: {'yes' if fewer else 'no'}"
        )
    before = ours[0]
    closer = all(before[m] >= before["nDCG@10"] for m in ("condensed nDCG@10", "bpref"))
    lines.append(
        "before any judging, condensed nDCG@10 and bpref at least as close to the complete ranking as nDCG@10: "
        f"{'yes' if closer else 'no'} ({', '.join(f'{m} {before[m]:.3f}' for m in MEASURES)})"
    )
    print("\n".join(lines))
    print()
    print("\n".join(leave_one_out(runs, truth, questions, reference, args.depth)))
    print(f"\n({time.perf_counter() - started:.1f} s)\n")
    return lines


def leave_one_out(runs, truth: Qrels, questions: list[str], reference, depth: int) -> list[str]:
    """Each system in turn left out of the pool: every system scored under the judgments of a pool of the others
    (see the module docstring), and the left-out one's place among them compared with its place under the
    complete judgments (what Compare shows a team whose new run found what nobody judged)."""
    labels = list(runs)
    left_scores: dict[str, list[float]] = {measure: [] for measure in MEASURES}
    moved: dict[str, list[int]] = {measure: [] for measure in MEASURES}
    judged = []
    for i, left_out in enumerate(labels):
        others = [runs[label] for label in labels if label != left_out]
        qrels: Qrels = {
            q: {doc: truth[q][doc] for rankings in others for doc in rankings[q][:depth]} for q in questions
        }
        table = means(runs, qrels, questions)
        for measure in MEASURES:
            left_scores[measure].append(table[measure][i])
            place = sum(v > table[measure][i] for j, v in enumerate(table[measure]) if j != i)
            place_full = sum(v > reference[measure][i] for j, v in enumerate(reference[measure]) if j != i)
            moved[measure].append(abs(place - place_full))
        judged.append(statistics.fmean(metrics.judged_at(runs[left_out][q], qrels[q], 10) for q in questions))
    lines = [
        f"leave one out: judged@10 of the left-out system {min(judged):.2f} to {max(judged):.2f} "
        f"(mean {statistics.fmean(judged):.2f}; the others' near 1)\n",
        "| measure | places the left-out system moves, mean (most) | tau, each system scored left out |",
        "|---|---|---|",
    ]
    for measure in MEASURES:
        tau = float(kendalltau(left_scores[measure], reference[measure]).statistic)
        lines.append(
            f"| {measure} | {statistics.fmean(moved[measure]):.2f} ({max(moved[measure])}) | {tau:.3f} |"
        )
    return lines


def _tenths(tenth: int | None) -> str:
    return "never" if tenth is None else f"{tenth * 10}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, nargs="+", default=DEFAULT)
    parser.add_argument("--depth", type=int, default=10, help="the pool's depth (default 10)")
    parser.add_argument("--hidings", type=int, default=5, help="random hidings averaged (default 5)")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a sample of each collection, in seconds")
    args = parser.parse_args()
    if args.depth < 1 or args.hidings < 1:
        parser.error("--depth and --hidings must be at least 1")
    missing = [str(folder) for folder in args.datasets if not (folder / "qrels.tsv").is_file()]
    if missing:
        sys.exit(f"no collection with judgments at {', '.join(missing)}")
    for folder in args.datasets:
        measure_collection(folder, args)


if __name__ == "__main__":
    main()
