"""Keys in the CSV files evalsite writes (a run's CSV, the dashboard's golden-set export, the csv and tsv golden
formats) stay text for pandas and spreadsheets: a key they would read as a number (6412345678901234567 became
6.412345678901235e+18) or a missing value is written as a JSON string, and reads back as the key."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from evaluation.configs import parse_configs
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset.formats import Entry, FormatError, read_entries, read_text_cell, text_cell, write_entries
from goldenset.models import GoldenEntry
from goldenset.services import EntryInput
from tests.support import add_entries

NUMERIC = "6412345678901234567"


def test_a_key_a_reader_would_not_keep_as_text_is_a_json_string():
    quoted = {
        NUMERIC: '"6412345678901234567"',
        "007": '"007"',
        "-1.5e3": '"-1.5e3"',
        "inf": '"inf"',
        "NA": '"NA"',
        "null": '"null"',
        "TRUE": '"TRUE"',
        " padded": '" padded"',
        '"quoted"': '"\\"quoted\\""',
    }
    for key, cell in quoted.items():
        assert (text_cell(key), read_text_cell(cell)) == (cell, key)
    for key in ("faq-1", "q 7", "nq-6412345678901234567", "Khloé", ""):
        assert text_cell(key) == key and read_text_cell(key) == key
    assert read_text_cell('"unclosed') is None and read_text_cell('"1" "2"') is None


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_the_golden_formats_write_numeric_keys_as_json_strings_and_read_them_back(fmt):
    entries = [
        Entry(question="Numeric?", key=NUMERIC),
        Entry(question="Missing?", key="NA"),
        Entry(question="Plain?", key="faq-1"),
    ]
    (text,) = write_entries(fmt, entries).files.values()
    sep = "," if fmt == "csv" else "\t"
    rows = text.splitlines()[1:]
    assert [row.split(sep)[0] for row in rows] == ['"""6412345678901234567"""', '"""NA"""', "faq-1"]
    assert [e.key for e in read_entries(fmt, text)] == [NUMERIC, "NA", "faq-1"]


def test_a_key_cell_opening_a_quote_it_does_not_close_is_refused_naming_the_key():
    with pytest.raises(FormatError) as caught:
        read_entries("csv", 'key,question\n"""6412",What?\n')  # the key cell: "6412
    assert "key: a cell starting with" in caught.value.message and "line 2" in caught.value.message


@pytest.fixture
def keyed(world) -> list[GoldenEntry]:
    return add_entries(
        world.collection,
        EntryInput(question="How long is the refund window?", expected_document_ids=["refunds"], key=NUMERIC),
        EntryInput(question="When does express shipping arrive?", expected_document_ids=["shipping"], key="q-ship"),
        EntryInput(question="What does the warranty cover?", expected_document_ids=["warranty"]),
    )  # fmt: skip


def test_the_run_csv_writes_a_numeric_key_as_text(alice, world, keyed):
    _, (run,) = evaluate_retrieval(
        tenant=world.tenant,
        collections=[world.collection],
        ks=[1, 3],
        configs=parse_configs([{"search_type": "FullText"}], available_rerankers()),
    )
    body = alice.get(reverse("dashboard:run-csv", args=[run.pk])).content.decode()
    lines = body.splitlines()
    assert lines[1].split(",")[2:5] == [
        '"""6412345678901234567"""',
        "handbook",
        "How long is the refund window?",
    ]
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [r["entry_key"] for r in rows] == ['"6412345678901234567"', "q-ship", ""]  # no key: empty
    assert json.loads(rows[0]["entry_key"]) == NUMERIC


def test_the_dashboards_golden_csv_writes_a_numeric_key_as_text_and_imports_back(alice, world, keyed):
    body = alice.get(reverse("dashboard:golden-csv", args=[world.collection.slug])).content
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [r["key"] for r in rows] == ['"6412345678901234567"', "q-ship", ""]
    assert f'{keyed[0].pk},"""6412345678901234567""",' in body.decode()
    assert [e.key for e in read_entries("csv", body.decode())] == [NUMERIC, "q-ship", ""]
