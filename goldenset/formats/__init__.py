"""Golden sets in the ecosystem's formats, read and written. Plain Python (and PyYAML): no Django import.

One vocabulary everywhere (REST `format`, CLI `--format`, the dashboard): `okfsmith` (golden.json), `csv`,
`tsv`, `trec` (topics + qrels), `ragas`, `deepeval`, `promptfoo`, `phoenix`. BEIR stays a folder
(`import_beir`). Every reader gives `Entry`s, each with the line (or record) it came from, and refuses a file
whole, naming every bad line or record (`import-invalid`; up to MAX_PROBLEMS, `Problems`); every writer gives the file's text
and warnings naming what the format cannot carry (never dropped silently). Each module documents its mapping.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from evalsite.errors import EvalsiteError

FORMATS = ("okfsmith", "csv", "tsv", "trec", "ragas", "deepeval", "promptfoo", "phoenix")
ENTRY_FIELDS = frozenset({"key", "expected_document_ids", "grades", "reference_answer", "tags", "answerable"})
# The formats whose tools score against passages' text, not ids: their exports carry the expected documents'
# passages (Ragas reference_contexts, DeepEval context, Phoenix output.contexts; goldenset.exporters).
PASSAGE_FORMATS = ("ragas", "deepeval", "phoenix")


@dataclass(frozen=True)
class Entry:
    """A golden entry as a file carries it. `contexts`: reference passages given by text only (Ragas
    reference_contexts, DeepEval context), matched to or created as documents when imported; `where` says
    where in the file it was ("line 12", "record 3") for the errors raised after parsing."""

    question: str
    key: str = ""
    expected_document_ids: tuple[str, ...] = ()
    grades: dict[str, int] | None = None  # None: the file has no grades (an entry it replaces keeps its own)
    reference_answer: str = ""
    tags: tuple[str, ...] = ()
    answerable: bool = True
    contexts: tuple[str, ...] = ()
    where: str = field(default="", compare=False)
    # The fields the file holds for this entry (None: all of them). An import keeps the others as the entry
    # it replaces has them (a TREC file has no reference answers: importing one must not erase them).
    carried: frozenset[str] | None = field(default=None, compare=False)
    # The record's fields the reader does not know (a newer release's additions), left out: named in the
    # import's warnings.
    ignored: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Written:
    """An export: file name -> text (TREC writes two files), and what the format could not carry."""

    files: dict[str, str]
    warnings: list[str]


class FormatError(EvalsiteError):
    status_code = 400


def fail(where: str, message: str, **details) -> FormatError:
    return FormatError("import-invalid", f"{where}: {message}", details={"where": where, **details})


def string_list(value: Any, where: str, name: str) -> tuple[str, ...]:
    """A list of ids (strings, or integers read as strings) from a parsed file; () for none."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(v, str | int) and not isinstance(v, bool) for v in value
    ):
        raise fail(where, f"{name}: expected a list of strings.")
    return tuple(str(v) for v in value)


def file_grades(value: Any, where: str, name: str) -> dict[str, Any]:
    """An entry's grades as a file holds them, each a whole number: as written (2), or as a float whose value is
    whole (2.0, 0.0: pandas writes every number of a column with a gap as a float, so Phoenix's CSV download
    of a dataset does), or as the text of either ("2", "2.0" in a CSV cell). An empty cell or a null is a grade
    the record does not give (pandas' gap). Grade 0 stays 0: judged not relevant, never dropped. A fraction, a
    boolean or any other value is left as it is, for the entry's checks to name (goldenset.text.grades_problem).
    Not an object: FormatError naming `name`."""
    if not isinstance(value, dict):
        raise fail(where, f"{name}: expected an object of document id -> grade.")
    out: dict[str, Any] = {}
    for document, grade in value.items():
        if grade is None or (isinstance(grade, str) and not grade.strip()):
            continue
        out[str(document)] = whole_grade(grade)
    return out


def whole_grade(grade: Any) -> Any:
    """2, 2.0, "2" and "2.0" as 2; anything else as it is."""
    if isinstance(grade, str):
        text = grade.strip()
        try:
            grade = int(text) if text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            return grade
    if isinstance(grade, float) and math.isfinite(grade) and grade.is_integer():
        return int(grade)
    return grade


def shown(value: Any, show: Callable[[Any], str] = repr) -> str:
    """A value from a file for a message, cut to 60 characters; a list or an object only by its kind (it may
    be large, or nested too deep to write)."""
    if isinstance(value, list | dict):
        return "a list" if isinstance(value, list) else "an object"
    text = show(value)
    return text if len(text) <= 60 else text[:57] + "..."


MAX_PROBLEMS = 50  # bad rows listed at most (the preview shows them all)


class Problems:
    """Every bad row of a file, up to MAX_PROBLEMS, raised together once the file is read: one alone as it is,
    several as one error whose details are the first's and list each (`errors`: [{code, where or record and
    line, message}]). Its code is `code`, or with code=None (problems of several kinds: a batch of golden
    entries) the first problem's code and status."""

    def __init__(
        self, error_type: type[EvalsiteError] = FormatError, code: str | None = "import-invalid"
    ) -> None:
        self.error_type, self.code = error_type, code
        self.found: list[EvalsiteError] = []

    @contextmanager
    def row(self) -> Iterator[None]:
        try:
            yield
        except self.error_type as exc:
            self.found.append(exc)
            if len(self.found) >= MAX_PROBLEMS:
                raise self.error() from None

    def error(self) -> EvalsiteError:
        if len(self.found) == 1:
            return self.found[0]
        first = self.found[0]
        more = "+" if len(self.found) >= MAX_PROBLEMS else ""
        shown = "; ".join(e.message for e in self.found[:3]) + (" ..." if len(self.found) > 3 else "")
        listed = [{"code": e.code, **e.details, "message": e.message} for e in self.found]
        return self.error_type(
            self.code or first.code,
            f"{len(self.found)}{more} problems: {shown}",
            details={**first.details, "errors": listed},
            status=None if self.code else first.status_code,
        )

    def check(self) -> None:
        if self.found:
            raise self.error()


def decode(data: bytes | str, name: str = "the file") -> str:
    """UTF-8 text (a BOM dropped) without NUL, or import-invalid naming the line of the first bad byte or NUL
    (the rule on NUL, evalsite.bounded_json.nul_field, for every file a tenant sends)."""
    if isinstance(data, str):
        text = data
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise fail(
                f"line {line}", f"{name} is not UTF-8 (byte 0x{data[exc.start]:02x}).", line=line
            ) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise fail(f"line {line}", "NUL characters are not allowed.", line=line)
    return text.removeprefix("\ufeff")


# Cells pandas' read_csv reads by default as a missing value (its STR_NA_VALUES) or a boolean, and spreadsheets
# as a boolean (in any case): a key spelled so is not read back as text.
_NOT_READ_AS_TEXT = frozenset(
    word.lower()
    for word in (
        "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A",
        "NA", "NULL", "NaN", "None", "n/a", "nan", "null", "true", "false",
    )
)  # fmt: skip


def text_cell(value: str) -> str:
    """A key as a CSV or TSV cell that pandas' default read_csv and spreadsheets read as that text. As is,
    unless a reader would take it for something else: a number (Python's float reads it: 6412345678901234567,
    007, 1e5, -2.5, inf; pandas and spreadsheets would turn 6412345678901234567 into 6.41e+18), a word pandas
    reads as missing or a boolean (NA, null, None, n/a, nan, true, FALSE, ...), text with leading or trailing
    whitespace, or text starting with a double quote. Such a key is written as a JSON string: in double quotes,
    `"6412345678901234567"`, which every reader keeps as text. An empty key (none) stays empty."""
    if value and (_reads_as_number(value) or value.lower() in _NOT_READ_AS_TEXT or value != value.strip()
                  or value.startswith('"')):  # fmt: skip
        return json.dumps(value, ensure_ascii=False)
    return value


def _reads_as_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def read_text_cell(cell: str) -> str | None:
    """The key a text_cell holds (surrounding whitespace stripped first): a cell starting with a double quote is
    a JSON string; None when it is not one."""
    cell = cell.strip()
    if not cell.startswith('"'):
        return cell
    try:
        value = json.loads(cell)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


# A CSV or TSV cell's length, at most: well above the longest a golden entry or a label holds (1,000 expected
# document ids of 300 characters are about 310,000; a question 4,000; a reference answer, an answer or a
# statement 20,000), and above the csv module's own default (131,072), which refused such entries.
MAX_CSV_FIELD_CHARS = 1_000_000


# The csv module has one field limit for the whole process. It is set here, once, as this package is imported,
# and every CSV in the product is read through csv_rows (tests/goldenset/test_csv_limit.py refuses csv.reader and
# csv.DictReader anywhere else), so the limit is the same in every process whichever reader ran first.
csv.field_size_limit(MAX_CSV_FIELD_CHARS)


def csv_rows(text: str, delimiter: str = ",") -> Iterator[tuple[int, list[str] | FormatError]]:
    """(line, cells) of each row of a CSV (or, with a tab, TSV) text, `line` where the row ends. A row the csv
    module cannot read, or one with a cell longer than MAX_CSV_FIELD_CHARS, comes as its FormatError naming the
    line (and the limit), and is the last: what follows a broken quote cannot be trusted."""
    rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:
            line = rows.line_num
            if "field limit" in str(exc):  # "field larger than field limit (N)"
                yield (
                    line,
                    fail(
                        f"line {line}",
                        f"a cell is longer than {MAX_CSV_FIELD_CHARS:,} characters, the limit.",
                        line=line,
                        limit=MAX_CSV_FIELD_CHARS,
                    ),
                )
            else:
                yield (
                    line,
                    fail(f"line {line}", f"not {'CSV' if delimiter == ',' else 'TSV'} ({exc}).", line=line),
                )
            return
        yield rows.line_num, row


def csv_dicts(text: str) -> tuple[list[str], Iterator[tuple[int, dict[str, str] | FormatError]]]:
    """A CSV with a header: its column names (stripped), and (line, {column: cell}) of each following row that
    is not blank, as csv_rows gives them (a row it cannot read as its FormatError, the last). A row with fewer
    cells than columns has "" for the rest; one with more is a FormatError naming the line."""
    rows = csv_rows(text)
    _, header = next(rows, (1, []))
    if isinstance(header, FormatError):
        raise header
    names = [cell.strip() for cell in header]

    def records() -> Iterator[tuple[int, dict[str, str] | FormatError]]:
        for line, cells in rows:
            if isinstance(cells, FormatError):
                yield line, cells
            elif len(cells) > len(names):
                yield (
                    line,
                    fail(f"line {line}", f"expected {len(names)} cells, found {len(cells)}.", line=line),
                )
            elif any(cell.strip() for cell in cells):
                yield line, dict(zip(names, [*cells, *[""] * (len(names) - len(cells))], strict=True))

    return names, records()


def read_entries(fmt: str, data: bytes | str, *, qrels: bytes | str | None = None) -> list[Entry]:
    """The entries of a file in `fmt` (trec: the topics, with `qrels` beside them)."""
    from goldenset.formats import json_rows, tabular, trec, yaml_tests  # late: they import this package

    readers: dict[str, Callable[[str], list[Entry]]] = {
        "csv": lambda text: tabular.read(text, ","),
        "tsv": lambda text: tabular.read(text, "\t"),
        "ragas": json_rows.read_ragas,
        "deepeval": json_rows.read_deepeval,
        "phoenix": json_rows.read_phoenix,
        "promptfoo": yaml_tests.read,
    }
    if fmt == "okfsmith":  # golden_files reads its own bytes (its errors: golden-invalid, golden-schema)
        return json_rows.read_okfsmith(data)
    if fmt == "trec":
        if qrels is None:
            raise FormatError(
                "import-invalid", "trec: the qrels file is required beside the topics.", details={}
            )
        return trec.read(decode(data, "the topics file"), decode(qrels, "the qrels file"))
    if fmt not in readers:
        raise FormatError(
            "import-invalid",
            f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}.",
            details={"field": "format"},
        )
    return readers[fmt](decode(data))


def write_entries(fmt: str, entries: Sequence[Entry], *, name: str = "golden") -> Written:
    from goldenset.formats import json_rows, tabular, trec, yaml_tests  # late: they import this package

    writers: dict[str, Callable[[Sequence[Entry], str], Written]] = {
        "okfsmith": json_rows.write_okfsmith,
        "csv": lambda e, n: tabular.write(e, n, ","),
        "tsv": lambda e, n: tabular.write(e, n, "\t"),
        "trec": trec.write,
        "ragas": json_rows.write_ragas,
        "deepeval": json_rows.write_deepeval,
        "phoenix": json_rows.write_phoenix,
        "promptfoo": yaml_tests.write,
    }
    if fmt not in writers:
        raise FormatError(
            "import-invalid",
            f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}.",
            details={"field": "format"},
        )
    return writers[fmt](entries, name)


def detect_format(filename: str, data: bytes | str) -> str:
    """The format a file most likely holds, from its name and first content (an upload without `format`): a
    tool's own CSV by its header's columns, JSON rows by their field names."""
    lower = filename.lower()
    if ".topics" in lower or lower.startswith("topics"):
        return "trec"
    head = (data[:4096].decode("utf-8", "replace") if isinstance(data, bytes) else data[:4096]).lstrip(
        "\ufeff "
    )
    if lower.endswith((".csv", ".tsv")):
        return _tool_csv(head) or ("tsv" if lower.endswith(".tsv") else "csv")
    if lower.endswith((".yaml", ".yml")):
        return "promptfoo"
    if head.startswith("<top>") or lower.endswith((".topics", ".trec")):
        return "trec"
    if head.startswith(("[", "{")):
        for markers, fmt in (
            (('"user_input"',), "ragas"),
            (('"ground_truth"',), "ragas"),  # Ragas 0.1's columns (question, contexts, ground_truth, answer)
            (('"expected_output"',), "deepeval"),
            (('"testCases"',), "deepeval"),  # the test run DeepEval's evaluate() writes
            (('"input"',), "phoenix"),
            (('"examples"', '"dataset_id"'), "phoenix"),  # Phoenix's REST answer {"data": {"examples": ...}}
        ):
            if all(marker in head for marker in markers):
                return fmt
        return "okfsmith"
    return _tool_csv(head) or "okfsmith"


def _tool_csv(head: str) -> str | None:
    """The tool whose CSV this is, from the columns of its header row (None: evalsite's own CSV, or no CSV)."""
    columns = {cell.strip().lower() for cell in head.split("\n", 1)[0].split(",")}
    if "user_input" in columns or {"question", "ground_truth"} <= columns:
        return "ragas"
    if {"input", "expected_output"} <= columns:
        return "deepeval"
    if "input.question" in columns or {"node_id", "input.query"} & columns:
        return "phoenix"
    return None
