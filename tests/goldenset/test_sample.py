"""Unit tests for goldenset.sample, the --init-sample starter set: pure Python, no database."""

from __future__ import annotations

import re

from goldenset.golden_files import GoldenRecord, dump_golden, parse_golden
from goldenset.sample import SamplePage, starter_records
from goldenset.text import first_sentence, normalize_question, tokenize

QUESTION = re.compile(
    r"^What does (?P<subject>.+) say about (?P<terms>.+), (?P<last>[^,]+) and (?P<final>[^,]+)\?$"
)
TEMPLATE_WORDS = {"what", "does", "say", "about", "and"}

PAGES = [
    SamplePage(
        "policies/refunds",
        "Refund Policy",
        "Customers get a full refund within thirty days of purchase. Refunds are paid back to the original card; "
        "refunds for gift cards are paid as store credit.",
    ),
    SamplePage(
        "shipping",
        "Shipping Times",
        "Orders ship within two business days. Express shipping arrives the next day, and express orders placed "
        "before noon ship the same day.",
    ),
    SamplePage(
        "warranty",
        "Device Warranty",
        "Every device carries a two-year warranty covering manufacturing defects. The warranty does not cover "
        "accidental damage, water damage or batteries.",
    ),
    SamplePage(
        "privacy",
        "Privacy Notice",
        "We store account data in Frankfurt. Account data is deleted ninety days after an account is closed; "
        "backups of account data expire after a year.",
    ),
    SamplePage("tiny", "Tiny", "Too short."),
    SamplePage(
        "café-menu",
        "Café Menu",
        "Our café serves espresso, cortado and flat white. Espresso beans are roasted weekly in Zürich; cortado "
        "uses whole milk.",
    ),
]


def test_each_question_uses_only_its_own_pages_words():
    records = starter_records(PAGES, count=10)
    assert len(records) == 5  # "tiny" has too few distinctive words
    by_document = {p.document_id: p for p in PAGES}
    for record in records:
        page = by_document[record.must_cite[0]]
        own_words = set(tokenize(page.text)) | set(tokenize(page.title))
        foreign = set(tokenize(record.question)) - TEMPLATE_WORDS - own_words
        assert not foreign, (record.question, foreign)
        match = QUESTION.match(record.question)
        assert match and match["subject"] == page.title, record.question
        terms = [*match["terms"].split(", "), match["last"], match["final"]]
        assert all(t in tokenize(page.text) for t in terms), record.question


def test_the_starter_records_in_full():
    assert starter_records(PAGES, count=3) == [
        GoldenRecord(
            id="sample-policies-refunds",
            question="What does Refund Policy say about customers, refunds and paid?",
            expected_answer="Customers get a full refund within thirty days of purchase.",
            must_cite=("policies/refunds",),
            tags=("sample",),
        ),
        GoldenRecord(
            id="sample-shipping",
            question="What does Shipping Times say about orders, ship and express?",
            expected_answer="Orders ship within two business days.",
            must_cite=("shipping",),
            tags=("sample",),
        ),
        GoldenRecord(
            id="sample-warranty",
            question="What does Device Warranty say about every, warranty and damage?",
            expected_answer="Every device carries a two-year warranty covering manufacturing defects.",
            must_cite=("warranty",),
            tags=("sample",),
        ),
    ]


def test_the_expected_answer_is_the_pages_first_sentence_and_must_cite_its_document():
    for record in starter_records(PAGES, count=10):
        page = next(p for p in PAGES if p.document_id == record.must_cite[0])
        assert record.expected_answer == first_sentence(page.text)
        assert page.text.startswith(record.expected_answer)
        assert record.must_cite == (page.document_id,)
        assert record.tags == ("sample",)


def test_the_count_is_respected():
    assert starter_records(PAGES, count=0) == []
    assert [r.must_cite[0] for r in starter_records(PAGES, count=2)] == ["policies/refunds", "shipping"]
    assert len(starter_records(PAGES, count=4)) == 4
    assert len(starter_records(PAGES, count=100)) == 5
    assert starter_records([], count=5) == []


def test_it_is_deterministic():
    first = dump_golden(starter_records(PAGES, count=10))
    assert all(dump_golden(starter_records(list(PAGES), count=10)) == first for _ in range(5))


def test_the_starter_file_always_loads_even_when_ids_or_titles_collide():
    """Ids are slugs of document ids, which can collide; the file must still be a valid golden.json."""
    text = "Alpha beta gamma delta. Alpha beta gamma epsilon."
    pages = [
        SamplePage("a/b", "Same Title", text),
        SamplePage("a-b", "Same  Title", text),  # same question up to spacing
        SamplePage("A_B", "Other Title", text),
        SamplePage("ab", "Fourth", "Kappa lambda sigma. Kappa lambda omega."),
    ]
    records = starter_records(pages, count=10)
    assert parse_golden(dump_golden(records)) == records
    assert len({r.id for r in records}) == len(records)
    assert len({normalize_question(r.question) for r in records}) == len(records)
    assert [(r.id, r.must_cite) for r in records] == [
        ("sample-a-b", ("a/b",)),
        ("sample-a-b-2", ("A_B",)),
        ("sample-ab", ("ab",)),
    ]


def test_an_untitled_page_is_asked_about_by_its_document_id():
    (record,) = starter_records([SamplePage("npl-17", "", "Microwave dielectric measurement of liquids.")], 1)
    assert record.question == "What does npl-17 say about microwave, dielectric and measurement?"
