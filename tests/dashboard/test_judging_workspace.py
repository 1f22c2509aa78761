"""The judging workspace from use (issue 40, item 9): s skips an item without recording anything and the next
one is new, the skipped one coming back only when nothing else is left; the rater's place among their own items;
each rater's judged and given counts on the pool page; the curator's page of the items raters split on, settled
with a grade that apply takes. And item 10 where judging meets it: the workspace grades on the collection's
scale, and a curator changes the scale after a preview."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.audit.models import AuditEvent
from evaluation.judgments import apply
from evaluation.models import RelevanceJudgment
from goldenset.models import GoldenEntry
from tests.dashboard import test_judging_pages as pages
from tests.dashboard.test_judging_pages import make_pool, shown_position
from tests.support import member_of

batch = pages.batch  # the judging pages' fixture: the handbook's runs with a document no question expects


def html(response) -> str:
    return response.content.decode()


@pytest.fixture
def bob(world) -> Client:
    client = Client()
    client.force_login(member_of(world.tenant, "bob", role="rater"))
    return client


def test_s_skips_an_item_records_nothing_and_it_comes_back_only_when_nothing_else_is_left(
    alice, world, batch
):
    pool = make_pool(alice, batch)
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    first = alice.get(url)
    skipped = shown_position(first)
    assert 'data-key="s"' in html(first) and re.search(r"Item 1 of 1 of yours", html(first))
    response = alice.post(url, {"position": skipped, "skip": "1"}, follow=True)
    assert "Skipped item" in html(response)
    assert not RelevanceJudgment.objects.exists()  # nothing recorded, nothing counted as judged
    seen = []
    while 'id="judge-item"' in (page := alice.get(url)).content.decode():
        position = shown_position(page)
        if position == skipped:  # back: nothing else is left, and the page says so
            assert 'id="judge-back-from-skip"' in html(page) and len(seen) == pool.items.count() - 1
            break
        assert 'id="judge-back-from-skip"' not in html(page)
        seen.append(position)
        alice.post(url, {"position": position, "grade": "0"})
    else:
        pytest.fail("the skipped item never came back")
    assert skipped not in seen and len(seen) == len(set(seen)) > 0
    alice.post(url, {"position": skipped, "grade": "1"})
    assert 'id="judge-done"' in html(alice.get(url))
    assert RelevanceJudgment.objects.filter(pool=pool).count() == pool.items.count()


def test_a_rater_cannot_skip_an_item_that_is_not_theirs(alice, world, batch):
    pool = make_pool(alice, batch)
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    position = shown_position(alice.get(url))
    other = pool.items.exclude(position=position).first()
    assert alice.post(url, {"position": other.position, "skip": "1"}).status_code == 404


def test_j_and_k_move_among_the_raters_own_items_with_the_place_shown(alice, world, batch):
    pool = make_pool(alice, batch)
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    order = []
    for _ in range(3):
        position = shown_position(alice.get(url))
        order.append(position)
        alice.post(url, {"position": position, "grade": "2"})
    middle = alice.get(f"{url}?position={order[1]}")
    text = html(middle)
    assert "Item 2 of 3 of yours" in text
    assert f'?position={order[0]}" id="judge-previous" data-key="k"' in text
    assert f'?position={order[2]}" id="judge-next" data-key="j"' in text


def test_the_pool_page_shows_each_raters_judged_and_given_counts(alice, bob, world, batch):
    pool = make_pool(alice, batch)
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    for client, grades in ((alice, ["1", "2"]), (bob, ["0"])):
        for grade in grades:
            client.post(url, {"position": shown_position(client.get(url)), "grade": grade})
        client.get(url)  # given one more, not judged yet
    page = alice.get(reverse("dashboard:pool", args=[pool.pk]))
    rows = {row["rater"]: (row["judged"], row["given"]) for row in page.context["rater_rows"]}
    assert rows == {"user:alice": (2, 3), "user:bob": (1, 2)}
    assert 'data-rater="user:alice"' in html(page) and "2 / 3" in html(page)


def test_a_curator_settles_a_split_and_apply_takes_the_settling_grade(alice, bob, world, batch):
    response = alice.post(
        reverse("dashboard:pool-new"),
        {
            "collection": "handbook",
            "run": [str(r.pk) for r in batch.runs],
            "depth": "3",
            "raters_per_item": "2",
        },
    )
    assert response.status_code == 302
    from evaluation.models import JudgmentPool  # noqa: PLC0415  (the pool made above)

    pool = JudgmentPool.objects.get()
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    first = shown_position(alice.get(url))
    alice.post(url, {"position": first, "grade": "3"})
    assert shown_position(bob.get(url)) == first
    bob.post(url, {"position": first, "grade": "0"})
    second = shown_position(alice.get(url))
    alice.post(url, {"position": second, "grade": "2"})
    bob.post(url, {"position": shown_position(bob.get(url)), "grade": "1"})  # one apart: no split

    detail = alice.get(reverse("dashboard:pool", args=[pool.pk]))
    assert detail.context["splits"] == 1 and 'id="pool-splits-link"' in html(detail)
    splits_url = reverse("dashboard:pool-splits", args=[pool.pk])
    page = alice.get(splits_url)
    (row,) = page.context["splits"]
    assert row["split"].grades == {"user:alice": 3, "user:bob": 0} and row["split"].item.position == first
    assert '<th class="num">user:alice</th><th class="num">user:bob</th>' in html(page)
    assert apply.pool_grades(pool)[0][0].grade == 0  # the median of 0 and 3: the lower

    assert bob.get(splits_url).status_code == 403  # a rater does not settle
    assert "Not settled" in html(alice.post(splits_url, {"position": second, "grade": "2"}, follow=True))
    refused = alice.post(splits_url, {"position": first, "grade": "7"}, follow=True)
    assert "Choose an item and a grade" in html(refused)
    done = alice.post(splits_url, {"position": first, "grade": "2"}, follow=True)
    assert f"Item {first + 1} settled at 2" in html(done) and 'data-settled="2"' in html(done)
    settlement = RelevanceJudgment.objects.get(pool=pool, rater="settled-by:user:alice")
    assert settlement.grade == 2 and settlement.detail == {"scale": "0-3", "settles": True}
    assert AuditEvent.objects.filter(object_type="judgment", object_id=str(settlement.pk)).exists()
    grades = {(g.entry_id, g.document_id): g for g in apply.pool_grades(pool)[0]}
    item = pool.items.get(position=first)
    assert grades[(str(item.entry_id), item.document_id)].grade == 2  # the settlement holds
    assert alice.get(reverse("dashboard:pool", args=[pool.pk])).context["splits"] == 0
    assert (
        RelevanceJudgment.objects.get(
            pool=pool, rater="user:alice", entry=item.entry, document_id=item.document_id
        ).grade
        == 3
    )
    progress = alice.get(reverse("dashboard:pool", args=[pool.pk])).context["progress"]
    assert progress.raters == {"user:alice": 2, "user:bob": 2}  # the settling grade is no rater's work


def test_another_tenants_splits_page_is_a_404(alice, world, batch, outsider):
    pool = make_pool(alice, batch)
    rob = Client()
    rob.force_login(outsider)
    assert rob.get(reverse("dashboard:pool-splits", args=[pool.pk])).status_code == 404
    assert (
        rob.post(
            reverse("dashboard:pool-splits", args=[pool.pk]), {"position": "0", "grade": "1"}
        ).status_code
        == 404
    )


def test_the_workspace_grades_on_a_binary_collections_scale(alice, world, batch):
    world.collection.grade_scale = "binary"
    world.collection.save()
    pool = make_pool(alice, batch)
    url = reverse("dashboard:pool-judge", args=[pool.pk])
    page = alice.get(url)
    shown = html(page).split('id="judge-item"')[1].split("</section>")[0]
    assert (
        'value="0"' in shown
        and 'value="1"' in shown
        and 'value="2"' not in shown
        and 'value="3"' not in shown
    )
    assert "binary scale" in html(page)
    position = shown_position(page)
    refused = alice.post(url, {"position": position, "grade": "3"}, follow=True)
    assert (
        "Choose a grade from 0 to 1 (binary scale)" in html(refused)
        and not RelevanceJudgment.objects.exists()
    )
    alice.post(url, {"position": position, "grade": "1"})
    assert RelevanceJudgment.objects.get().detail == {"scale": "binary"}


def test_a_curator_changes_the_scale_after_a_preview_and_every_grade_is_converted(alice, world, golden):
    entry = GoldenEntry.objects.get(key="q-refund")
    entry.grades = {"refunds": 3}
    entry.save()
    url = reverse("dashboard:collection-scale", args=["handbook"])
    assert "0-3" in html(alice.get(reverse("dashboard:collection", args=["handbook"])))
    preview = alice.get(url, {"grade_scale": "binary"})
    summary = preview.context["preview"]
    assert (summary.source, summary.target) == ("0-3", "binary")
    assert summary.by_grade["3->1"] == 1 and set(summary.by_grade) <= {"1->0", "2->1", "3->1"}
    stale = alice.post(url, {"grade_scale": "binary", "grades": str(summary.grades + 1)}, follow=True)
    assert "nothing was converted" in html(stale)
    done = alice.post(url, {"grade_scale": "binary", "grades": str(summary.grades)}, follow=True)
    assert f"{summary.grades} grades converted" in html(done)
    world.collection.refresh_from_db()
    assert world.collection.grade_scale == "binary"
    entry.refresh_from_db()
    assert entry.qrels() == {"refunds": 1}
    others = GoldenEntry.objects.exclude(pk=entry.pk).exclude(expected_document_ids=[], grades={})
    assert all(set(e.qrels().values()) <= {0, 1} for e in others)  # 1 (related) became 0, 2 and 3 became 1
    assert AuditEvent.objects.filter(
        object_type="collection", changes__grade_scale=["0-3", "binary"]
    ).exists()
    assert "is no grade scale" in html(alice.get(url, {"grade_scale": "1-9"}))
    bad = alice.post(url, {"grade_scale": "1-9", "grades": "0"}, follow=True)
    assert "The scale was not changed" in html(bad)
