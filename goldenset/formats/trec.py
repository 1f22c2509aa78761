"""TREC topics with qrels: two files.

Topics, in either of the two forms IR collections ship:
- XML-ish `<top>` blocks: `<num> Number: 401`, `<title> ...`, optionally `<desc> Description: ...` and
  `<narr> Narrative: ...`; the title is the question (the desc when there is no title), the number its key.
  TREC-1 and -2 topics (`<head>`, `<dom> Domain:`, `<title> Topic: ...`, `<con>`, `<fac>`, `<def>`) read the
  same: their other fields are skipped and the title's "Topic:" label dropped;
- tab-separated `qid<TAB>query` lines.
Qrels: `qid iteration docid grade` lines, whitespace-separated (trec_eval's input). A grade above 0 makes the
document expected, with its grade (1, the default, is not stored); grade 0 is kept as a judgment (judged not
relevant: a grade of 0 for a document the entry does not expect), and a negative grade (trec_eval's "in the pool
but unjudged") is not kept. A topic no qrels line names is an entry without expected documents; a qrels line
whose topic is not in the topics is an error. Export writes the judged-not-relevant documents back as grade 0.
Export writes `<name>.topics.tsv` and `<name>.qrels`; reference answers and tags have no place in TREC files
and are named in the warnings.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from goldenset.formats import Entry, Problems, Written, fail, shown

_TOP = re.compile(r"<top>(.*?)</top>", re.DOTALL | re.IGNORECASE)
# A field runs to the next tag, opening or closing: TREC-1 and -2 topics carry more fields (<head>, <dom>, <con>,
# <fac> ... </fac>, <def>) between and after the four read here, whose text must not run into them.
_FIELD = re.compile(r"<(\w+)>(.*?)(?=</?\w+>|$)", re.DOTALL)
_READ = frozenset({"num", "title", "desc", "narr"})
# The label a field's text opens with: "Number: 051", "Topic: Airbus Subsidies" (TREC-1 and -2 titles),
# "Description:", "Narrative:".
_LABEL = re.compile(r"^\s*(?:number|topic|description|narrative)\s*:\s*", re.IGNORECASE)


def read(topics_text: str, qrels_text: str) -> list[Entry]:
    topics = _topics(topics_text)
    grades: dict[str, dict[str, int]] = {}
    problems = Problems()
    for number, line in enumerate(qrels_text.splitlines(), start=1):
        if not line.strip():
            continue
        with problems.row():
            _qrels_line(line, number, topics, grades)
    problems.check()
    # An expected document's grade is 1 unless said otherwise: only the others are kept as grades (0 included).
    graded = {qid: {d: g for d, g in found.items() if g != 1} for qid, found in grades.items()}
    return [
        Entry(
            question=question,
            key=qid,
            expected_document_ids=tuple(d for d, g in grades.get(qid, {}).items() if g > 0),
            grades=graded.get(qid, {}),
            answerable=True,
            where=where,
            carried=frozenset({"key", "expected_document_ids", "grades"}),
        )
        for qid, (question, where) in topics.items()
    ]


def _qrels_line(line: str, number: int, topics: dict, grades: dict[str, dict[str, int]]) -> None:
    """One qrels line into `grades` (qid -> document -> grade 0 or above), or the line's problem."""
    parts = line.split()
    if len(parts) != 4:
        raise fail(f"qrels line {number}", f"expected 4 columns (qid iteration docid grade), found {len(parts)}.",
                   line=number, file="qrels")  # fmt: skip
    qid, _, document, grade = parts
    if not grade.lstrip("-").isdigit():
        raise fail(
            f"qrels line {number}", f"grade {shown(grade)} is not a whole number.", line=number, file="qrels"
        )
    if qid not in topics:
        raise fail(
            f"qrels line {number}",
            f"topic {shown(qid)} is not in the topics file.",
            line=number,
            file="qrels",
        )
    if int(grade) >= 0:
        grades.setdefault(qid, {})[document] = int(grade)


def _topics(text: str) -> dict[str, tuple[str, str]]:
    """qid -> (question, where), in file order."""
    out: dict[str, tuple[str, str]] = {}
    if "<top>" in text.lower():
        for match in _TOP.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            fields = {
                name.lower(): " ".join(_LABEL.sub("", value).split())
                for name, value in _FIELD.findall(match.group(1))
                if name.lower() in _READ
            }
            qid, question = fields.get("num", ""), fields.get("title") or fields.get("desc", "")
            if not qid or not question:
                raise fail(
                    f"topics line {line}",
                    "a <top> needs a <num> and a <title> (or <desc>).",
                    line=line,
                    file="topics",
                )
            if qid in out:
                raise fail(
                    f"topics line {line}", f"topic {shown(qid)} is listed twice.", line=line, file="topics"
                )
            out[qid] = (question, f"topics line {line}")
        if not out:
            raise fail("topics line 1", "no complete <top> ... </top> block.", line=1, file="topics")
        return out
    for number, row in enumerate(text.splitlines(), start=1):
        if not row.strip():
            continue
        qid, sep, question = row.partition("\t")
        if not sep or not qid.strip() or not question.strip():
            raise fail(f"topics line {number}", "expected qid<TAB>query.", line=number, file="topics")
        if qid.strip() in out:
            raise fail(
                f"topics line {number}",
                f"topic {shown(qid.strip())} is listed twice.",
                line=number,
                file="topics",
            )
        out[qid.strip()] = (question.strip(), f"topics line {number}")
    if not out:
        raise fail("topics line 1", "the topics file is empty.", line=1, file="topics")
    return out


def write(entries: Sequence[Entry], name: str) -> Written:
    topics, qrels, warnings = [], [], []
    keyless = [e for e in entries if not e.key]
    keys = {e.key for e in entries if e.key}
    numbered = (f"q{i}" for i in itertools.count(1) if f"q{i}" not in keys)  # never another entry's key
    for e in entries:
        qid = e.key or next(numbered)
        topics.append(f"{qid}\t{' '.join(e.question.split())}")
        for document in e.expected_document_ids:
            qrels.append(f"{qid} 0 {document} {(e.grades or {}).get(document, 1)}")
        judged_not_relevant = [
            d for d, g in (e.grades or {}).items() if g == 0 and d not in e.expected_document_ids
        ]
        qrels.extend(f"{qid} 0 {document} 0" for document in judged_not_relevant)
    if keyless:
        warnings.append(
            f"{len(keyless)} entries have no key: numbered q1, q2, ... in order as topic ids (skipping the keys "
            "of other entries); imported back, they update the entries with their questions, which stay keyless."
        )
    lost = [
        what
        for what, count in (
            ("reference answers", sum(1 for e in entries if e.reference_answer)),
            ("tags", sum(1 for e in entries if e.tags)),
            ("unanswerable flags", sum(1 for e in entries if not e.answerable)),
            ("reference passages", sum(1 for e in entries if e.contexts)),
        )
        if count
    ]
    if lost:
        warnings.append(f"TREC topics and qrels have no place for {', '.join(lost)}: left out.")
    return Written(
        {
            f"{name}.topics.tsv": "\n".join(topics) + "\n",
            f"{name}.qrels": "\n".join(qrels) + ("\n" if qrels else ""),
        },
        warnings,
    )
