"""One CSV field limit for every CSV the product reads, set once: the csv module's limit is process-wide, so a
reader that left it at Python's default (131,072) refused in one process what another process, where a golden
import had run first, accepted; and its csv.Error was a 500."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from goldenset.formats import MAX_CSV_FIELD_CHARS, FormatError

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("evalsite", "goldenset", "evaluation")
RAW_CSV = re.compile(r"\bcsv\.(reader|DictReader|field_size_limit)\(")


def test_no_product_module_reads_csv_but_through_the_one_reader():
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if path != ROOT / "goldenset" / "formats" / "__init__.py"
        for match in RAW_CSV.finditer(path.read_text())
    ]
    assert found == []


# The readers that read CSV with the csv module's own default limit, each in a fresh interpreter where nothing
# else has read a CSV first; each prints what it read of the long cell.
FRESH = {
    "judgments": "from evaluation.judgments.judgment_files import read_judgment_file\n"
    "print(len(read_judgment_file(data.encode())[0]['note']))",
    "clicks": "from evaluation.judgments.clicks import read_log\n"
    "print(len(read_log(data.encode(), 'csv')) * 200_000)",
}
FILES = {
    "judgments": "question_id,document_id,grade,rater,note\nq1,refunds,2,alice,{cell}\n",
    "clicks": "query,document_id,position,clicked,comment\nrefund policy,refunds,1,1,{cell}\n",
    "labels": "question_id,rater,metric,label,run_id,comment\nq1,alice,faithfulness,pass,run-1,{cell}\n",
}


@pytest.mark.parametrize("reader", sorted(FRESH))
def test_a_long_cell_reads_the_same_in_a_fresh_process_as_anywhere(reader):
    """200,000 characters: above Python's default field limit, below the product's."""
    script = f"import sys\ndata = sys.stdin.read()\n{FRESH[reader]}\n"
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=FILES[reader].format(cell="x" * 200_000),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "200000"


@pytest.mark.parametrize("reader", sorted(FILES))
def test_a_cell_over_the_limit_is_an_error_naming_the_line_and_the_limit(reader):
    from evaluation.judgments.clicks import read_log
    from evaluation.judgments.judgment_files import read_judgment_file
    from evaluation.judgments.labels import read_labels

    read = {
        "judgments": read_judgment_file,
        "clicks": lambda data: read_log(data, "csv"),
        "labels": read_labels,
    }[reader]
    data = FILES[reader].format(cell="x" * (MAX_CSV_FIELD_CHARS + 1)).encode()
    with pytest.raises(FormatError) as raised:
        read(data)
    assert raised.value.code == "import-invalid"
    assert raised.value.message == "line 2: a cell is longer than 1,000,000 characters, the limit."
    assert raised.value.details["line"] == 2 and raised.value.details["limit"] == MAX_CSV_FIELD_CHARS
