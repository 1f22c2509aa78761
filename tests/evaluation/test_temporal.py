"""Temporal validity in search and evaluation: superseded and expired documents stay buried unless asked for,
and `as_of` replays what was valid at an instant (goldenset.temporal, then the API end to end)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.utils import timezone

from goldenset import services
from goldenset.services import EntryInput
from goldenset.temporal import (
    CURRENT,
    EXPIRED,
    NOT_YET_VALID,
    SUPERSEDED,
    TimeTable,
    Validity,
    has_temporal_data,
    micros,
    statuses,
)
from tests.support import add_entries

API = "/lmkit/v1"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


END_OF_JUNE = at("2024-06-30T23:59:59.999999Z")  # how a date-only valid_until "2024-06-30" is stored

# --- statuses: pure --------------------------------------------------------------------------------------

DOCUMENTS = [
    Validity("plain"),
    Validity("old", valid_from=at("2023-01-01T00:00:00Z")),
    Validity("new", valid_from=at("2024-01-01T00:00:00Z"), supersedes=("old",)),
    Validity("promo", valid_from=at("2024-06-01T00:00:00Z"), valid_until=END_OF_JUNE),
    Validity("future", valid_from=at("2030-01-01T00:00:00Z")),
    # a successor in force from the start, expired since: it still supersedes
    Validity("v1"),
    Validity("v2", valid_until=at("2024-03-01T00:00:00Z"), supersedes=("v1",)),
    # a successor not yet in force does not
    Validity("draft-target"),
    Validity("draft", valid_from=at("2030-01-01T00:00:00Z"), supersedes=("draft-target",)),
    # a document naming itself (its own id re-sent as "replacing" the old version) does not hide itself
    Validity("self", supersedes=("self",)),
    # one successor replacing two; and a name that is in no document
    Validity("a"),
    Validity("b"),
    Validity("ab", valid_from=at("2024-01-01T00:00:00Z"), supersedes=("a", "b", "ghost")),
]
NAMES = [d.document_id for d in DOCUMENTS]
C, N, E, S = CURRENT, NOT_YET_VALID, EXPIRED, SUPERSEDED

# instant -> status per document, in DOCUMENTS order
TIMELINE = {
    "2022-06-01T00:00:00Z": [C, N, N, N, N, S, C, C, N, C, C, C, N],
    "2023-12-31T23:59:59Z": [C, C, N, N, N, S, C, C, N, C, C, C, N],
    "2024-01-01T00:00:00Z": [C, S, C, N, N, S, C, C, N, C, S, S, C],  # valid_from is inclusive
    "2024-06-30T23:59:59Z": [C, S, C, C, N, S, E, C, N, C, S, S, C],  # the last second of a date-only until
    "2024-06-30T23:59:59.999999Z": [C, S, C, C, N, S, E, C, N, C, S, S, C],  # valid_until is inclusive
    "2024-07-01T00:00:00Z": [C, S, C, E, N, S, E, C, N, C, S, S, C],
    "2030-01-01T00:00:00Z": [C, S, C, E, C, S, E, S, C, C, S, S, C],
}


@pytest.mark.parametrize("instant", TIMELINE)
def test_statuses_on_a_timeline(instant):
    assert dict(zip(NAMES, statuses(DOCUMENTS, at(instant)), strict=True)) == dict(
        zip(NAMES, TIMELINE[instant], strict=True)
    )


def test_an_instant_in_another_offset_is_the_same_instant():
    # 2024-07-01T01:30+02:00 is 2024-06-30T23:30Z: the promotion still runs
    assert statuses(DOCUMENTS, at("2024-07-01T01:30:00+02:00"))[NAMES.index("promo")] == CURRENT
    assert statuses(DOCUMENTS, at("2024-07-01T02:00:00+02:00"))[NAMES.index("promo")] == EXPIRED


def test_superseded_wins_over_expired():
    documents = [
        Validity("old", valid_until=at("2024-02-01T00:00:00Z")),
        Validity("new", valid_from=at("2024-01-01T00:00:00Z"), supersedes=("old",)),
    ]
    assert statuses(documents, at("2024-03-01T00:00:00Z")) == [SUPERSEDED, CURRENT]
    assert statuses(documents, at("2023-03-01T00:00:00Z")) == [CURRENT, NOT_YET_VALID]


@pytest.mark.parametrize(
    ("instant", "include_superseded", "visible"),
    [
        ("2024-07-01T00:00:00Z", False, {"plain", "new", "draft-target", "self", "ab"}),
        (
            "2024-07-01T00:00:00Z",
            True,
            {"plain", "old", "new", "promo", "v1", "v2", "draft-target", "self", "a", "b", "ab"},
        ),
        ("2022-06-01T00:00:00Z", True, {"plain", "v1", "v2", "draft-target", "self", "a", "b"}),
    ],
)
def test_visible_mask_shows_current_documents_and_on_request_stale_ones_never_future_ones(
    instant, include_superseded, visible
):
    mask = time_table(DOCUMENTS).visible(at(instant), include_superseded)
    assert mask.dtype == np.bool_
    assert {name for name, shown in zip(NAMES, mask, strict=True) if shown} == visible


def time_table(documents: list[Validity], successors: list[Validity] | None = None) -> TimeTable:
    """The documents' TimeTable, its supersessions resolved by name as Corpus resolves them by binary search."""
    table = TimeTable.of(len(documents), dict(enumerate(documents)), successors or [])
    ids = [d.document_id for d in documents]
    table.resolve(lambda names: {n: ids.index(n) for n in names if n in ids}, ids)
    return table


def reference_visible(documents, successors, instant, include_superseded) -> list[bool]:
    """statuses, the definition, read as a time filter reads it."""
    allowed = {CURRENT, SUPERSEDED, EXPIRED} if include_superseded else {CURRENT}
    return [s in allowed for s in statuses(documents, instant, successors)]


@pytest.mark.parametrize("instant", TIMELINE)
@pytest.mark.parametrize("include_superseded", [False, True])
def test_the_time_table_answers_as_statuses_on_the_timeline(instant, include_superseded):
    expected = reference_visible(DOCUMENTS, [], at(instant), include_superseded)
    assert time_table(DOCUMENTS).visible(at(instant), include_superseded).tolist() == expected


def test_the_time_table_answers_as_statuses_on_random_collections():
    """Random validity windows, supersessions (chains, cycles, self-names, unknown names) and successors without
    pages, at random instants, some exactly on a window's edge: the arrays agree with the definition."""
    rng = np.random.default_rng(11)
    base = at("2024-01-01T00:00:00Z")

    def instant() -> datetime | None:
        return None if rng.random() < 0.4 else base + timedelta(days=int(rng.integers(-50, 50)))

    for _ in range(200):
        count = int(rng.integers(1, 12))
        names = [f"d{i}" for i in range(count)] + ["ghost"]

        def validity(name: str, names: list[str] = names) -> Validity:
            named = tuple(rng.choice(names, size=int(rng.integers(0, 3)), replace=False).tolist())
            return Validity(name, instant(), instant(), named if rng.random() < 0.3 else ())

        documents = [validity(f"d{i}") for i in range(count)]
        successors = [validity(f"s{k}") for k in range(int(rng.integers(0, 3)))]
        table = time_table(documents, successors)
        edges = [d.valid_from or d.valid_until for d in documents if d.valid_from or d.valid_until]
        for moment in [base + timedelta(days=int(rng.integers(-60, 60))), *edges[:2]]:
            for include in (False, True):
                expected = reference_visible(documents, successors, moment, include)
                assert table.visible(moment, include).tolist() == expected, (documents, successors, moment)


def test_microseconds_are_exact_and_a_naive_instant_is_utc():
    assert micros(END_OF_JUNE, 0) == 1719791999999999
    assert micros(datetime(2024, 6, 30, 23, 59, 59, 999999), 0) == 1719791999999999
    assert micros(at("2024-07-01T01:59:59.999999+02:00"), 0) == 1719791999999999
    assert micros(None, 7) == 7


def test_has_temporal_data():
    assert not has_temporal_data([Validity("a"), Validity("b")])
    assert not has_temporal_data([])
    assert has_temporal_data([Validity("a"), Validity("b", supersedes=("a",))])
    assert has_temporal_data([Validity("a", valid_until=END_OF_JUNE)])
    assert has_temporal_data([Validity("a", valid_from=END_OF_JUNE)])


# --- through the API -------------------------------------------------------------------------------------


@pytest.fixture
def rules(world):
    """A refund policy superseded today, a June 2024 promotion (date-only valid_until), a notice valid from
    2100. Each mentions "refund"; the stale policy matches the golden question best."""
    services.collection_create(tenant=world.tenant, slug="rules", actor="test")
    today = timezone.now().date().isoformat()  # a date-only valid_from: the start of today, UTC
    documents = [
        {
            "id": "policy-2019",
            "title": "Refund window",
            "text": "The refund window is 14 days. Refund window questions: see the refund window table.",
            "valid_from": "2019-01-01",
        },
        {
            "id": "policy-current",
            "title": "Refunds",
            "text": "Refunds: the refund window is 30 days from delivery.",
            "valid_from": today,
            "supersedes": ["policy-2019"],
        },
        {
            "id": "summer-sale",
            "title": "Summer sale",
            "text": "Summer sale: a refund on sale items within 7 days.",
            "valid_from": "2024-06-01",
            "valid_until": "2024-06-30",
        },
        {
            "id": "kiosks",
            "title": "Kiosks",
            "text": "Refund kiosks: ask for a refund at any store kiosk.",
            "valid_from": "2100-01-01T09:00:00",
        },
    ]
    response = world.client.post(
        f"{API}/collections/rules/documents", {"documents": documents}, format="json"
    )
    assert response.status_code in (200, 201), response.json()
    return world


def found(world, **options) -> list[str]:
    response = world.client.post(
        f"{API}/search", {"collection_id": "rules", "query": "refund", **options}, format="json"
    )
    assert response.status_code == 200, response.json()
    return sorted(r["document_id"] for r in response.json()["results"])


def test_the_documents_api_stores_a_date_only_valid_until_as_the_end_of_its_day(rules):
    body = rules.client.get(f"{API}/collections/rules/documents/summer-sale").json()
    assert (body["valid_from"], body["valid_until"]) == (
        "2024-06-01T00:00:00Z",
        "2024-06-30T23:59:59.999999Z",
    )
    body = rules.client.get(f"{API}/collections/rules/documents/kiosks").json()
    assert body["valid_from"] == "2100-01-01T09:00:00Z"  # naive: UTC


def test_by_default_superseded_expired_and_future_documents_are_not_returned(rules):
    assert found(rules) == ["policy-current"]
    assert found(rules, search_type="Vector") == ["policy-current"]
    assert found(rules, search_type="Hybrid", rerank=True) == ["policy-current"]


def test_include_superseded_returns_stale_documents_but_never_future_ones(rules):
    assert found(rules, include_superseded=True) == ["policy-2019", "policy-current", "summer-sale"]
    assert found(rules, include_superseded="true", search_type="Vector") == [
        "policy-2019",
        "policy-current",
        "summer-sale",
    ]


@pytest.mark.parametrize(
    ("as_of", "visible"),
    [
        # a document superseded today was current last year; its successor did not exist yet
        pytest.param((timezone.now() - timedelta(days=365)).isoformat(), ["policy-2019"], id="a-year-ago"),
        ("2024-06-15", ["policy-2019", "summer-sale"]),
        ("2024-06-30T23:59:59Z", ["policy-2019", "summer-sale"]),  # a date-only valid_until covers its day
        ("2024-07-01", ["policy-2019"]),
        ("2024-07-01T01:30:00+02:00", ["policy-2019", "summer-sale"]),  # still June 30 in UTC
        ("2018-12-31T23:59:59", []),
        ("2100-01-01T08:59:59Z", ["policy-current"]),  # hidden an instant before its valid_from
        ("2100-01-01T09:00:00Z", ["kiosks", "policy-current"]),
    ],
)
def test_as_of_replays_what_was_valid_at_that_instant(rules, as_of, visible):
    assert found(rules, as_of=as_of) == visible


def test_as_of_with_include_superseded(rules):
    assert found(rules, as_of="2024-07-01", include_superseded=True) == ["policy-2019", "summer-sale"]
    assert found(rules, as_of="2100-01-01T09:00:00Z", include_superseded=True) == [
        "kiosks",
        "policy-2019",
        "policy-current",
        "summer-sale",
    ]


def test_a_golden_entry_asserts_that_the_stale_answer_stays_buried(rules):
    rules_collection = rules.tenant.collections.get(slug="rules")
    add_entries(
        rules_collection,
        EntryInput(
            question="What is the refund window?", expected_document_ids=["policy-current"], key="window"
        ),
    )
    last_year = (timezone.now() - timedelta(days=365)).isoformat()
    response = rules.client.post(
        f"{API}/search/evaluate",
        {
            "collection_id": "rules",
            "ks": [1, 2],
            # no labels: the defaults tell these apart
            "configs": [{}, {"include_superseded": True}, {"as_of": last_year}],
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    runs = {run["label"]: run for run in response.json()["runs"]}
    assert list(runs)[:2] == ["FullText", "FullText include_superseded"]
    buried, stale, replayed = runs.values()
    assert buried["metrics"] == {
        "recall@1": 1.0, "recall@2": 1.0, "ndcg@1": 1.0, "ndcg@2": 1.0, "mrr": 1.0,
        # one expected document, found first: the second place holds a document nobody judged
        "judged@1": 1.0, "judged@2": 0.5, "ndcg_cond@1": 1.0, "ndcg_cond@2": 1.0, "bpref": 1.0, "map_cond": 1.0,
    }  # fmt: skip
    # asked for, the stale policy comes back, and on top: the golden entry is what catches it
    assert stale["metrics"]["mrr"] == 0.5 and stale["metrics"]["recall@1"] == 0.0
    # last year the expected document did not exist yet
    assert replayed["metrics"]["recall@2"] == 0.0
    assert replayed["config"]["as_of"] is not None

    def ranked(run) -> list[str]:
        detail = rules.client.get(f"{API}/search/evaluate/runs/{run['run_id']}").json()
        (question,) = detail["results"]
        return [r["document_id"] for r in question["ranked"]]

    assert ranked(buried) == ["policy-current"]
    assert ranked(stale) == ["policy-2019", "policy-current"]
    assert ranked(replayed) == ["policy-2019"]


def test_temporal_fields_set_through_services_behave_the_same(world):
    collection = services.collection_create(tenant=world.tenant, slug="notes", actor="test")
    services.documents_upsert(
        collection=collection,
        documents=[
            services.DocumentInput(id="memo-v1", pages=["The memo about parking."]),
            services.DocumentInput(
                id="memo-v2",
                pages=["The revised memo about parking."],
                valid_from=datetime(2024, 1, 1, tzinfo=UTC),
                supersedes=["memo-v1"],
            ),
            # re-sent under its own id "replacing" itself: still found
            services.DocumentInput(id="memo-self", pages=["A memo on parking."], supersedes=["memo-self"]),
        ],
        actor="test",
    )
    body = world.client.post(
        f"{API}/search", {"collection_id": "notes", "query": "memo"}, format="json"
    ).json()
    assert sorted(r["document_id"] for r in body["results"]) == ["memo-self", "memo-v2"]
    body = world.client.post(
        f"{API}/search", {"collection_id": "notes", "query": "memo", "as_of": "2023-12-31"}, format="json"
    ).json()
    assert sorted(r["document_id"] for r in body["results"]) == ["memo-self", "memo-v1"]


def test_a_successor_without_pages_still_supersedes(rules):
    """A successor with no text is never a result, but the document it replaces is stale all the same."""
    response = rules.client.post(
        f"{API}/collections/rules/documents",
        {"documents": [{"id": "summer-notice", "text": "", "supersedes": ["kiosks", "policy-current"]}]},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert "policy-current" not in found(rules)
    assert "policy-current" in found(rules, include_superseded=True)
    assert "summer-notice" not in found(rules, include_superseded=True)
