"""The keyless relevance assessor against people (issue 26): its cuts chosen on dev halves, its agreement reported
on test halves of collections whose judgments people made (none of them by evalsite's authors).

    .venv/bin/python benchmarks/lexical_assessor.py [--datasets DIR ...] [--depth 10] [--seed 26] [--quick]

For each collection (default: ../shared/datasets/cranfield, vaswani_npl and clapnq), FullText (BM25, lucene)
ranks every judged question's documents and the top `--depth` of each make the pool a rater would judge. Each
pair gets the lexical score (evaluation.judgments.lexical; its idf over the pool's own documents, as the job
computes it) and the people's grade: the collection's qrels, 0 where they never graded the document (as
trec_eval reads them), Cranfield's 1-4 cut to 0-3 (4, "complete answer", is 3), Vaswani's and ClapNQ's binary 1
kept as "relevant or better". A collection with reference answers (ClapNQ) is scored twice, with them and with
the question alone: its answers were written from its relevant passages, so with them the task is nearly
copy-detection. The questions are split in halves by a hash of their id and `--seed`:
- on the dev halves, the cut for grade 1 is the one that maximises the mean over the collections of Cohen's
  kappa between "people: relevant" (grade >= 1) and "assessor: grade >= 1"; the cuts for 2 and 3, above it, those
  that maximise Cranfield's quadratic weighted kappa (the only graded collection);
- on the test halves, it prints per collection the binary kappa and balanced accuracy, Cranfield's weighted
  kappa and confusion matrix, for the cuts chosen and for the cuts evalsite ships (evaluation.judgments.lexical
  .CUTS, which must be the chosen ones).
`--quick` runs the steps on a sample of each collection in seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
from pooling_bench import load  # noqa: E402

from evaluation.judgments.agreement import weighted_kappa  # noqa: E402
from evaluation.judgments.lexical import CUTS, Cuts, grade_of, idf_of, lexical_score  # noqa: E402
from evaluation.retrieval import metrics  # noqa: E402
from evaluation.retrieval.search.bm25 import BM25Params, build_index  # noqa: E402
from goldenset.text import tokenize  # noqa: E402

DATASETS = ROOT.parent / "shared" / "datasets"
DEFAULT = [DATASETS / "cranfield", DATASETS / "vaswani_npl", DATASETS / "clapnq"]
GRID = [round(x * 0.02, 2) for x in range(51)]

Pair = tuple[str, float, int]  # question id, score, people's grade (0-3)


def pairs_of(folder: Path, depth: int, quick: bool, references: bool = True) -> list[Pair]:
    corpus, queries, qrels = load(folder, quick)
    texts = [f"{d.get('title') or ''}\n{d['text']}" for d in corpus]
    ids = [d["_id"] for d in corpus]
    index = build_index([tokenize(t) for t in texts], BM25Params(variant="lucene"))
    position = {doc: i for i, doc in enumerate(ids)}
    pooled: list[tuple[dict, int]] = []
    for query in queries:
        scores = index.scores(tokenize(query["text"]))
        hits = {ids[i]: float(scores[i]) for i in np.flatnonzero(scores > 0)}
        for doc in metrics.rank_run(hits)[:depth]:
            pooled.append((query, position[doc]))
    idf = idf_of(texts[i] for i in sorted({i for _, i in pooled}))
    out = []
    for query, i in pooled:
        grade = min(qrels.get(query["_id"], {}).get(ids[i], 0), 3)
        reference = (query.get("reference_answer") or "") if references else ""
        score = lexical_score(query["text"], reference, texts[i], idf)
        out.append((query["_id"], score, max(grade, 0)))
    return out


def half(question: str, seed: int) -> str:
    digest = hashlib.sha256(f"{seed}:{question}".encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "test"


def binary_kappa(pairs: list[Pair], cut: float) -> float:
    people = [int(g >= 1) for _, _, g in pairs]
    machine = [int(s >= cut) for _, s, _ in pairs]
    return weighted_kappa(people, machine, (0, 1))


def balanced_accuracy(pairs: list[Pair], cut: float) -> float:
    relevant = [s >= cut for _, s, g in pairs if g >= 1]
    other = [s < cut for _, s, g in pairs if g == 0]
    return (statistics.fmean(relevant) + statistics.fmean(other)) / 2


def graded_kappa(pairs: list[Pair], cuts: Cuts) -> float:
    return weighted_kappa([g for _, _, g in pairs], [grade_of(s, cuts) for _, s, _ in pairs], (0, 1, 2, 3))


def choose(dev: dict[str, list[Pair]], graded: str | None) -> Cuts:
    related = max(GRID, key=lambda c: (statistics.fmean(binary_kappa(p, c) for p in dev.values()), -c))
    if graded is None:
        return Cuts(related, min(1.0, related + 0.02), min(1.0, related + 0.04))
    best = max(
        ((r, p) for r in GRID if r > related for p in GRID if p > r),
        key=lambda rp: (graded_kappa(dev[graded], Cuts(related, *rp)), -rp[0], -rp[1]),
    )
    return Cuts(related, *best)


def confusion(pairs: list[Pair], cuts: Cuts) -> list[list[int]]:
    table = [[0] * 4 for _ in range(4)]
    for _, score, grade in pairs:
        table[grade][grade_of(score, cuts)] += 1
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, nargs="+", default=DEFAULT)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    missing = [str(f) for f in args.datasets if not (f / "qrels.tsv").is_file()]
    if missing:
        sys.exit(f"no collection with judgments at {', '.join(missing)}")
    splits: dict[str, dict[str, list[Pair]]] = {"dev": {}, "test": {}}
    for folder in args.datasets:
        for pair in pairs_of(folder, args.depth, args.quick):
            splits[half(pair[0], args.seed)].setdefault(folder.name, []).append(pair)
        if any(q.get("reference_answer") for q in load(folder, args.quick)[1]):
            # Reference answers written from the relevant passage (ClapNQ's are) make the task easy: the same
            # questions without them show what the question alone gives.
            for pair in pairs_of(folder, args.depth, args.quick, references=False):
                splits[half(pair[0], args.seed)].setdefault(f"{folder.name}, question only", []).append(pair)
    graded = "cranfield" if "cranfield" in splits["dev"] else None
    chosen = choose(splits["dev"], graded)
    print(
        f"chosen cuts (dev halves): related {chosen.related}, relevant {chosen.relevant}, perfect {chosen.perfect}"
    )
    print(
        f"shipped cuts (evaluation.judgments.lexical.CUTS): {CUTS.related}, {CUTS.relevant}, {CUTS.perfect}\n"
    )
    print(
        "| collection (test half) | pairs | relevant | binary kappa | balanced accuracy | weighted kappa (graded) |"
    )
    print("|---|---|---|---|---|---|")
    for name, pairs in splits["test"].items():
        relevant = sum(1 for _, _, g in pairs if g >= 1)
        weighted = f"{graded_kappa(pairs, CUTS):.3f}" if name == graded else "(binary judgments)"
        print(
            f"| {name} | {len(pairs):,} | {relevant:,} | {binary_kappa(pairs, CUTS.related):.3f} | "
            f"{balanced_accuracy(pairs, CUTS.related):.3f} | {weighted} |"
        )
    if graded and graded in splits["test"]:
        print(f"\n{graded} test half, people's grade (rows) against the assessor's (columns), shipped cuts:")
        for grade, row in enumerate(confusion(splits["test"][graded], CUTS)):
            print(f"  {grade}: " + " ".join(f"{n:6d}" for n in row))
    if chosen != CUTS and not args.quick:  # a sample chooses its own cuts
        print(
            "\nthe shipped cuts are not the ones the dev halves choose: update evaluation.judgments.lexical.CUTS"
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
