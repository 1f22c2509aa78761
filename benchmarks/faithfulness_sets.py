"""Public sets of human faithfulness labels, read for benchmarks/judge_agreement.py: statements (a sentence of an
answer or a summary), the passages they should stand on, and what people said. Kept outside the repo (none of
their licences lets it ship a copy): `--fetch` downloads the pinned files, checked against their sha256.

    .venv/bin/python benchmarks/faithfulness_sets.py --fetch [--dir DIR]   # then judge_agreement.py reads DIR

DIR: --dir, else $EVALSITE_FAITHFULNESS_SETS, else ~/.cache/evalsite/faithfulness-sets; each set under its own
folder, its files at their paths in their repository.

- **LFQA-Verification** (Chen, Xu, Arora and Choi 2023, "Understanding Retrieval Augmentation for Long-Form
  Question Answering", github.com/timchen0618/LFQA-Verification; no licence given: fetched, never shipped):
  long-form answers to ELI5 questions from six sources (GPT-3 and Alpaca with and without the WebGPT documents
  in their prompt, with human-chosen documents, and WebGPT's own), every sentence labelled supported,
  partially or not supported by three raters against the WebGPT documents of its question. Abstractive answers.
- **QAGS** (Wang, Cho and Lewis 2020, "Asking and Answering Questions to Evaluate the Factual Consistency of
  Summaries", github.com/W4ngatang/qags; no data licence given: fetched, never shipped): summary sentences of
  CNN/DailyMail (a Bottom-Up summariser) and XSum (BART) articles, each labelled consistent or not by three
  crowd workers. Summaries; the article is paged as evalsite pages a document (goldenset.text.split_pages at
  the default 2,000 characters) and every page is a passage. Its detokenized numbers ("98. 7") are mended
  ("98.7"), as its summaries write them.

Labels: the three raters' majority ("supported" / "partially" / "not supported"; QAGS's yes / no is supported /
not supported; LFQA's three different labels are "partially"). Each set is split by question or document, as
judge_agreement.py splits the repo's own labels (the first hex digit of sha256("judge-split:" + group) below 8:
dev), so no question or article has statements on both sides.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.answers.writer import Passage  # noqa: E402
from goldenset.text import split_pages  # noqa: E402

PAGE_CHARS = 2000  # evalsite's default page size (EVALSITE_PAGE_CHARS)
SUPPORTED, PARTIALLY, NOT_SUPPORTED = "supported", "partially", "not supported"
ABSTRACTIVE, SUMMARIES = (
    "abstractive answers",
    "summaries",
)  # the kinds of answer, as Statement.set names them


@dataclass(frozen=True)
class Source:
    folder: str
    repo: str
    commit: str
    files: dict[str, str]  # path in the repository -> sha256

    def url(self, path: str) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{path}"


_LFQA_SOURCES = ("gpt3", "gpt3_wdoc", "gpt3_whudoc", "alpaca", "alpaca_wdoc", "webgpt")
SOURCES = (
    Source(
        "lfqa_verification",
        "timchen0618/LFQA-Verification",
        "4e905be93fbe919082d62faa77ee32c68e90237c",
        {
            "data/annotations/annotations-alpaca.json": "c3582f7a59e218aa1bcf4a1b7e18ae75f847e3c7e43b7f1b5bc3655f7df2c1a0",
            "data/annotations/annotations-alpaca_wdoc.json": "f2e4e95e1d12c5564bb07195b91fdea96375a9fcc43c0a1ea798f354c8bad61d",
            "data/annotations/annotations-gpt3.json": "149c41215aa25c3d210f665e6f9af54951d31e61d29721d2e694cfb00f8c8cf8",
            "data/annotations/annotations-gpt3_wdoc.json": "ccbeffc8ae50a2059f50f1a51a8841266fee38555c4a5fe091689c07243c84b4",
            "data/annotations/annotations-gpt3_whudoc.json": "d3fca80685e0d84ae6796e018290f1363bbaf8b8dd6c7198816b2460e01b5e72",
            "data/annotations/annotations-webgpt.json": "00d80e806d1d3428dad9e3c363f48f1c69df0b0553f1d0ab1660e517cbb52942",
            "data/docs/docs-webgpt.json": "bca08af7ab7fa8062929387b16d33fd7609b3739db1dab4935e376437332387b",
        },
    ),
    Source(
        "qags",
        "W4ngatang/qags",
        "47798e9b63344e2d3fb4df2def6edc18e9402d30",
        {
            "data/mturk_cnndm.jsonl": "5a6e20201f2c5d5d2489865137987c5d68d04c5b4e84662f99bb03862bb3a575",
            "data/mturk_xsum.jsonl": "1fb9af32ba64b0df54b26e12456b0b0324a519a85348c1f7b268899ad6269a15",
        },
    ),
)


@dataclass(frozen=True)
class Statement:
    id: str
    set: str  # ABSTRACTIVE, SUMMARIES (or the judge benchmark's own "extractive")
    source: str  # the set's own part: an answer source, a summariser
    group: str  # the question or the document: the unit of the dev / test split
    statement: str
    previous: str  # the sentence before it in its answer or summary ("" for the first)
    passages: tuple[Passage, ...]
    label: str

    @property
    def split(self) -> str:
        digest = hashlib.sha256(f"judge-split:{self.group}".encode()).hexdigest()
        return "dev" if digest[0] < "8" else "test"


def default_dir() -> Path:
    found = os.environ.get("EVALSITE_FAITHFULNESS_SETS")
    return Path(found) if found else Path.home() / ".cache" / "evalsite" / "faithfulness-sets"


def missing(root: Path) -> list[str]:
    """The sets whose files are absent or differ from the pinned ones (as "folder: reason")."""
    problems = []
    for source in SOURCES:
        for path, digest in source.files.items():
            file = root / source.folder / path
            if not file.is_file():
                problems.append(f"{source.folder}: {path} not found")
            elif hashlib.sha256(file.read_bytes()).hexdigest() != digest:
                problems.append(f"{source.folder}: {path} is not the pinned file")
    return problems


def fetch(root: Path) -> None:
    for source in SOURCES:
        for path, digest in source.files.items():
            file = root / source.folder / path
            if file.is_file() and hashlib.sha256(file.read_bytes()).hexdigest() == digest:
                continue
            with urllib.request.urlopen(source.url(path), timeout=60) as response:  # noqa: S310 (pinned https)
                body = response.read()
            if hashlib.sha256(body).hexdigest() != digest:
                raise SystemExit(f"{source.repo} {path}: the download is not the pinned file")
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(body)
            print(f"fetched {source.repo}@{source.commit[:8]} {path}")


def _majority(labels: list[str]) -> str:
    (label, count), *_ = Counter(labels).most_common(1)
    return label if count >= 2 else PARTIALLY


def _paged(document_id: str, title: str, text: str) -> tuple[Passage, ...]:
    return tuple(
        Passage(n, f"{document_id}#{n}", n, title, page)
        for n, page in enumerate(split_pages(text, PAGE_CHARS), 1)
    )


def lfqa(root: Path) -> Iterator[Statement]:
    folder = root / "lfqa_verification" / "data"
    docs = {
        str(row["question_id"]): tuple(
            Passage(n, d["doc_id"], 1, d["title"], d["text"]) for n, d in enumerate(row["docs"], 1)
        )
        for row in json.loads((folder / "docs" / "docs-webgpt.json").read_text(encoding="utf-8"))
    }
    names = {"supported": SUPPORTED, "partially": PARTIALLY, "not_supported": NOT_SUPPORTED}
    for source in _LFQA_SOURCES:
        rows = json.loads((folder / "annotations" / f"annotations-{source}.json").read_text(encoding="utf-8"))
        for row in rows:
            question = str(row["question_id"])
            previous = ""
            for n, annotation in enumerate(row["annotations"]):
                sentence = annotation["answer"].strip()
                label = _majority([names[label] for label in annotation["labels"]])
                yield Statement(
                    f"lfqa-{source}-{question}-{n}", ABSTRACTIVE, source, f"lfqa:{question}",
                    sentence, previous, docs[question], label,
                )  # fmt: skip
                previous = sentence


# QAGS's articles were detokenized with a space after a separator inside a number ("235, 000", "98. 7") that its
# summaries write whole ("235,000", "98.7"): mended, so a number is the same number on both sides.
_SPLIT_NUMBER = re.compile(r"(\d)([.,]) (\d)")


def qags(root: Path) -> Iterator[Statement]:
    for part in ("cnndm", "xsum"):
        path = root / "qags" / "data" / f"mturk_{part}.jsonl"
        for a, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            row = json.loads(line)
            article = hashlib.sha256(row["article"].encode()).hexdigest()[:16]
            passages = _paged(f"qags-{part}-{a}", "", _SPLIT_NUMBER.sub(r"\1\2\3", row["article"]))
            previous = ""
            for n, sentence in enumerate(row["summary_sentences"]):
                votes = [
                    {"yes": SUPPORTED, "no": NOT_SUPPORTED}[r["response"]] for r in sentence["responses"]
                ]
                text = sentence["sentence"].strip()
                yield Statement(
                    f"qags-{part}-{a}-{n}", SUMMARIES, f"qags-{part}", f"qags:{article}", text, previous,
                    passages, _majority(votes),
                )  # fmt: skip
                previous = text


def load(root: Path) -> list[Statement]:
    """Every statement of the sets under root (missing(root) must be empty)."""
    return [*lfqa(root), *qags(root)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--fetch", action="store_true", help="download the pinned files (needs github.com)")
    args = parser.parse_args(argv)
    root = args.dir or default_dir()
    if args.fetch:
        fetch(root)
    problems = missing(root)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    items = load(root)
    for name in sorted({i.set for i in items}):
        chosen = [i for i in items if i.set == name]
        for half in ("dev", "test"):
            part = [i for i in chosen if i.split == half]
            counts = Counter(i.label for i in part)
            print(
                f"{name} {half}: {len(part)} statements, {len({i.group for i in part})} groups, {dict(counts)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
