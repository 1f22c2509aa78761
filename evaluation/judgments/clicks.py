"""Relevance judgments from search logs: what users were shown and what they clicked, read from a CSV or JSON
Lines log or from OpenSearch's User Behavior Insights (UBI) indexes, turned into grades by a click model. Plain
Python: no Django import.

The click model is COEC, clicks over expected clicks, as OpenSearch's Search Relevance Workbench computes it:
- the expected click-through rate of a rank is all clicks at that rank over all impressions at that rank, over
  the whole log (users click the top results more whatever they hold: this is the position's share);
- a (query, document) pair's COEC is its own clicks over its impressions, divided by the expected rate of its
  rank; a pair seen at several ranks is counted at the best (lowest) of them, as the Workbench does, which leans
  its judgment low;
- a pair with fewer than `min_impressions` impressions gets no judgment (too little evidence, counted).
COEC 1 means clicked as often as an average result at that rank. The grades: 3 at COEC >= 2, 2 at >= 1, 1 at
>= 0.5, else 0 (COEC_CUTS). Clicks measure attraction as much as relevance: these grades are stored under their
own rater (clicks:coec), never over people's, and shown against people's like any machine assessor's.

Inputs:
- a log: CSV with a header, or JSON Lines, of `query`, `document_id`, `position` (1 for the top result) and
  `clicked` (true/false, 1/0): one row per result shown;
- UBI: the `ubi_queries` documents (`query_id`, `user_query`) and the `ubi_events` documents whose `action_name`
  is `impression` or `click`, with `query_id`, `event_attributes.object.object_id` and
  `event_attributes.position.ordinal` (as exported from OpenSearch: JSON Lines of each hit's `_source`, or a JSON
  array, or a search response's `hits.hits`). Other actions are skipped and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from evaluation.judgments.grades import CLICKS_PREFIX
from goldenset.formats import FormatError, Problems, csv_dicts, decode, fail, shown
from goldenset.text import normalize_question

__all__ = [
    "CLICKS_RATER",
    "COEC_CUTS",
    "MAX_LOG_ROWS",
    "MIN_IMPRESSIONS",
    "ClickJudgment",
    "Observation",
    "coec_judgments",
    "read_log",
    "read_rows",
    "read_ubi",
]

CLICK_MODEL = "coec"
CLICKS_RATER = f"{CLICKS_PREFIX}{CLICK_MODEL}"
COEC_CUTS = (0.5, 1.0, 2.0)  # the lowest COEC of grades 1, 2 and 3
MIN_IMPRESSIONS = 10
MAX_LOG_ROWS = 1_000_000
QUERY_MAX_LENGTH = 4000
DOCUMENT_ID_MAX_LENGTH = 300


@dataclass(frozen=True)
class Observation:
    """A result shown (an impression) at a position for a query, clicked or not."""

    query: str
    document_id: str
    position: int
    clicks: int = 0
    impressions: int = 1


@dataclass(frozen=True)
class ClickJudgment:
    query: str
    document_id: str
    grade: int
    coec: float
    clicks: int
    impressions: int
    position: int  # the best rank it was shown at
    expected_ctr: float  # that rank's click-through rate over the whole log


@dataclass
class Counted:
    judgments: list[ClickJudgment] = field(default_factory=list)
    too_few_impressions: int = 0
    rank_ctr: dict[int, float] = field(default_factory=dict)


def _grade(coec: float) -> int:
    return sum(1 for cut in COEC_CUTS if coec >= cut)


def coec_judgments(observations: Iterable[Observation], min_impressions: int = MIN_IMPRESSIONS) -> Counted:
    """The COEC judgment of every (query, document) pair shown at least `min_impressions` times; queries are
    compared case- and space-folded, as golden questions are (each judgment carries the folded query)."""
    rank_clicks: dict[int, int] = {}
    rank_shown: dict[int, int] = {}
    pairs: dict[tuple[str, str], list[int]] = {}  # [clicks, impressions, best position]
    for o in observations:
        rank_clicks[o.position] = rank_clicks.get(o.position, 0) + o.clicks
        rank_shown[o.position] = rank_shown.get(o.position, 0) + o.impressions
        seen = pairs.setdefault((normalize_question(o.query), o.document_id), [0, 0, o.position])
        seen[0] += o.clicks
        seen[1] += o.impressions
        seen[2] = min(seen[2], o.position)
    counted = Counted(
        rank_ctr={p: rank_clicks[p] / rank_shown[p] for p in sorted(rank_shown) if rank_shown[p]}
    )
    for (query, document_id), (clicks, impressions, position) in pairs.items():
        if impressions < min_impressions:
            counted.too_few_impressions += 1
            continue
        expected = counted.rank_ctr.get(position, 0.0)
        # No click was ever made at that rank: there is no expectation to divide by, and the pair is graded 0.
        coec = (clicks / impressions) / expected if expected else 0.0
        counted.judgments.append(
            ClickJudgment(query, document_id, _grade(coec), coec, clicks, impressions, position, expected)
        )
    return counted


# --- reading logs --------------------------------------------------------------------------------------------

_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no", ""}


def _flag(value: object, where: str, line: int) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise fail(where, f"clicked {shown(value)} is not true or false (or 1 / 0).", field="clicked", line=line)


def _row(record: dict, where: str, line: int) -> Observation:
    query, document_id, position = record.get("query"), record.get("document_id"), record.get("position")
    if not isinstance(query, str) or not query.strip() or len(query) > QUERY_MAX_LENGTH:
        raise fail(where, f"query: text of 1 to {QUERY_MAX_LENGTH:,} characters.", field="query", line=line)
    if (
        not isinstance(document_id, str)
        or not document_id.strip()
        or len(document_id) > DOCUMENT_ID_MAX_LENGTH
    ):
        raise fail(where, f"document_id: an id of 1 to {DOCUMENT_ID_MAX_LENGTH} characters.", field="document_id",
                   line=line)  # fmt: skip
    if isinstance(position, str) and position.strip().lstrip("-").isdigit():
        position = int(position)
    if isinstance(position, bool) or not isinstance(position, int) or position < 1:
        raise fail(where, f"position {shown(position)} is not a whole number from 1 (the top result).",
                   field="position", line=line)  # fmt: skip
    return Observation(
        query.strip(), document_id.strip(), position, int(_flag(record.get("clicked"), where, line))
    )


def _text(data: bytes | str, name: str) -> str:
    return decode(data, f"the {name}")  # UTF-8 without NUL, as every file a tenant sends


def read_log(data: bytes | str, fmt: str) -> list[Observation]:
    """The rows of a CSV (with a header) or JSON Lines log; every bad row is named (up to Problems' limit)."""
    text = _text(data, "log")
    problems = Problems()
    if fmt == "csv":
        names, rows = csv_dicts(text)
        missing = {"query", "document_id", "position", "clicked"} - set(names)
        if missing:
            raise fail("line 1", f"the header lacks {', '.join(sorted(missing))}.", field="header", line=1)
        records: Iterable[tuple[int, object]] = rows
    elif fmt == "jsonl":
        records = _json_lines(text, problems)
    else:
        raise fail("format", f"{shown(fmt)} is not csv or jsonl.", field="format")
    out = _observations(((f"line {line}", line, record) for line, record in records), problems)
    problems.check()
    return out


def read_rows(records: Sequence[object]) -> list[Observation]:
    """The rows of a log sent as JSON (a list of objects), each bad one named by its index."""
    problems = Problems()
    out = _observations(((f"rows[{i}]", i, record) for i, record in enumerate(records)), problems)
    problems.check()
    return out


def _observations(records: Iterable[tuple[str, int, object]], problems: Problems) -> list[Observation]:
    out: list[Observation] = []
    for where, line, record in records:
        if len(out) >= MAX_LOG_ROWS:
            raise fail(where, f"a log holds at most {MAX_LOG_ROWS:,} rows.", line=line)
        with problems.row():
            if isinstance(record, FormatError):  # a CSV row the csv module could not read
                raise record
            if not isinstance(record, dict):
                raise fail(where, "expected an object.", line=line)
            out.append(_row(record, where, line))
    return out


def _json_lines(text: str, problems: Problems) -> Iterable[tuple[int, object]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        with problems.row():
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise fail(f"line {number}", f"not JSON ({exc.msg}).", line=number) from None
            except RecursionError:
                raise fail(f"line {number}", "JSON nested too deep.", line=number) from None


def _documents(data: bytes | str | list, name: str) -> list[dict]:
    """An export's documents: JSON Lines of objects, a JSON array, or a search response (hits.hits[]._source),
    or those documents already parsed (a list); a hit's `_source` is unwrapped."""
    if isinstance(data, list):
        return _unwrapped(data, name)
    text = _text(data, name)
    stripped = text.strip()
    try:
        loaded = json.loads(stripped) if stripped[:1] in "[{" else None
    except json.JSONDecodeError:
        loaded = None  # JSON Lines: one object per line
    if isinstance(loaded, dict) and isinstance(loaded.get("hits"), dict):
        loaded = loaded["hits"].get("hits", [])
    if isinstance(loaded, dict):
        loaded = [loaded]
    if loaded is None:
        problems = Problems()
        loaded = [record for _, record in _json_lines(text, problems)]
        problems.check()
    if not isinstance(loaded, list):
        raise fail(name, "expected JSON Lines, a JSON array or a search response.", field=name)
    return _unwrapped(loaded, name)


def _unwrapped(loaded: list, name: str) -> list[dict]:
    out = []
    for i, doc in enumerate(loaded):
        if isinstance(doc, dict) and isinstance(doc.get("_source"), dict):
            doc = doc["_source"]
        if not isinstance(doc, dict):
            raise fail(f"{name}[{i}]", "expected an object.", field=name)
        out.append(doc)
    return out


def read_ubi(
    queries_data: bytes | str | list, events_data: bytes | str | list, max_rank: int = 20
) -> tuple[list[Observation], dict[str, int]]:
    """Impressions and clicks of the UBI events, each joined to its query's text; what was skipped, counted."""
    queries: dict[str, str] = {}
    for i, doc in enumerate(_documents(queries_data, "ubi_queries")):
        query_id, text = doc.get("query_id"), doc.get("user_query")
        if not isinstance(query_id, str) or not isinstance(text, str) or not text.strip():
            raise fail(f"ubi_queries[{i}]", "needs a query_id and a user_query (text).", field="ubi_queries")
        queries[query_id] = text.strip()[:QUERY_MAX_LENGTH]
    skipped = {"other_actions": 0, "unknown_query": 0, "beyond_max_rank": 0}
    observations: list[Observation] = []
    for i, doc in enumerate(_documents(events_data, "ubi_events")):
        action = doc.get("action_name")
        if action not in ("impression", "click"):
            skipped["other_actions"] += 1
            continue
        attributes = _object(doc.get("event_attributes"))
        obj, place = _object(attributes.get("object")), _object(attributes.get("position"))
        document_id, ordinal = obj.get("object_id"), place.get("ordinal")
        where = f"ubi_events[{i}]"
        if not isinstance(document_id, (str, int)) or isinstance(document_id, bool) or str(document_id) == "":
            raise fail(
                where, "an impression or a click needs event_attributes.object.object_id.", field="ubi_events"
            )
        if isinstance(ordinal, bool) or not isinstance(ordinal, int) or ordinal < 0:
            raise fail(where, f"event_attributes.position.ordinal {shown(ordinal)} is not a whole number from 0.",
                       field="ubi_events")  # fmt: skip
        query = queries.get(str(doc.get("query_id")))
        if query is None:
            skipped["unknown_query"] += 1
            continue
        if ordinal > max_rank:
            skipped["beyond_max_rank"] += 1
            continue
        clicked = action == "click"
        observations.append(
            Observation(
                query, str(document_id)[:DOCUMENT_ID_MAX_LENGTH], ordinal, int(clicked), int(not clicked)
            )
        )
    return observations, skipped


def _object(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def grade_counts(judgments: Sequence[ClickJudgment]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for j in judgments:
        counts[str(j.grade)] = counts.get(str(j.grade), 0) + 1
    return dict(sorted(counts.items()))
