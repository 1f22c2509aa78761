"""Implicit judgments from search logs (issue 26, item 5): the COEC click model by hand, the readers of a CSV or
JSON Lines log and of OpenSearch UBI exports, bad rows named, and `manage.py import_clicks` storing judgments as
rater clicks:coec beside people's, matched to golden questions and measured against the golden set."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from evalsite.errors import EvalsiteError
from evaluation.judgments.clicks import (
    CLICKS_RATER,
    COEC_CUTS,
    Observation,
    coec_judgments,
    read_log,
    read_ubi,
)
from evaluation.judgments.grades import is_machine
from evaluation.models import RelevanceJudgment
from tests.support import db_state, handbook_entries

SCOPE = ["--cluster", "acme", "--tenant", "search", "--collection", "handbook"]


def shown(query, document_id, position, times, clicked):
    """`times` impressions of a document at a position, `clicked` of them clicked."""
    return [Observation(query, document_id, position, int(i < clicked)) for i in range(times)]


def test_coec_divides_a_pairs_click_rate_by_its_ranks_expected_rate():
    log = [
        *shown("q", "a", 1, 20, 10),  # rank 1: 10 of 20 clicked
        *shown("r", "b", 1, 20, 2),  # rank 1 over the log: 12 of 40 = 0.3 expected
        *shown("q", "c", 2, 10, 2),  # rank 2: 2 of 10 = 0.2 expected, this pair 0.2
        *shown("q", "d", 3, 4, 4),  # too few impressions for a judgment
    ]
    counted = coec_judgments(log, min_impressions=10)
    assert counted.rank_ctr == {1: 0.3, 2: 0.2, 3: 1.0} and counted.too_few_impressions == 1
    by_doc = {j.document_id: j for j in counted.judgments}
    assert (
        by_doc["a"].coec == pytest.approx(0.5 / 0.3) and by_doc["a"].grade == 2
    )  # 1.67: clicked above average
    assert (
        by_doc["b"].coec == pytest.approx(0.1 / 0.3) and by_doc["b"].grade == 0
    )  # 0.33: below half the average
    assert by_doc["c"].coec == pytest.approx(1.0) and by_doc["c"].grade == 2
    assert (by_doc["a"].clicks, by_doc["a"].impressions, by_doc["a"].position) == (10, 20, 1)
    assert COEC_CUTS == (0.5, 1.0, 2.0) and is_machine(CLICKS_RATER) and CLICKS_RATER == "clicks:coec"


def test_a_pair_seen_at_several_ranks_counts_at_its_best_as_the_workbench_does():
    log = [*shown("q", "a", 1, 10, 1), *shown("q", "a", 4, 10, 5), *shown("x", "z", 4, 10, 1)]
    (a, _z) = sorted(coec_judgments(log, min_impressions=10).judgments, key=lambda j: j.document_id)
    # rank 1 expects 1/10; the pair: 6 clicks of 20 impressions, all counted at rank 1: 0.3 / 0.1
    assert (a.position, a.clicks, a.impressions, a.expected_ctr) == (
        1,
        6,
        20,
        0.1,
    ) and a.coec == pytest.approx(3)
    assert a.grade == 3


def test_a_csv_and_a_json_lines_log_read_the_same():
    csv_text = "query,document_id,position,clicked\nrefund window,refunds,1,true\nrefund window,faq,2,0\n"
    jsonl = "\n".join(
        json.dumps(r)
        for r in (
            {"query": "refund window", "document_id": "refunds", "position": 1, "clicked": True},
            {"query": "refund window", "document_id": "faq", "position": "2", "clicked": "false"},
        )
    )
    expected = [Observation("refund window", "refunds", 1, 1), Observation("refund window", "faq", 2, 0)]
    assert read_log(csv_text.encode(), "csv") == read_log(jsonl, "jsonl") == expected


@pytest.mark.parametrize(
    ("text", "fmt", "named"),
    [
        ("query,document_id,position,clicked\nq,d,-1,true\n", "csv", ["line 2: position -1"]),
        (
            "query,document_id,position,clicked\nq,d,0,true\nq,d,1,maybe\n",
            "csv",
            ["line 2: position", "line 3: clicked"],
        ),
        ("query,document_id,clicked\nq,d,true\n", "csv", ["line 1: the header lacks position"]),
        (
            '{"query": "q", "document_id": "d", "position": 1, "clicked": true}\nnot json\n',
            "jsonl",
            ["line 2: not JSON"],
        ),
        ('{"query": "", "document_id": "d", "position": 1, "clicked": true}\n', "jsonl", ["line 1: query"]),
        (
            '{"query": "q", "document_id": "d", "position": true, "clicked": true}\n',
            "jsonl",
            ["line 1: position True"],
        ),
    ],
)
def test_every_bad_row_is_named_by_its_line(text, fmt, named):
    with pytest.raises(EvalsiteError) as caught:
        read_log(text, fmt)
    assert caught.value.status_code == 400
    for part in named:
        assert part in caught.value.message, caught.value.message


# UBI as exported from OpenSearch (each hit's _source, one per line), in the fields of the UBI schema 1.x.
UBI_QUERIES = "\n".join(
    json.dumps(q)
    for q in (
        {"application": "shop", "query_id": "q-1", "client_id": "c-1", "user_query": "How long is the refund window?",
         "query_response_id": "r-1", "query_response_hit_ids": ["refunds", "shipping"], "timestamp": "2026-11-30T10:00:00Z"},
        {"application": "shop", "query_id": "q-2", "client_id": "c-2", "user_query": "how long is the REFUND window?",
         "query_response_id": "r-2", "query_response_hit_ids": ["refunds", "shipping"], "timestamp": "2026-11-30T10:01:00Z"},
        {"application": "shop", "query_id": "q-3", "client_id": "c-3", "user_query": "store hours",
         "query_response_id": "r-3", "query_response_hit_ids": ["shipping"], "timestamp": "2026-11-30T10:02:00Z"},
    )
)  # fmt: skip


def ubi_event(action, query_id, document_id, ordinal):
    return {
        "application": "shop", "action_name": action, "query_id": query_id, "client_id": "c-1",
        "timestamp": "2026-11-30T10:00:05Z", "message_type": "INFO", "message": None,
        "event_attributes": {"object": {"object_id": document_id, "object_id_field": "sku"},
                             "position": {"ordinal": ordinal}, "session_id": "s-1"},
    }  # fmt: skip


def ubi_events() -> str:
    events = []
    for query_id in ("q-1", "q-2") * 6:  # 12 searches for the refund question
        events += [
            ubi_event("impression", query_id, "refunds", 1),
            ubi_event("impression", query_id, "shipping", 2),
        ]
        events.append(ubi_event("click", query_id, "refunds", 1))
    events.append(ubi_event("click", "q-1", "shipping", 2))
    events += [ubi_event("impression", "q-3", "shipping", 1), ubi_event("add_to_cart", "q-3", "shipping", 1)]
    events.append(ubi_event("impression", "q-404", "refunds", 1))  # a query the export does not hold
    return "\n".join(json.dumps(e) for e in events)


def test_ubi_impressions_and_clicks_are_joined_to_their_queries_text():
    observations, skipped = read_ubi(UBI_QUERIES, ubi_events())
    assert skipped == {"other_actions": 1, "unknown_query": 1, "beyond_max_rank": 0}
    clicks = sum(o.clicks for o in observations)
    impressions = sum(o.impressions for o in observations)
    assert (clicks, impressions) == (13, 25)
    # The same export as a JSON array and as a search response read the same.
    hits = [{"_index": "ubi_events", "_source": json.loads(line)} for line in ubi_events().splitlines()]
    assert read_ubi(UBI_QUERIES, json.dumps(hits))[0] == observations
    assert read_ubi(UBI_QUERIES, json.dumps({"hits": {"hits": hits}}))[0] == observations
    with pytest.raises(EvalsiteError, match="ordinal -1"):
        read_ubi(UBI_QUERIES, json.dumps([ubi_event("click", "q-1", "refunds", -1)]))


def import_clicks(*args):
    out = StringIO()
    call_command("import_clicks", *SCOPE, *args, stdout=out)
    return out.getvalue()


def test_import_clicks_judges_the_golden_questions_found_in_a_ubi_export(world, tmp_path):
    handbook_entries(world.collection)
    (tmp_path / "q.jsonl").write_text(UBI_QUERIES)
    (tmp_path / "e.jsonl").write_text(ubi_events())
    out = import_clicks("--ubi-queries", str(tmp_path / "q.jsonl"), "--ubi-events", str(tmp_path / "e.jsonl"))
    assert "25 impressions, 13 clicks, 3 query-document pairs; 2 judged by clicks:coec" in out, out
    assert "1 with fewer than 10 impressions" in out and "skipped: other_actions 1, unknown_query 1" in out
    judged = {j.document_id: j for j in RelevanceJudgment.objects.filter(rater=CLICKS_RATER)}
    # Both spellings of the refund question are one golden question. Rank 1 over the log: 12 clicks of 13
    # impressions (store hours' shipping once, unclicked); refunds: 12 of 12, coec 13/12. Rank 2: shipping's one
    # click of 12 is all there is: coec 1.
    assert {d: (j.entry.key, j.grade) for d, j in judged.items()} == {
        "refunds": ("q1", 2),
        "shipping": ("q1", 2),
    }
    assert judged["refunds"].detail["impressions"] == 12 and judged["refunds"].detail["coec"] == round(
        13 / 12, 4
    )
    # Measured against the golden set: q1 expects refunds (grade 1); shipping is not judged there.
    assert "1 pairs both judged" in out
    # A second import of the same log replaces the model's judgments, never adds to them.
    import_clicks("--ubi-queries", str(tmp_path / "q.jsonl"), "--ubi-events", str(tmp_path / "e.jsonl"))
    assert RelevanceJudgment.objects.filter(rater=CLICKS_RATER).count() == 2


def test_a_bad_log_writes_nothing_and_exits_2_naming_the_line(world, tmp_path):
    handbook_entries(world.collection)
    log = tmp_path / "clicks.csv"
    log.write_text("query,document_id,position,clicked\nHow long is the refund window?,refunds,-3,true\n")
    before = db_state()
    err = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("import_clicks", *SCOPE, "--log", str(log), stderr=err)
    assert exited.value.code == 2 and "line 2: position -3" in err.getvalue()
    assert db_state() == before


CLICKS = "/lmkit/v1/search/judgments/clicks"


def test_rows_and_ubi_documents_import_over_rest(world):
    handbook_entries(world.collection)
    rows = [
        {"query": "When does express shipping arrive?", "document_id": "shipping", "position": 1, "clicked": i < 8}
        for i in range(10)
    ] + [
        {"query": "When does express shipping arrive?", "document_id": "refunds", "position": 2, "clicked": False}
        for _ in range(10)
    ]  # fmt: skip
    response = world.client.post(CLICKS, {"collection_id": "handbook", "rows": rows}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["judged"], body["grades"], body["impressions"], body["clicks"]) == (
        2,
        {"0": 1, "2": 1},
        20,
        8,
    )
    # q2 expects shipping: the click model agrees on it; refunds it never judged.
    assert body["agreement_with_golden_set"]["items"] == 1
    ubi = {"collection_id": "handbook", "ubi_queries": [json.loads(q) for q in UBI_QUERIES.splitlines()],
           "ubi_events": [json.loads(e) for e in ubi_events().splitlines()]}  # fmt: skip
    response = world.client.post(CLICKS, ubi, format="json")
    assert response.status_code == 201 and response.json()["judged"] == 2, response.json()
    assert RelevanceJudgment.objects.filter(rater=CLICKS_RATER).count() == 4


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (
            {"rows": [{"query": "q", "document_id": "d", "position": -1, "clicked": True}]},
            "rows[0]: position -1",
        ),
        ({"rows": [], "ubi_events": []}, "rows: send rows, or ubi_queries and ubi_events"),
        ({}, "rows: send rows"),
        ({"rows": [], "min_impressions": 0}, "min_impressions"),
        (
            {"ubi_queries": [{"query_id": "1"}], "ubi_events": []},
            "ubi_queries[0]: needs a query_id and a user_query",
        ),
    ],
)
def test_bad_click_input_is_a_400_naming_the_field_and_writes_nothing(world, body, named):
    before = db_state()
    response = world.client.post(CLICKS, {"collection_id": "handbook", **body}, format="json")
    assert response.status_code == 400, response.json()
    assert named in response.json()["error"]["message"]
    assert db_state() == before


def test_another_tenants_log_never_judges_this_tenants_questions(world):
    handbook_entries(world.collection)
    rows = [
        {
            "query": "When does express shipping arrive?",
            "document_id": "shipping",
            "position": 1,
            "clicked": True,
        }
        for _ in range(10)
    ]
    response = world.other_client.post(CLICKS, {"collection_id": "handbook", "rows": rows}, format="json")
    # its own collection of that name, if it has one; never ours
    assert response.status_code in (201, 404), response.json()
    assert not RelevanceJudgment.objects.filter(collection=world.collection).exists()
    missing = world.client.post(CLICKS, {"collection_id": "nowhere", "rows": rows}, format="json")
    assert missing.status_code == 404
