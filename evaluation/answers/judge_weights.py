"""Term rarity in the collection for the heuristic judge (evaluation.answers.judge_support.TermWeights).

The judge weighs a statement's terms by how rare they are; over the few passages of one question that says
little, so an answer evaluation gives it document frequencies from the collection. Counting every page per
evaluation would not scale (a million pages), so the frequencies come from a bounded sample: the first
SAMPLE_DOCUMENTS documents of the collections in external-id order (the unique (collection, external_id) index
serves that read without a scan), up to SAMPLE_PAGES pages. The result is kept in this process per (collection
uid, content_version), so it is computed once per content version and follows every change to the documents.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from evaluation.answers.judge_support import TermWeights
from goldenset.models import Collection, Document, Page

SAMPLE_DOCUMENTS = 2000  # documents read for the sample, over all the collections of one evaluation
SAMPLE_PAGES = 2000  # pages read at most
CACHED = 16  # content versions kept in this process (the least recently used dropped first)

_cache: OrderedDict[tuple[tuple[str, int], ...], TermWeights] = OrderedDict()
_lock = threading.Lock()


def _key(collections: Sequence[Collection]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((str(c.uid), c.content_version) for c in collections))


def _sample_texts(collections: Sequence[Collection]) -> list[str]:
    per_collection = max(1, SAMPLE_DOCUMENTS // len(collections))
    texts: list[str] = []
    for collection in collections:
        documents = dict(
            Document.objects.filter(collection=collection)
            .order_by("external_id")
            .values_list("id", "title")[:per_collection]
        )
        pages = (
            Page.objects.filter(document_id__in=list(documents))
            .order_by("document_id", "number")
            .values_list("document_id", "text")[: max(1, SAMPLE_PAGES // len(collections))]
        )
        texts.extend(f"{documents[document]}\n{text}" for document, text in pages)
    return texts


def collection_term_weights(collections: Sequence[Collection]) -> TermWeights | None:
    """Document frequencies of the judge's terms over a sample of these collections' pages (None when they
    hold no page: the judge then weighs terms over the passages at hand)."""
    if not collections:
        return None
    key = _key(collections)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    texts = _sample_texts(collections)
    if not texts:
        return None
    weights = TermWeights.from_texts(texts)
    with _lock:
        _cache[key] = weights
        while len(_cache) > CACHED:
            _cache.popitem(last=False)
    return weights
