"""Relevance judgments sent as a file: CSV with a header (`question_id`, `document_id`, `grade`, `rater`, `note`;
an empty grade is "cannot judge"), or TREC qrels (`qid iteration docid grade` lines, whitespace-separated, one
rater named for the whole file). Plain Python: no Django import.

The rows come out as the objects a JSON body would hold (evaluation.judgments.pools.judgment_rows checks each
field); what cannot be read as a row is named by its line here.
"""

from __future__ import annotations

from goldenset.formats import FormatError, Problems, csv_dicts, decode, fail, shown

__all__ = ["read_judgment_file"]

CSV_COLUMNS = ("question_id", "document_id", "grade", "rater", "note")


def read_judgment_file(data: bytes, rater: str | None = None) -> list[dict]:
    """The file's judgments as objects; CSV when its first line names the columns, else TREC qrels (which needs
    `rater`)."""
    text = decode(data)  # UTF-8 without NUL, as every file a tenant sends
    first = next((line for line in text.splitlines() if line.strip()), "")
    if "question_id" in first and "," in first:
        return _csv(text, rater)
    if not rater:
        raise fail("rater", "a qrels file names no rater: send rater with it.", field="rater")
    return _qrels(text, rater)


def _csv(text: str, rater: str | None) -> list[dict]:
    names, rows = csv_dicts(text)
    missing = {"question_id", "document_id", "grade"} - set(names)
    if missing:
        raise fail("line 1", f"the header lacks {', '.join(sorted(missing))}.", field="file", line=1)
    if "rater" not in names and not rater:
        raise fail("line 1", "no rater column: add one, or send rater with the file.", field="rater", line=1)
    problems = Problems()
    out = []
    for line, row in rows:
        with problems.row():
            if isinstance(row, FormatError):
                raise row
            grade_text = row["grade"].strip()
            if grade_text and not grade_text.isdigit():
                raise fail(f"line {line}", f"grade {shown(grade_text)} is not 0, 1, 2, 3 or empty.",
                           field="grade", line=line)  # fmt: skip
            out.append(
                {
                    "question_id": row["question_id"].strip(),
                    "document_id": row["document_id"].strip(),
                    "grade": int(grade_text) if grade_text else None,
                    "rater": (row.get("rater") or rater or "").strip(),
                    "note": row.get("note") or "",
                }
            )
    problems.check()
    return out


def _qrels(text: str, rater: str) -> list[dict]:
    problems = Problems()
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        with problems.row():
            parts = line.split()
            if len(parts) != 4:
                raise fail(f"line {number}", f"expected 4 columns (qid iteration docid grade), found {len(parts)}.",
                           field="file", line=number)  # fmt: skip
            qid, _, document, grade = parts
            if not grade.isdigit():
                raise fail(f"line {number}", f"grade {shown(grade)} is not 0, 1, 2 or 3.", field="grade",
                           line=number)  # fmt: skip
            out.append({"question_id": qid, "document_id": document, "grade": int(grade), "rater": rater})
    problems.check()
    return out
