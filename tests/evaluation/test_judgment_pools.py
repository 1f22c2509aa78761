"""Pools of documents to judge and relevance judgments over REST (issue 26): a pool from stored runs holds what
they found that nobody judged; raters take items one at a time, never one twice, no more raters an item than
the pool asks for; judgments are stored all or none, audited, and a grade of 0 counts as judged."""

from __future__ import annotations

import uuid
from collections import Counter
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from evalsite.audit.models import AuditEvent
from evaluation.models import EvaluationRun, JudgmentPool, QuestionResult, RelevanceJudgment
from goldenset.services.golden import EntryInput
from tests.conftest import add_documents, person_client
from tests.support import add_entries, answer_entries, db_state

POOLS = "/lmkit/v1/search/judgments/pools"
JUDGMENTS = "/lmkit/v1/search/judgments"


def make_pool(world, runs, **fields):
    body = {"collection_id": "handbook", "run_ids": [str(r.pk) for r in runs], "depth": 3, **fields}
    return world.client.post(POOLS, body, format="json")


def judge(world, pool_id, question_id, document_id, grade, rater="alice", **fields):
    """`rater` judges live, through a key of theirs: the judgment's rater is the person, user:<rater>."""
    one = {"question_id": question_id, "document_id": document_id, "grade": grade, **fields}
    body = {"collection_id": "handbook", "pool_id": pool_id, "judgments": [one]}
    return person_client(world, rater).post(JUDGMENTS, body, format="json")


def named_field(error: dict) -> str | None:
    """The field a refusal names: a serializer's (details.fields, one) or a service's (details.field)."""
    details = error.get("details", {})
    return details["field"] if "field" in details else next(iter(details.get("fields", {})), None)


def unjudged_pairs(runs) -> set[tuple[str, str]]:
    pairs = set()
    for run in runs:
        for result in run.results.all():
            for document_id, _score in result.ranked[:3]:
                if document_id not in result.expected:
                    pairs.add((result.entry_key, document_id))
    return pairs


def test_a_pool_holds_what_the_runs_found_that_nobody_judged(world, runs):
    response = make_pool(world, runs)
    assert response.status_code == 201, response.json()
    body = response.json()
    expected = unjudged_pairs(runs)
    assert body["items"] == len(expected) > 0
    assert body["judged_already"] == 3  # each question's expected document, found by both runs
    assert body["progress"] == {
        "items": len(expected),
        "judgments_needed": len(expected),
        "judgments": 0,
        "items_done": 0,
        "raters": {},
        "given": {},
    }
    pool = JudgmentPool.objects.get(pk=body["pool_id"])
    assert {(i.entry.key, i.document_id) for i in pool.items.all()} == expected
    event = AuditEvent.objects.get(object_type="pool", object_id=body["pool_id"])
    assert (event.action, event.changes["items"]) == ("create", len(expected))
    assert world.client.get(f"{POOLS}/{body['pool_id']}").json() == body


def test_a_rater_judges_item_after_item_and_sees_no_run_or_rank(world, runs):
    pool_id = make_pool(world, runs).json()["pool_id"]
    seen = []
    while True:
        answer = person_client(world, "alice").get(f"{POOLS}/{pool_id}/next").json()
        if answer["item"] is None:
            break
        item = answer["item"]
        assert set(item) == {
            "position", "question_id", "question", "reference_answer", "document_id", "title", "text",
            "truncated", "exists",
        }  # fmt: skip
        assert item["exists"] and item["text"] and answer["grades"]["0"].startswith("not relevant")
        # Asked again before judging: the same item, not the next one.
        again = person_client(world, "alice").get(f"{POOLS}/{pool_id}/next").json()["item"]
        assert again == item
        assert judge(world, pool_id, item["question_id"], item["document_id"], 0).status_code == 201
        seen.append((item["question_id"], item["document_id"]))
    assert set(seen) == unjudged_pairs(runs) and len(seen) == len(set(seen))
    progress = world.client.get(f"{POOLS}/{pool_id}").json()["progress"]
    assert progress["items_done"] == progress["items"] == len(seen) and progress["raters"] == {
        "user:alice": len(seen)
    }


def test_one_rater_per_item_means_a_second_rater_never_gets_the_firsts_items(world, runs):
    pool_id = make_pool(world, runs).json()["pool_id"]
    given = {}
    for rater in ["alice", "bob"] * 10:
        item = person_client(world, rater).get(f"{POOLS}/{pool_id}/next").json()["item"]
        if item is None:
            continue
        pair = (item["question_id"], item["document_id"])
        assert given.get(pair, rater) == rater, f"{pair} given to {given[pair]} and {rater}"
        given[pair] = rater
        judge(world, pool_id, *pair, 1, rater=rater)
    assert set(given) == unjudged_pairs(runs) and set(given.values()) == {"alice", "bob"}


def test_two_raters_per_item_each_item_goes_to_both_never_twice_to_one(world, runs):
    pool_id = make_pool(world, runs, raters_per_item=2).json()["pool_id"]
    taken: dict[str, list[tuple]] = {"alice": [], "bob": [], "cara": []}
    for rater in ["alice", "bob", "cara"] * 20:
        item = person_client(world, rater).get(f"{POOLS}/{pool_id}/next").json()["item"]
        if item is not None:
            taken[rater].append((item["question_id"], item["document_id"]))
            judge(world, pool_id, item["question_id"], item["document_id"], 2, rater=rater)
    for rater, pairs in taken.items():
        assert len(pairs) == len(set(pairs)), rater
    counts = [sum(pair in pairs for pairs in taken.values()) for pair in unjudged_pairs(runs)]
    assert counts and set(counts) == {2}


def test_grade_0_counts_as_judged_and_cannot_judge_does_not(world, runs):
    first = make_pool(world, runs).json()
    items = JudgmentPool.objects.get(pk=first["pool_id"]).items.order_by("position")
    zero, unsure = items[0], items[1]
    assert judge(world, first["pool_id"], zero.entry.key, zero.document_id, 0).status_code == 201
    assert judge(world, first["pool_id"], unsure.entry.key, unsure.document_id, None).status_code == 201
    second = make_pool(world, runs).json()
    again = {(i.entry.key, i.document_id) for i in JudgmentPool.objects.get(pk=second["pool_id"]).items.all()}
    assert (zero.entry.key, zero.document_id) not in again
    assert (unsure.entry.key, unsure.document_id) in again
    assert (second["items"], second["judged_already"]) == (first["items"] - 1, first["judged_already"] + 1)


def test_a_raters_new_grade_replaces_the_old_one_and_both_are_audited(world, runs):
    pool_id = make_pool(world, runs).json()["pool_id"]
    item = JudgmentPool.objects.get(pk=pool_id).items.first()
    assert judge(world, pool_id, item.entry.key, item.document_id, 1).json() == {
        "judgments": 1, "created": 1, "updated": 0,
    }  # fmt: skip
    assert judge(world, pool_id, item.entry.key, item.document_id, 3, note="holds it all").json() == {
        "judgments": 1, "created": 0, "updated": 1,
    }  # fmt: skip
    (judgment,) = RelevanceJudgment.objects.all()
    assert (judgment.grade, judgment.note, judgment.rater) == (3, "holds it all", "user:alice")
    events = AuditEvent.objects.filter(object_type="judgment").order_by("pk")
    assert [(e.action, e.changes["grade"]) for e in events] == [("create", [None, 1]), ("update", [1, 3])]
    listed = world.client.get(JUDGMENTS, {"collection_id": "handbook", "rater": "user:alice"}).json()
    assert [(j["question_id"], j["document_id"], j["grade"]) for j in listed["results"]] == [
        (item.entry.key, item.document_id, 3)
    ]


# --- bad input: a 4xx naming what is wrong, nothing written ---------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "status", "code", "field"),
    [
        ({"depth": 0}, 400, "validation-error", "depth"),
        ({"depth": 101}, 400, "validation-error", "depth"),
        ({"raters_per_item": 11}, 400, "validation-error", "raters_per_item"),
        ({"run_ids": []}, 400, "validation-error", "run_ids"),
        ({"tags": "billing"}, 400, "validation-error", "tags"),
        ({"colour": "red"}, 400, "validation-error", "colour"),
        ({"run_ids": ["not-a-run"]}, 404, "not-found", None),
    ],
)
def test_a_bad_pool_request_is_refused_and_writes_nothing(world, runs, fields, status, code, field):
    before = db_state()
    response = make_pool(world, runs, **fields)
    assert response.status_code == status, response.json()
    error = response.json()["error"]
    assert error["code"] == code and (field is None or named_field(error) == field), error
    assert db_state() == before


def test_another_tenants_run_is_not_found_and_an_answer_run_is_named(
    world, runs, django_capture_on_commit_callbacks
):
    before = db_state()  # the rival asks with our run ids: they are not its runs
    response = world.other_client.post(
        POOLS, {"collection_id": "handbook", "run_ids": [str(runs[0].pk)]}, format="json"
    )
    assert response.status_code == 404 and response.json()["error"]["code"] == "not-found"
    assert db_state() == before
    answer_entries(world.collection, "refund", keys={"refund": "refund-window"})
    with django_capture_on_commit_callbacks(execute=True):
        answered = world.client.post(
            "/lmkit/v1/search/evaluate/answers", {"collection_id": "handbook"}, format="json"
        )
    assert answered.status_code in (200, 202), answered.json()
    answer_run = EvaluationRun.objects.filter(kind="answers").latest("created_at")
    before = db_state()
    response = make_pool(world, [runs[0], answer_run])
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "run_ids[1]", response.json()
    assert db_state() == before


def test_an_empty_pool_is_refused_and_writes_nothing(world, runs):
    pool_id = make_pool(world, runs).json()["pool_id"]
    for item in JudgmentPool.objects.get(pk=pool_id).items.all():
        judge(world, pool_id, item.entry.key, item.document_id, 0)
    before = db_state()
    response = make_pool(world, runs)
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "empty-pool" and error["details"]["field"] == "run_ids"
    assert db_state() == before


@pytest.mark.parametrize(
    ("judgment", "field"),
    [
        ({"grade": 4}, "judgments[0].grade"),
        ({"grade": -1}, "judgments[0].grade"),
        ({"grade": True}, "judgments[0].grade"),
        ({"grade": "2"}, "judgments[0].grade"),
        ({"rater": "ann\x07"}, "judgments[0].rater"),
        ({"rater": " ann"}, "judgments[0].rater"),
        ({"rater": "x" * 101}, "judgments[0].rater"),
        ({"note": "n" * 2001}, "judgments[0].note"),
        ({"question_id": "no-such-question"}, "judgments[0].question_id"),
        ({"document_id": "not-in-the-pool"}, "judgments[0].document_id"),
        ({"colour": "red"}, "judgments[0].colour"),
    ],
)
def test_a_bad_judgment_is_refused_naming_its_field_and_writes_nothing(world, runs, judgment, field):
    pool_id = make_pool(world, runs).json()["pool_id"]
    item = JudgmentPool.objects.get(pk=pool_id).items.first()
    good = {"question_id": item.entry.key, "document_id": item.document_id, "grade": 1, "rater": "ann"}
    before = db_state()
    body = {"collection_id": "handbook", "pool_id": pool_id, "judgments": [{**good, **judgment}]}
    response = person_client(world, "ann").post(JUDGMENTS, body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["details"]["field"] == field, response.json()
    assert db_state() == before


@pytest.mark.parametrize("count", [0, 1001])
def test_a_call_holds_one_to_a_thousand_judgments(world, runs, count):
    pool_id = make_pool(world, runs).json()["pool_id"]
    item = JudgmentPool.objects.get(pk=pool_id).items.first()
    one = {"question_id": item.entry.key, "document_id": item.document_id, "grade": 1, "rater": "ann"}
    before = db_state()
    body = {"collection_id": "handbook", "pool_id": pool_id, "judgments": [one] * count}
    response = person_client(world, "ann").post(JUDGMENTS, body, format="json")
    assert response.status_code == 400 and named_field(response.json()["error"]) == "judgments", (
        response.json()
    )
    assert db_state() == before


def test_every_bad_judgment_of_a_call_is_named_and_none_is_stored(world, runs):
    pool_id = make_pool(world, runs).json()["pool_id"]
    item = JudgmentPool.objects.get(pk=pool_id).items.first()
    good = {"question_id": item.entry.key, "document_id": item.document_id, "grade": 1, "rater": "ann"}
    body = {
        "collection_id": "handbook",
        "pool_id": pool_id,
        "judgments": [good, {**good, "grade": 7}, {**good, "rater": ""}],
    }
    response = person_client(world, "ann").post(JUDGMENTS, body, format="json")
    assert response.status_code == 400
    listed = [e["field"] for e in response.json()["error"]["details"]["errors"]]
    assert listed == ["judgments[1].grade", "judgments[2].rater"]
    assert not RelevanceJudgment.objects.exists()


def test_another_tenant_sees_none_of_the_pool_or_its_judgments(world, runs):
    pool_id = make_pool(world, runs).json()["pool_id"]
    item = JudgmentPool.objects.get(pk=pool_id).items.first()
    judge(world, pool_id, item.entry.key, item.document_id, 2)
    for path in (f"{POOLS}/{pool_id}", f"{POOLS}/{pool_id}/next"):
        response = world.other_client.get(path)
        assert response.status_code == 404 and response.json()["error"]["code"] == "not-found", path
    listed = world.other_client.get(JUDGMENTS, {"collection_id": "handbook"}).json()
    assert listed["results"] == []
    before = db_state()
    stolen = {
        "collection_id": "handbook",
        "pool_id": pool_id,
        "judgments": [
            {"question_id": item.entry.key, "document_id": item.document_id, "grade": 0, "rater": "rob"}
        ],
    }
    assert world.other_client.post(JUDGMENTS, stolen, format="json").status_code == 404
    assert db_state() == before


# --- the command ---------------------------------------------------------------------------------------------

SCOPE = ["--cluster", "acme", "--tenant", "search", "--collection", "handbook"]


def pool_command(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("pool", *SCOPE, *args, stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def test_the_command_pools_runs_or_a_batch_and_says_where_to_judge(world, runs):
    code, out, _ = pool_command("--runs", *(str(r.pk) for r in runs), "--depth", "3")
    pool = JudgmentPool.objects.get()
    assert code == 0 and out.startswith(f"pool {pool.pk}: {pool.items.count()} documents to judge (3 judged")
    assert f"/pools/{pool.pk}/judge/" in out and pool.created_by == "command:pool"
    code, out, _ = pool_command("--batch", str(runs[0].batch_id), "--depth", "3", "--raters-per-item", "2")
    assert code == 0 and JudgmentPool.objects.count() == 2
    assert set(JudgmentPool.objects.latest("created_at").runs.all()) == set(runs)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--batch", "not-a-batch"], "Batch not-a-batch not found."),
        (["--batch", "00000000-0000-0000-0000-000000000000"], "not found"),
        (
            ["--runs", "00000000-0000-0000-0000-000000000000"],
            "Run 00000000-0000-0000-0000-000000000000 not found.",
        ),
        (["--depth", "0", "--runs", "x"], "--depth: a whole number from 1 to 100."),
    ],
)
def test_the_command_refuses_in_one_line_and_writes_nothing(world, runs, args, says):
    before = db_state()
    code, out, err = pool_command(*args)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and says in err, err
    assert db_state() == before


def test_the_pool_reports_its_raters_agreement_and_the_splits_to_review(world, runs):
    pool_id = make_pool(world, runs, raters_per_item=2).json()["pool_id"]
    items = list(JudgmentPool.objects.get(pk=pool_id).items.order_by("position"))
    assert len(items) >= 3
    for n, item in enumerate(items):
        for rater in ("alice", "bob"):
            assert (
                judge(world, pool_id, item.entry.key, item.document_id, n % 4, rater=rater).status_code == 201
            )
    agreement = world.client.get(f"{POOLS}/{pool_id}").json()["agreement"]
    assert agreement == {
        "raters": ["user:alice", "user:bob"],
        "items_graded_twice": len(items),
        "krippendorff_alpha": 1.0,
        "pairs": [{"raters": ["user:alice", "user:bob"], "items": len(items), "weighted_kappa": 1.0}],
        "per_rater": [
            {"raters": ["user:alice", "the others"], "items": len(items), "weighted_kappa": 1.0},
            {"raters": ["user:bob", "the others"], "items": len(items), "weighted_kappa": 1.0},
        ],
        "splits": 0,
        "combined_grades": dict(sorted(Counter(str(n % 4) for n in range(len(items))).items())),
        "machines": [],  # no machine assessor judged this pool
    }
    # bob now says 3 where alice said 0: a split, and less agreement.
    judge(world, pool_id, items[0].entry.key, items[0].document_id, 3, rater="bob")
    changed = world.client.get(f"{POOLS}/{pool_id}").json()["agreement"]
    assert changed["splits"] == 1 and changed["krippendorff_alpha"] < 1.0
    assert changed["pairs"][0]["weighted_kappa"] < 1.0


def test_a_run_named_twice_votes_once(world, runs):
    once = make_pool(world, runs).json()["pool_id"]
    twice = make_pool(world, [runs[0], *runs]).json()["pool_id"]
    order = [
        [
            (i.entry_id, i.document_id, i.priority)
            for i in JudgmentPool.objects.get(pk=pk).items.order_by("position")
        ]
        for pk in (once, twice)
    ]
    assert order[0] == order[1]


def test_a_long_document_is_shown_cut_and_says_so(world, runs):
    pool_id = make_pool(world, runs).json()["pool_id"]
    item = person_client(world, "ann").get(f"{POOLS}/{pool_id}/next").json()["item"]
    assert item["truncated"] is False
    long_text = {item["document_id"]: "\n\n".join(f"Paragraph {n}. " + "word " * 400 for n in range(30))}
    add_documents(world.collection, long_text)  # the same document, now some 60,000 characters long
    shown = person_client(world, "ann").get(f"{POOLS}/{pool_id}/next").json()["item"]
    assert shown["document_id"] == item["document_id"] and shown["truncated"] is True
    assert len(shown["text"]) == 20_000 and shown["text"].startswith("Paragraph 0.")


def test_a_machines_grades_are_paired_with_people_never_combined_with_theirs(world, runs):
    pool_id = make_pool(world, runs).json()["pool_id"]
    pool = JudgmentPool.objects.get(pk=pool_id)
    items = list(pool.items.order_by("position"))
    for n, item in enumerate(items):
        judge(world, pool_id, item.entry.key, item.document_id, n % 3, rater="alice")
        RelevanceJudgment.objects.create(
            tenant=world.tenant, collection=world.collection, entry=item.entry, document_id=item.document_id,
            grade=3, rater="llm-relevance:scripted", pool=pool,
        )  # fmt: skip
    agreement = world.client.get(f"{POOLS}/{pool_id}").json()["agreement"]
    assert agreement["raters"] == ["llm-relevance:scripted", "user:alice"]
    # Only alice graded as a person: nothing is graded twice, her grades are the combined ones.
    assert agreement["items_graded_twice"] == 0 and agreement["krippendorff_alpha"] is None
    assert agreement["combined_grades"] == dict(
        sorted(Counter(str(n % 3) for n in range(len(items))).items())
    )
    (pair,) = agreement["pairs"]
    assert pair["raters"] == ["user:alice", "llm-relevance:scripted"] and pair["items"] == len(items)
    assert pair["weighted_kappa"] is not None and pair["weighted_kappa"] <= 0.0  # it always says 3
    # Against the people's combined grade: every document in column 3, in the row of alice's grade.
    (machine,) = agreement["machines"]
    people = Counter(n % 3 for n in range(len(items)))
    assert machine["rater"] == "llm-relevance:scripted" and machine["items"] == len(items)
    assert machine["confusion"] == [[0, 0, 0, people[g]] for g in range(3)] + [[0, 0, 0, 0]]
    assert machine["same_grade"] == {"0": 0.0, "1": 0.0, "2": 0.0, "3": None}
    assert machine["weighted_kappa"] == pair["weighted_kappa"]  # one person: her grades are the combined ones
    assert world.client.get(f"{POOLS}/{pool_id}").json()["progress"]["raters"] == {"user:alice": len(items)}


def test_a_fixed_order_pool_gives_items_by_position_and_an_unknown_order_is_refused(world, runs):
    made = make_pool(world, runs, order="fixed").json()
    assert made["order"] == "fixed" and make_pool(world, runs).json()["order"] == "adaptive"
    positions = []
    while item := person_client(world, "alice").get(f"{POOLS}/{made['pool_id']}/next").json()["item"]:
        positions.append(item["position"])
        judge(world, made["pool_id"], item["question_id"], item["document_id"], 3)
    assert positions == sorted(positions) == list(range(made["items"]))
    bad = make_pool(world, runs, order="best-first")
    assert bad.status_code == 400 and named_field(bad.json()["error"]) == "order"


def test_an_adaptive_pool_follows_the_run_whose_documents_turn_out_relevant(world):
    """Two runs over one question, each ranking its own three documents: once alice finds run B's first
    document relevant and run A's not, B's documents come before A's, whatever the fixed order says."""
    add_documents(
        world.collection, {f"{run}{n}": f"alpha beta gamma {run}{n}" for run in "ab" for n in (1, 2, 3)}
    )
    entry = add_entries(world.collection, EntryInput(question="alpha beta gamma?", key="q"))[0]
    made = []
    for run in "ab":
        stored = EvaluationRun.objects.create(
            tenant=world.tenant, collection_ids=["handbook"], batch_id=uuid.uuid4(), label=run,
            config={"search_type": "FullText"}, ks=[3], metrics={"ndcg@3": 0.0}, question_count=1,
        )  # fmt: skip
        stored.collections.add(world.collection)
        QuestionResult.objects.create(
            run=stored, position=0, entry_id=entry.pk, entry_key="q", collection_id="handbook",
            question=entry.question, expected={}, ranked_ids="\n".join(f"{run}{n}" for n in (1, 2, 3)),
        )  # fmt: skip
        made.append(stored)
    pool_id = make_pool(world, made).json()["pool_id"]
    given = []
    for _ in range(4):
        item = person_client(world, "alice").get(f"{POOLS}/{pool_id}/next").json()["item"]
        given.append(item["document_id"])
        judge(world, pool_id, "q", item["document_id"], 2 if item["document_id"].startswith("b") else 0)
    assert given == ["a1", "b1", "b2", "b3"]  # the fixed order would give a1 b1 a2 b2


def test_one_judgment_a_csv_file_and_a_qrels_file_are_stored_as_a_list_is(world, runs):
    # One judgment's fields, live: its rater is the caller (naming themselves, in any case, is the same).
    one = {
        "collection_id": "handbook",
        "question_id": "q1",
        "document_id": "shipping",
        "grade": 0,
        "rater": "Alice",
    }
    response = person_client(world, "alice").post(JUDGMENTS, one, format="json")
    assert response.status_code == 201 and response.json()["created"] == 1, response.json()
    csv_file = SimpleUploadedFile(
        "grades.csv",
        b"question_id,document_id,grade,rater,note\nq1,warranty,1,Bob,related\nq2,refunds,,bob,\n",
    )
    response = world.client.post(
        JUDGMENTS, {"collection_id": "handbook", "file": csv_file}, format="multipart"
    )
    assert response.status_code == 201 and response.json()["created"] == 2, response.json()
    qrels = SimpleUploadedFile("grades.qrels", b"q3 0 refunds 2\nq3 0 shipping 0\n")
    response = world.client.post(
        JUDGMENTS, {"collection_id": "handbook", "file": qrels, "rater": "cara"}, format="multipart"
    )
    assert response.status_code == 201 and response.json()["created"] == 2, response.json()
    stored = {
        (j.rater, j.entry.key, j.document_id): (j.grade, j.note) for j in RelevanceJudgment.objects.all()
    }
    assert stored == {
        ("user:alice", "q1", "shipping"): (0, ""),
        # a file's raters are imported raters, their names compared without case
        ("imported:bob", "q1", "warranty"): (1, "related"),
        ("imported:bob", "q2", "refunds"): (None, ""),  # an empty grade: cannot judge
        ("imported:cara", "q3", "refunds"): (2, ""),
        ("imported:cara", "q3", "shipping"): (0, ""),
    }


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"file": b"q1 0 refunds 2\n"}, "rater: a qrels file names no rater"),
        (
            {"file": b"q1 0 refunds 7\n", "rater": "cara"},
            "grade: 7 is not a grade of the collection's 0-3 scale",
        ),
        ({"file": b"q1 0 refunds -1\n", "rater": "cara"}, "line 1: grade '-1'"),
        ({"file": b"question_id,document_id,grade\nq1,refunds,two\n", "rater": "x"}, "line 2: grade 'two'"),
        ({"file": b"q1 refunds 2\n", "rater": "cara"}, "line 1: expected 4 columns"),
        # One cell over the one CSV field limit: the line and the limit, never a 500.
        (
            {
                "file": b"question_id,document_id,grade,rater,note\nq1,refunds,2,bob,"
                + b"x" * 1_000_001
                + b"\n"
            },
            "line 2: a cell is longer than 1,000,000 characters, the limit.",
        ),
        (
            {"file": b'question_id,document_id,grade,rater\nq1,refunds,2,"bob\n'},
            "line 2: not CSV (unexpected end of data)",
        ),
        # NUL, in a file or a form field: refused on every database (PostgreSQL cannot store it)
        (
            {"file": b"question_id,document_id,grade,rater,note\nq1,refunds,2,bob,half\x00of it\n"},
            "line 2: NUL characters are not allowed.",
        ),
        ({"file": b"q1 0 refunds 2\n", "rater": "ca\x00ra"}, "rater: NUL characters are not allowed."),
        (
            {"file": b"q1 0 refunds 2\n", "rater": "cara", "no\x00te": "x"},
            "no\\x00te: NUL characters are not allowed.",
        ),
    ],
)
def test_a_bad_judgment_file_is_a_400_naming_the_line_and_stores_nothing(world, runs, body, named):
    before = db_state()
    upload = {"collection_id": "handbook", **body, "file": SimpleUploadedFile("grades.txt", body["file"])}
    response = world.client.post(JUDGMENTS, upload, format="multipart")
    assert response.status_code == 400, response.json()
    assert named in response.json()["error"]["message"], response.json()
    assert db_state() == before


def test_a_list_and_a_file_at_once_are_refused(world, runs):
    one = {"question_id": "q1", "document_id": "refunds", "grade": 1, "rater": "alice"}
    body = {"collection_id": "handbook", **one, "judgments": [one]}
    response = world.client.post(JUDGMENTS, body, format="json")
    assert response.status_code == 400 and named_field(response.json()["error"]) == "judgments"
    assert "send judgments (a list), one judgment's fields, or a file" in response.json()["error"]["message"]
    assert not RelevanceJudgment.objects.exists()
