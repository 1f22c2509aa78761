"""Synthetic corpora of any size with real word statistics, for the search benchmark's --scale runs.

Words are drawn from the unigram distribution of real collections (the shared Vaswani, Cranfield and ClapNQ
corpora when ../shared/datasets is there, else the ClapNQ copy in demo/), page lengths from their pages'
lengths, and one token in ten from a Zipf-distributed tail of made-up words, so the vocabulary keeps growing
with the corpus as a real one does (Heaps' law) instead of stopping at the sample's. Queries are the real
queries of those collections. Deterministic for a seed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "datasets"
SOURCES = [SHARED / "vaswani_npl", SHARED / "cranfield", SHARED / "clapnq"]
FALLBACK = [ROOT / "demo" / "clapnq"]
TAIL_SHARE = 0.1
TAIL_EXPONENT = 1.3


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def statistics(tokenize) -> tuple[list[str], np.ndarray, np.ndarray, list[str]]:
    """(words, their probabilities, page lengths, query texts) of the real collections available."""
    folders = [f for f in SOURCES if (f / "corpus.jsonl").is_file()] or FALLBACK
    counts: Counter[str] = Counter()
    lengths: list[int] = []
    queries: list[str] = []
    for folder in folders:
        for document in _jsonl(folder / "corpus.jsonl"):
            tokens = tokenize(f"{document.get('title', '')}\n{document['text']}")
            counts.update(tokens)
            lengths.append(len(tokens))
        queries += [q["text"] for q in _jsonl(folder / "queries.jsonl")]
    words = sorted(counts, key=lambda w: (-counts[w], w))
    frequency = np.array([counts[w] for w in words], dtype=np.float64)
    return words, frequency / frequency.sum(), np.array([n for n in lengths if n], dtype=np.int64), queries


def token_lists(pages: int, tokenize, seed: int = 0, chunk: int = 100_000):
    """Yield `pages` token lists (lists of str), generated chunk by chunk (memory stays bounded)."""
    words, probabilities, lengths, _ = statistics(tokenize)
    rng = np.random.default_rng(seed)
    vocabulary = np.array(words, dtype=object)
    tail_words: dict[int, str] = {}
    for start in range(0, pages, chunk):
        count = min(chunk, pages - start)
        sizes = rng.choice(lengths, size=count)
        total = int(sizes.sum())
        from_tail = rng.random(total) < TAIL_SHARE
        drawn = np.empty(total, dtype=object)
        drawn[~from_tail] = vocabulary[rng.choice(len(words), size=int((~from_tail).sum()), p=probabilities)]
        tail = rng.zipf(TAIL_EXPONENT, size=int(from_tail.sum())) % 50_000_000
        drawn[from_tail] = [tail_words.setdefault(n, f"zq{n:x}") for n in tail.tolist()]
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            yield drawn[a:b].tolist()


def queries(tokenize) -> list[str]:
    return statistics(tokenize)[3]
