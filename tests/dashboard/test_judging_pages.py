"""Judging in the dashboard (issue 26): Compare makes a pool of what its runs found; the workspace shows one
pooled document at a time with the question's words marked, stores the signed-in rater's grade, goes back and
forth among their items, and takes their last judgment back; another tenant's pool is a 404."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from evalsite.audit.models import AuditEvent
from evaluation.configs import parse_configs
from evaluation.judgments import pools
from evaluation.judgments.lexical import LEXICAL_RATER
from evaluation.models import JudgmentPool, PoolApplication, RelevanceJudgment
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset.models import GoldenEntry
from goldenset.text import tokenize
from goldenset.vocabulary.stopwords import CONTENT_STOPWORDS
from tests.conftest import add_documents
from tests.dashboard.conftest import CONFIGS, Batch

RATER = "user:alice"


@pytest.fixture
def batch(world, golden) -> Batch:
    """The dashboard's batch, over the handbook and one more document that shares words with a question but is
    expected by none (so the runs rank it and the pool holds it)."""
    add_documents(
        world.collection, {"window-faq": "How long is a refund window? Ask the shop about the window."}
    )
    batch_id, runs = evaluate_retrieval(
        tenant=world.tenant, collections=[world.collection], ks=[1, 3],
        configs=parse_configs(CONFIGS, available_rerankers()),
    )  # fmt: skip
    return Batch(batch_id, runs)


def make_pool(alice, batch) -> JudgmentPool:
    response = alice.post(
        reverse("dashboard:pool-new"),
        {"collection": "handbook", "run": [str(r.pk) for r in batch.runs], "depth": "3"},
    )
    pool = JudgmentPool.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:pool", args=[pool.pk])
    return pool


def shown_position(response) -> int:
    return int(re.search(r'id="judge-item" data-position="(\d+)"', response.content.decode()).group(1))


def test_compare_offers_to_judge_what_its_runs_found(alice, world, batch):
    page = alice.get(reverse("dashboard:compare") + f"?batch={batch.batch_id}")
    html = page.content.decode()
    assert 'id="pool-new"' in html and "Judge what these runs found" in html
    assert all(f'name="run" value="{r.pk}"' in html for r in batch.runs)
    pool = make_pool(alice, batch)
    assert set(pool.runs.all()) == set(batch.runs) and pool.created_by == RATER
    detail = alice.get(reverse("dashboard:pool", args=[pool.pk]))
    assert (
        detail.status_code == 200
        and f"<strong>{pool.items.count()}</strong> document" in detail.content.decode()
    )


def test_answer_runs_offer_no_pool(alice, world, answer_batch):
    page = alice.get(reverse("dashboard:compare") + f"?batch={answer_batch.batch_id}")
    assert page.status_code == 200 and 'id="pool-new"' not in page.content.decode()


def test_the_workspace_shows_an_item_with_the_questions_words_marked_and_no_run_or_rank(alice, world, batch):
    pool = make_pool(alice, batch)
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    seen_marks = 0
    while 'id="judge-item"' in (page := alice.get(url)).content.decode():
        html = page.content.decode()
        item = pool.items.get(position=shown_position(page))
        assert item.entry.question in html and f'data-document="{item.document_id}"' in html
        # Every word of the document that is a content word of the question is marked, and nothing else.
        terms = {t for t in tokenize(item.entry.question) if t not in CONTENT_STOPWORDS}
        text = pools.item_view(item)["text"]
        expected = [w for w in re.findall(r"\w+", text) if tokenize(w) and set(tokenize(w)) <= terms]
        assert re.findall(r"<mark>([^<]+)</mark>", html) == expected
        seen_marks += len(expected)
        shown = html.split('id="judge-item"')[1].split("</section>")[0]
        assert "rank" not in shown.lower() and not any(f">{r.label}<" in shown for r in batch.runs)
        for grade in ("0", "1", "2", "3", "cannot"):
            assert f'name="grade" value="{grade}"' in shown
        alice.post(url, {"position": item.position, "grade": "0"})
    assert seen_marks > 0  # some pooled document shares words with its question


def test_grading_moves_on_and_undo_brings_the_item_back(alice, world, batch):
    pool = make_pool(alice, batch)
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    first = shown_position(alice.get(url))
    response = alice.post(url, {"position": first, "grade": "2", "note": "half of it"})
    assert response.status_code == 302
    judgment = RelevanceJudgment.objects.get(rater=RATER)
    assert (judgment.grade, judgment.note, judgment.pool_id) == (2, "half of it", pool.pk)
    second = shown_position(alice.get(url))
    assert second != first
    alice.post(url, {"position": second, "grade": "cannot"})
    unsure = pool.items.get(position=second)
    assert (
        RelevanceJudgment.objects.get(rater=RATER, entry=unsure.entry, document_id=unsure.document_id).grade
        is None
    )
    # k: back to the first item, its grade shown as chosen.
    back = alice.get(f"{url}?position={first}")
    assert shown_position(back) == first and 'value="2" class="grade chosen"' in back.content.decode()
    undone = alice.post(reverse("dashboard:pool-undo", args=[pool.pk]))
    assert undone["Location"] == f"{url}?position={second}"
    assert RelevanceJudgment.objects.filter(rater=RATER).count() == 1
    assert AuditEvent.objects.filter(object_type="judgment", action="delete").count() == 1
    assert shown_position(alice.get(url)) == second  # theirs to judge again, first in line


def test_a_bad_grade_stores_nothing(alice, world, batch):
    pool = make_pool(alice, batch)
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    position = shown_position(alice.get(url))
    for grade in ("4", "-1", "", "two"):
        response = alice.post(url, {"position": position, "grade": grade}, follow=True)
        assert "Choose a grade from 0 to 3" in response.content.decode()
    for bad in ("abc", "-1", "99999999999999999999", ""):
        response = alice.post(url, {"position": bad, "grade": "1"}, follow=True)
        assert response.status_code == 200 and "Choose a grade from 0 to 3" in response.content.decode()
    for bad in ("99999999999999999999", "abc"):  # no position: the rater's next item, as without one
        assert shown_position(alice.get(f"{url}?position={bad}")) == position
    assert alice.get(f"{url}?position=12345").status_code == 404  # a place that is not theirs
    assert not RelevanceJudgment.objects.exists()


def test_a_note_with_a_nul_character_is_a_400_naming_it_and_stores_nothing(alice, world, batch):
    """PostgreSQL cannot store NUL (a 500 there), SQLite would: refused on both, before the view reads it."""
    pool = make_pool(alice, batch)
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    position = shown_position(alice.get(url))
    response = alice.post(url, {"position": position, "grade": "2", "note": "half\x00of it"})
    assert response.status_code == 400
    assert response.content.decode() == "note: NUL characters are not allowed."
    assert not RelevanceJudgment.objects.exists()
    assert alice.get(f"{url}?position=1%002").status_code == 400  # a query value, the same rule


def test_an_empty_pool_says_why_and_makes_nothing(alice, world, batch):
    pool = make_pool(alice, batch)
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    while 'id="judge-item"' in (page := alice.get(url)).content.decode():
        alice.post(url, {"position": shown_position(page), "grade": "0"})
    assert 'id="judge-done"' in page.content.decode()
    response = alice.post(
        reverse("dashboard:pool-new"),
        {"collection": "handbook", "run": [str(r.pk) for r in batch.runs], "depth": "3",
         "back": reverse("dashboard:compare")},
        follow=True,
    )  # fmt: skip
    assert "No pool was made" in response.content.decode() and JudgmentPool.objects.count() == 1


def test_another_tenants_pool_is_a_404(alice, world, batch, outsider):
    pool = make_pool(alice, batch)
    rob = Client()
    rob.force_login(outsider)
    for name in ("dashboard:pool", "dashboard:pool-judge", "dashboard:pool-apply"):
        assert rob.get(reverse(name, args=[pool.pk])).status_code == 404
    assert rob.post(reverse("dashboard:pool-undo", args=[pool.pk])).status_code == 404
    assert rob.post(reverse("dashboard:pool-apply", args=[pool.pk]), {"judgments": "0"}).status_code == 404
    assert (
        rob.post(
            reverse("dashboard:pool-new"), {"collection": "handbook", "run": [str(r.pk) for r in batch.runs]}
        ).status_code
        == 404
    )


def judge_all(alice, pool, grade="0") -> int:
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    judged = 0
    while 'id="judge-item"' in (page := alice.get(url)).content.decode():
        alice.post(url, {"position": shown_position(page), "grade": grade})
        judged += 1
    return judged


def test_apply_shows_every_run_before_and_after_then_writes_and_takes_back(alice, world, batch):
    pool = make_pool(alice, batch)
    judged = judge_all(alice, pool)
    preview_url = reverse("dashboard:pool-apply", args=[pool.pk])
    page = alice.get(preview_url)
    assert page.status_code == 200
    rows = page.context["rows"]
    assert {row["label"] for row in rows} == {r.label for r in batch.runs}
    for row in rows:
        cells = {name: (before, after) for name, before, after, _ in row["cells"]}
        assert set(cells) == {"ndcg@3", "recall@3", "judged@3", "ndcg_cond@3", "bpref"}
        assert cells["judged@3"][1] > cells["judged@3"][0]  # every pooled document judged (0)
        assert cells["ndcg@3"][0] == cells["ndcg@3"][1]  # grade 0 is no gain: the standard measures hold
    html = page.content.decode()
    assert f"Write {judged} judgments into the golden set" in html and 'id="apply-runs"' in html
    before = {e.key: dict(e.grades) for e in GoldenEntry.objects.all()}

    # The pool's grades changed since the preview: nothing is written.
    stale = alice.post(preview_url, {"judgments": str(judged + 1)}, follow=True)
    assert "changed since the preview" in stale.content.decode() and not PoolApplication.objects.exists()

    done = alice.post(preview_url, {"judgments": str(judged)}, follow=True)
    assert f"{judged} judgments written" in done.content.decode()
    application = PoolApplication.objects.get()
    assert application.created_by == RATER and application.judgments == judged
    after = {e.key: dict(e.grades) for e in GoldenEntry.objects.all()}
    assert after != before and sum(list(g.values()).count(0) for g in after.values()) == judged
    assert 'id="pool-applications"' in done.content.decode() and "Take back" in done.content.decode()

    taken = alice.post(reverse("dashboard:pool-revert", args=[pool.pk, application.pk]), follow=True)
    assert "Taken back" in taken.content.decode()
    assert {e.key: dict(e.grades) for e in GoldenEntry.objects.all()} == before
    again = alice.post(reverse("dashboard:pool-revert", args=[pool.pk, application.pk]), follow=True)
    assert "Not taken back" in again.content.decode()


def test_a_machine_assessor_is_shown_against_people_with_its_confusion_matrix(alice, world, batch):
    pool = make_pool(alice, batch)
    judged = judge_all(alice, pool, grade="1")
    call_command(
        "judge", "--cluster", world.tenant.cluster.slug, "--tenant", world.tenant.slug, "--collection", "handbook",
        "--pool", str(pool.pk), "--assessor", "lexical", stdout=StringIO(),
    )  # fmt: skip
    page = alice.get(reverse("dashboard:pool", args=[pool.pk]))
    (machine,) = page.context["agreement"]["machines"]
    assert machine["rater"] == LEXICAL_RATER and machine["items"] == judged
    assert sum(machine["confusion"][1]) == judged and sum(map(sum, machine["confusion"])) == judged
    lexical = RelevanceJudgment.objects.filter(pool=pool, rater=LEXICAL_RATER)
    assert machine["same_grade"]["1"] == pytest.approx(lexical.filter(grade=1).count() / judged, abs=1e-4)
    html = page.content.decode()
    assert 'id="pool-machines"' in html and "weak fallback" in html
    # The people's progress and their combined grades are theirs alone.
    assert page.context["progress"].judgments == judged
    assert page.context["agreement"]["combined_grades"] == {"1": judged}
    # The collection's calibration report shows the same assessor against the same people.
    report = alice.get(reverse("dashboard:collection-calibration", args=["handbook"]))
    assert report.status_code == 200 and report.context["assessors"] == [machine]
    assert 'id="relevance-assessors"' in report.content.decode()
