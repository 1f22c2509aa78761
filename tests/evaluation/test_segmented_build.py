"""Postings built in segments within a memory budget (search.build): the same arrays whatever the budget, in
memory or written to a folder, and a peak memory that stays under the budget for a corpus several times its
size. Pure: no database."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from evaluation.retrieval.search import build as build_module
from evaluation.retrieval.search.bm25 import BM25Index, BM25Params
from evaluation.retrieval.search.build import build_postings
from evaluation.retrieval.search.postings import Postings, open_first_order

ROOT = Path(__file__).resolve().parents[2]


def _pages(count: int, seed: int = 3, vocabulary: int = 5_000) -> list[list[str]]:
    """Zipf-like pages: a few words on most pages (common terms), a long tail, repeats within a page."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocabulary)] + ["ünï", "日本", "straße"]
    weights = 1 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    return [
        [words[i] for i in rng.choice(len(words), size=int(rng.integers(0, 40)), p=weights)]
        for _ in range(count)
    ]


def _assert_same(got: Postings, want: Postings) -> None:
    for item in fields(Postings):
        if item.name in ("_columns", "_folder"):
            continue
        a, b = getattr(got, item.name), getattr(want, item.name)
        if item.name == "_first_order" and a is None:  # never mapped by open(): compared from its file
            continue
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, item.name
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), item.name
        else:
            assert a == b, item.name


def test_any_budget_gives_the_arrays_of_one_segment_in_memory_and_in_a_folder(tmp_path, monkeypatch):
    pages = _pages(6_000)
    whole = build_postings(pages)  # 2 GiB: one segment
    segments = []
    real = build_module._sorted_segment

    def counted(*args):
        segments.append(1)
        return real(*args)

    monkeypatch.setattr(build_module, "_sorted_segment", counted)
    small = build_postings(pages, budget=200_000)  # segments of about 1,500 postings' worth: dozens
    assert len(segments) > 10
    _assert_same(small, whole)
    folder = tmp_path / "postings"
    folder.mkdir()
    progress: list[tuple[str, int, int]] = []
    on_disk = build_postings(
        lambda: iter(pages), folder=folder, budget=200_000, progress=lambda *a: progress.append(a)
    )
    _assert_same(on_disk, whole)
    assert on_disk.folder == folder and isinstance(on_disk.rows.base, np.memmap)  # mapped from its files
    assert np.array_equal(open_first_order(folder), whole._first_order)
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # the spilled segments are gone
    assert json.loads((folder / "postings.json").read_text()) == {"format": 2, "salt": 0}
    merged = [done for stage, done, total in progress if stage == "merge"]
    assert merged and merged == sorted(merged) and merged[-1] == len(whole.rows)
    # and the scores, bit for bit, both variants
    rank = np.arange(len(pages), dtype=np.int64)
    for variant in ("lucene", "okapi"):
        a, b = BM25Index(on_disk, BM25Params(variant)), BM25Index(whole, BM25Params(variant))
        for query in (["w0"], ["w1", "w7", "w1"], ["straße", "w3"], ["absent"]):
            assert a.scores(query).tobytes() == b.scores(query).tobytes()
            assert all(
                x.tobytes() == y.tobytes()
                for x, y in zip(
                    a.top_documents(query, 20, rank), b.top_documents(query, 20, rank), strict=False
                )
            )


def test_empty_pages_and_an_empty_corpus(tmp_path):
    assert build_postings([]).size == 0 and build_postings([]).terms == 0
    pages = [[], ["a"], [], ["a", "b"], []]
    _assert_same(build_postings(pages, budget=1), build_postings(pages))
    index = BM25Index(build_postings(pages, budget=1), BM25Params())
    assert (
        index.scores(["a"])[[1, 3]].tolist()
        == BM25Index(build_postings(pages), BM25Params()).scores(["a"])[[1, 3]].tolist()
    )


def test_terms_colliding_on_their_hash_start_the_build_over_with_another_salt(monkeypatch):
    pages = _pages(2_000)
    want = build_postings(pages)
    real = build_module.term_hash

    def colliding(term: str, salt: int = 0) -> int:  # under salt 0, "w5" hashes as "w9" does
        return real("w9", salt) if term == "w5" and salt == 0 else real(term, salt)

    monkeypatch.setattr(build_module, "term_hash", colliding)
    for budget in (1 << 30, 150_000):  # within one segment, and across segments (the second hash tells)
        got = build_postings(pages, budget=budget)
        assert got.salt == 1
        assert (
            got.term_ids(["w5", "w9"]).tolist() != [] and len(set(got.term_ids(["w5", "w9"]).tolist())) == 2
        )
        assert sorted(got.document_frequencies(["w5", "w9"]).items()) == sorted(
            want.document_frequencies(["w5", "w9"]).items()
        )
    with pytest.raises(ValueError, match="callable"):
        build_postings(iter(pages))  # a one-shot iterator cannot be read again


def test_the_memory_budget_holds_for_a_corpus_several_times_its_size(tmp_path):
    """A build of 150,000 pages (about 7 million postings, which one segment would hold in about 440 MiB)
    under a 64 MiB budget, in a fresh process: its peak memory above what it held before the build stays
    under the budget, and the arrays equal a build of the same pages with the default budget."""
    script = ROOT / "benchmarks" / "build_memory_bench.py"
    result = subprocess.run(
        [
            sys.executable,
            str(script),
            "--check",
            "--pages",
            "300000",
            "--budget",
            "64M",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["postings"] > 6_000_000
    assert figures["one_segment_estimate"] > 4 * figures["budget"]  # the corpus is several budgets' worth
    assert figures["segments"] >= 4
    assert figures["peak_above"] <= figures["budget"], figures
    assert figures["identical"] is True
