"""Golden sets out: a collection's entries in any format (goldenset.formats), okfsmith's golden.json, and its
starter sample.

Ragas, DeepEval and Phoenix score retrieval and answers against passages' text (Ragas `reference_contexts`,
DeepEval `context`, Phoenix `output.contexts`), not against evalsite's document ids: their exports carry each
expected document's passage beside its id, within bounds. The passage is the page the entry was written from
when that page is of an expected document (a generated entry), else the document's first page; it is cut at
PASSAGE_CHARS, and an entry carries at most PASSAGES_PER_ENTRY of them. What was cut is named in the export's
warnings. Imported back, the ids decide the expected documents; the passages are not searched for.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import QuerySet

from goldenset.formats import PASSAGE_FORMATS, Entry, Written, write_entries
from goldenset.golden_files import GoldenRecord, dump_golden
from goldenset.models import Collection, GoldenEntry, Page
from goldenset.sample import SamplePage, starter_records
from goldenset.vocabulary.chunks import chunks, cut_at_word

PASSAGES_PER_ENTRY = (
    20  # expected documents whose passage an entry carries, at most (an entry may expect 1,000)
)
PASSAGE_CHARS = 4_000  # a passage's characters, at most: a page is 2,000 by default (EVALSITE_PAGE_CHARS)


def golden_export(*, collection: Collection, fmt: str) -> Written:
    """The collection's golden set in `fmt`: its files and what the format cannot carry. Formats that score
    against passages' text (PASSAGE_FORMATS) carry the expected documents' passages."""
    golden = list(collection.golden_entries.order_by("created_at", "id"))
    passages = _passages(collection, golden) if fmt in PASSAGE_FORMATS else None
    entries = [
        Entry(
            question=e.question,
            key=e.key,
            expected_document_ids=tuple(e.expected_document_ids),
            grades=dict(e.grades or {}),
            reference_answer=e.reference_answer,
            tags=tuple(e.tags),
            answerable=e.answerable,
            contexts=passages[i] if passages is not None else (),
        )
        for i, e in enumerate(golden)
    ]
    written = write_entries(fmt, entries, name=f"{collection.slug}-golden")
    if passages is not None:
        written.warnings.extend(_cut_warnings(golden, passages))
    return written


def _passages(collection: Collection, golden: Sequence[GoldenEntry]) -> list[tuple[str, ...]]:
    """Each entry's expected documents' passages, in the order it expects them (a document with no page, none)."""
    wanted = {d for e in golden for d in e.expected_document_ids[:PASSAGES_PER_ENTRY]}
    first_pages: dict[str, str] = {}
    for chunk in chunks(sorted(wanted)):
        pages = Page.objects.filter(
            document__collection=collection, document__external_id__in=chunk, number=1
        )
        first_pages.update(pages.values_list("document__external_id", "text"))
    source_ids = {e.source_page_id for e in golden if e.source_page_id is not None}
    sources: dict[int, tuple[str, str]] = {}
    for chunk in chunks(sorted(source_ids)):
        rows = Page.objects.filter(pk__in=chunk).values_list("pk", "document__external_id", "text")
        sources.update((pk, (document_id, text)) for pk, document_id, text in rows)
    out = []
    for e in golden:
        own = sources.get(e.source_page_id) if e.source_page_id is not None else None
        texts = []
        for document_id in e.expected_document_ids[:PASSAGES_PER_ENTRY]:
            text = own[1] if own is not None and own[0] == document_id else first_pages.get(document_id)
            if text:
                texts.append(cut_at_word(text, PASSAGE_CHARS, ""))  # a verbatim prefix of the page
        out.append(tuple(texts))
    return out


def _cut_warnings(golden: Sequence[GoldenEntry], passages: Sequence[tuple[str, ...]]) -> list[str]:
    many = sum(1 for e in golden if len(e.expected_document_ids) > PASSAGES_PER_ENTRY)
    missing = sum(
        1 for e, texts in zip(golden, passages, strict=True)
        if len(texts) < min(len(e.expected_document_ids), PASSAGES_PER_ENTRY)
    )  # fmt: skip
    warnings = []
    if many:
        warnings.append(
            f"{many} entries expect more than {PASSAGES_PER_ENTRY} documents: their passages are those of the "
            f"first {PASSAGES_PER_ENTRY} (every id is written)."
        )
    if missing:
        warnings.append(
            f"{missing} entries expect a document that has no page (deleted since?): no passage for it."
        )
    return warnings


def golden_entries_dump(entries: QuerySet[GoldenEntry]) -> str:
    """Entries as an okfsmith golden.json, oldest first."""
    return dump_golden(
        GoldenRecord(
            id=e.key or None,
            question=e.question,
            expected_answer=e.reference_answer,
            must_cite=tuple(e.expected_document_ids),
            tags=tuple(e.tags),
            answerable=e.answerable,
        )
        for e in entries.order_by("created_at", "id").iterator()
    )


def golden_sample(*, collection: Collection, count: int = 10) -> str:
    """okfsmith's --init-sample: a starter golden.json from the collection's first page of each document."""
    pages = (
        Page.objects.filter(document__collection=collection, number=1)
        .select_related("document")
        .order_by("document__external_id")
    )
    sample = [SamplePage(p.document.external_id, p.document.title, p.text) for p in pages.iterator()]
    return dump_golden(starter_records(sample, count))
