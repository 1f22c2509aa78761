"""How well the offline judge's statement support agrees with human labels (issue 15): the measurement the
heuristic in evaluation/answers/judge.py is developed against.

    .venv/bin/python benchmarks/judge_agreement.py [--data benchmarks/data/judge_statements.jsonl]
        [--resamples 1000] [--sweep] [--quick]

It reads the labelled statements (see benchmarks/data/README.md), splits them by question into a dev and a test
half (the first hex digit of sha256("judge-split:" + question_id) below 8: dev; so a question's statements stay on one side), and
prints for each half: n, then for

- (a) plain content-word recall: the share of the statement's distinct content terms (goldenset.lexical) found in
  the best passage, the old heuristic's coverage, with its old verdict (coverage >= 0.6 and every number found);
- (b) the new support score (`evaluation.answers.judge.statement_support`), with term rarity over the passages at hand
  (what a caller without collection statistics gets), and
- (c) the same with rarity over the whole labelled file's passages (a stand-in for collection statistics),

the AUC (evaluation.judgments.agreement.roc_auc), the balanced accuracy of the verdict at its threshold, and the
threshold that maximises balanced accuracy with its bootstrap interval (evaluation.judgments.agreement.best_threshold).
Labels: "supported" is positive. "partially" is counted as negative (strict: a statement only partly supported
is not supported), and the strict and the lenient reading ("partially" left out) are both printed.

`--sweep` prints the dev-half AUC of (b) over a grid of the judge's constants: the numbers to tune on. Never tune
on the test half. `--quick` measures the dev half only with 50 resamples (the quick test of the benchmarks).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.answers import judge, judge_support  # noqa: E402
from evaluation.answers.judge_support import TermWeights  # noqa: E402
from evaluation.answers.writer import Passage  # noqa: E402
from evaluation.judgments.agreement import balanced_accuracy, best_threshold, roc_auc  # noqa: E402
from goldenset import lexical  # noqa: E402

DEFAULT_DATA = ROOT / "benchmarks" / "data" / "judge_statements.jsonl"
OLD_SUPPORT_MIN = 0.6  # the old heuristic's threshold on plain coverage


@dataclass(frozen=True)
class Item:
    id: str
    question_id: str
    statement: str
    passages: tuple[Passage, ...]
    label: str
    source: str

    @property
    def split(self) -> str:
        return (
            "dev"
            if hashlib.sha256(f"judge-split:{self.question_id}".encode()).hexdigest()[0] < "8"
            else "test"
        )


def load(path: Path) -> list[Item]:
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        passages = tuple(
            Passage(n, p["document_id"], 1, p["title"], p["text"]) for n, p in enumerate(row["passages"], 1)
        )
        items.append(
            Item(row["id"], row["question_id"], row["statement"], passages, row["label"], row["source"])
        )
    return items


def plain_recall(item: Item) -> tuple[float, bool]:
    """(coverage, old verdict) of the best passage: the pre-issue-15 heuristic."""
    own = lexical.content_terms(item.statement)
    best = (0.0, False)
    for p in item.passages:
        terms = frozenset(lexical.content_terms(f"{p.title}\n{p.text}"))
        share = lexical.coverage(own, terms)
        verdict = (
            bool(own)
            and share >= OLD_SUPPORT_MIN
            and all(t in terms for t in own if any(c.isdigit() for c in t))
        )
        best = max(best, (share, verdict))
    return best


def collection_weights(items: Sequence[Item]) -> TermWeights:
    distinct = {p.document_id: f"{p.title}\n{p.text}" for item in items for p in item.passages}
    return TermWeights.from_texts(distinct.values())


Scorer = Callable[[Item], tuple[float, bool]]


def new_support(weights: TermWeights | None) -> Scorer:
    def score(item: Item) -> tuple[float, bool]:
        row = judge.statement_support(item.statement, item.passages, weights)
        return row["support"], row["supported"]

    return score


def report(name: str, items: Sequence[Item], scorer: Scorer, resamples: int) -> None:
    for reading, kept in (
        ("strict (partially = not supported)", list(items)),
        ("lenient (partially left out)", [i for i in items if i.label != "partially"]),
    ):
        scored = [scorer(i) for i in kept]
        scores = [s for s, _ in scored]
        verdicts = [1.0 if v else 0.0 for _, v in scored]
        labels = [i.label == "supported" for i in kept]
        auc = roc_auc(scores, labels)
        verdict_accuracy = balanced_accuracy(verdicts, labels, 0.5)
        best = best_threshold(scores, labels, resamples=resamples, seed=0)
        best_text = (
            f"best threshold {best.value:.3f} [{best.low:.3f}, {best.high:.3f}] "
            f"balanced accuracy {best.balanced_accuracy:.3f}"
            if best
            else "best threshold: undefined"
        )
        print(
            f"  {name:<44} {reading:<36} n {len(kept):>3}  AUC {auc if auc is None else format(auc, '.3f')}  "
            f"verdict balanced accuracy {verdict_accuracy if verdict_accuracy is None else format(verdict_accuracy, '.3f')}  "
            f"{best_text}"
        )


SWEEP: dict[str, list[float]] = {
    "BIGRAM_WEIGHT": [0.0, 0.2, 0.3, 0.5],
    "NUMBER_PENALTY": [0.3, 0.5, 0.7, 1.0],
    "SHORT_PENALTY": [0.5, 0.7, 1.0],
    "NEGATION_PENALTY": [0.5, 0.7, 1.0],
}


def sweep(dev: Sequence[Item], weights: TermWeights) -> None:
    """Dev-half AUC of the new score (collection rarity) over a grid of judge_support's constants."""
    saved = {name: getattr(judge_support, name) for name in SWEEP}
    labels = [i.label == "supported" for i in dev]
    rows = []
    try:
        for values in itertools.product(*SWEEP.values()):
            for name, value in zip(SWEEP, values, strict=True):
                setattr(judge_support, name, value)
            scores = [new_support(weights)(i)[0] for i in dev]
            rows.append((roc_auc(scores, labels) or 0.0, values))
    finally:
        for name, value in saved.items():
            setattr(judge_support, name, value)
    rows.sort(reverse=True)
    print("dev-half AUC by " + ", ".join(SWEEP) + " (best 10, then the current setting):")
    for auc, values in rows[:10]:
        print(f"  {auc:.4f}  {values}")
    current = tuple(saved.values())
    print(f"  current {current}: " + ", ".join(f"{a:.4f}" for a, v in rows if v == current))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    items = load(args.data)
    weights = collection_weights(items)
    halves = {"dev": [i for i in items if i.split == "dev"], "test": [i for i in items if i.split == "test"]}
    resamples = 50 if args.quick else args.resamples
    print(f"{len(items)} labelled statements from {args.data.name}; SUPPORT_MIN {judge.SUPPORT_MIN}")
    for half in ("dev",) if args.quick else ("dev", "test"):
        chosen = halves[half]
        counts = {
            label: sum(i.label == label for i in chosen)
            for label in ("supported", "partially", "not supported")
        }
        print(f"## {half} half: n {len(chosen)} {counts}")
        report("(a) plain content-word recall (old verdict)", chosen, plain_recall, resamples)
        report("(b) new support, rarity over the passages", chosen, new_support(None), resamples)
        report("(c) new support, rarity over the collection", chosen, new_support(weights), resamples)
        hard = [i for i in chosen if i.source.startswith("hand-written")]
        print(
            f"  the hand-written variants alone (changed numbers and names, negations, paraphrases): n {len(hard)}"
        )
        report("(a) plain content-word recall (old verdict)", hard, plain_recall, resamples)
        report("(c) new support, rarity over the collection", hard, new_support(weights), resamples)
    if args.sweep:
        sweep(halves["dev"], weights)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
