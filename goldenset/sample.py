"""A starter golden set written from a collection's own pages (okfsmith's `--init-sample`). Plain Python.

Self-consistent by construction: each question is a fixed template filled only with its page's own most
distinctive words (by tf-idf within the collection), and its expected answer is the page's first sentence,
so a healthy collection passes it. Curators edit these into real questions from there.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from goldenset.golden_files import GoldenRecord
from goldenset.text import first_sentence, normalize_question, tokenize
from goldenset.vocabulary.stopwords import SAMPLE_STOPWORDS

# Words too common to make a question distinctive: goldenset.vocabulary.stopwords.
STOPWORDS = SAMPLE_STOPWORDS


@dataclass(frozen=True)
class SamplePage:
    document_id: str
    title: str
    text: str


def _slug(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", value.casefold()).strip("-") or "doc"


def starter_records(
    pages: Sequence[SamplePage], count: int, terms_per_question: int = 3
) -> list[GoldenRecord]:
    """One record for each of the first `count` pages that have enough distinctive words."""
    documents = [
        [t for t in tokenize(p.text) if t not in STOPWORDS and not t.isdigit() and len(t) > 2] for p in pages
    ]
    df = Counter(term for words in documents for term in set(words))
    n = len(documents)
    records: list[GoldenRecord] = []
    seen_questions: set[str] = set()
    seen_ids: set[str] = set()
    for page, words in zip(pages, documents, strict=True):
        if len(records) >= count:
            break
        tf = Counter(words)
        first_seen = {term: i for i, term in reversed(list(enumerate(words)))}
        ranked = sorted(tf, key=lambda t: (-tf[t] * math.log((n + 1) / df[t]), first_seen[t]))
        terms = sorted(ranked[:terms_per_question], key=first_seen.__getitem__)
        if len(terms) < terms_per_question:
            continue
        subject = page.title.strip() or page.document_id
        question = f"What does {subject} say about {', '.join(terms[:-1])} and {terms[-1]}?"
        if normalize_question(question) in seen_questions:
            continue
        seen_questions.add(normalize_question(question))
        # Distinct document ids can share a slug ("a/b", "a-b"): number the later ones, so ids stay unique.
        base = record_id = f"sample-{_slug(page.document_id)}"
        suffix = 2
        while record_id in seen_ids:
            record_id, suffix = f"{base}-{suffix}", suffix + 1
        seen_ids.add(record_id)
        records.append(
            GoldenRecord(
                id=record_id,
                question=question,
                expected_answer=first_sentence(page.text),
                must_cite=(page.document_id,),
                tags=("sample",),
            )
        )
    return records
