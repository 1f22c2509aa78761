"""Judging in a real browser (issue 26): from Compare, "judge what these runs found" makes a pool; a rater judges
30 of its documents by keyboard alone (0-3, x, a note with n, u to undo, k and j to go back and forth), and a
second rater, when the pool asks for one rater per item, is never given the first one's items."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command

from evaluation.models import JudgmentPool, PoolApplication, RelevanceJudgment
from tests.browser.pages import assert_clean, log_in, open_page, watch_requests

pytestmark = pytest.mark.django_db(transaction=True)

KEYS = ["0", "1", "2", "3", "x"]


def position(page) -> int:
    return int(page.get_attribute("#judge-item", "data-position"))


def press(page, key: str) -> None:
    """A key that submits or follows a link: wait for the next page to be loaded."""
    with page.expect_navigation():
        page.keyboard.press(key)


def pool_from_compare(page, base: str, batch) -> JudgmentPool:
    """alice signs in, opens the batch's comparison and makes a pool of what its runs found."""
    log_in(page, base, "alice", "alice-judges-pools")
    page.goto(f"{base}/compare/?batch={batch}")
    page.click("#pool-new button:has-text('Judge what these runs found')")
    page.wait_for_selector("#pool-progress")
    return JudgmentPool.objects.get()


def test_a_rater_judges_thirty_documents_by_keyboard_alone(live_server, page, screenshot, policies_batch):
    urls = watch_requests(page)
    base = live_server.url
    pool = pool_from_compare(page, base, policies_batch)
    assert pool.items.count() >= 30
    screenshot(page, "judge-01-pool", max_height=900)
    page.click("#start-judging")
    page.wait_for_selector("#judge-item")
    screenshot(page, "judge-02-workspace", max_height=1400)
    assert page.locator("#judge-item mark").count() > 0  # the question's words, marked in the document
    given = {}
    for n in range(30):
        at, key = position(page), KEYS[n % len(KEYS)]
        if n == 7:  # a note, typed after "n", kept with the grade
            page.keyboard.press("n")
            page.keyboard.type("mentions it only in passing")
            page.keyboard.press("Escape")
        press(page, key)
        given[at] = key
        assert position(page) != at or n == 29
    # u: the last judgment taken back, its document shown again, first in line.
    last = list(given)[-1]
    press(page, "u")
    assert position(page) == last
    del given[last]
    # k and j: back to the item before, then forward again.
    press(page, "k")
    before = position(page)
    assert before < last and page.locator("#judge-item .grade.chosen").count() == 1
    press(page, "j")
    assert position(page) == last
    screenshot(page, "judge-03-after-undo", max_height=1400)
    stored = {
        pool.items.get(entry=j.entry, document_id=j.document_id).position: j
        for j in RelevanceJudgment.objects.filter(pool=pool, rater="user:alice")
    }
    assert {p: ("x" if j.grade is None else str(j.grade)) for p, j in stored.items()} == given
    assert [j.note for j in stored.values() if j.note] == ["mentions it only in passing"]
    assert re.search(r"You judged\s+29", page.inner_text("#judge-progress"))

    # Into the golden set: the preview shows every run's metrics before and after, then the write.
    page.goto(f"{base}/pools/{pool.pk}/")
    page.click("#apply-preview")
    page.wait_for_selector("#apply-runs")
    graded = sum(1 for key in given.values() if key != "x")
    assert f"Write {graded} judgments" in page.inner_text("#apply-form")
    assert page.locator("#apply-runs tbody tr").count() == pool.runs.count()  # no other run is stored
    judged_cells = page.locator("#apply-runs td[data-metric^='judged@']").all_inner_texts()
    assert judged_cells and all("→" in cell for cell in judged_cells)
    screenshot(page, "judge-04-apply-preview", max_height=1200)
    with page.expect_navigation():
        page.click("#apply-form button")
    assert f"{graded} judgments written" in page.inner_text("body")
    assert page.locator("#pool-applications tbody tr").count() == 1
    application = PoolApplication.objects.get(pool=pool)
    assert application.judgments == graded and application.created_by == "user:alice"
    screenshot(page, "judge-05-applied", max_height=1200)

    # The keyless assessor judges the same pool: shown against alice, never combined with her grades.
    call_command(
        "judge", "--cluster", pool.tenant.cluster.slug, "--tenant", pool.tenant.slug,
        "--collection", pool.collection.slug, "--pool", str(pool.pk), "--assessor", "lexical", stdout=StringIO(),
    )  # fmt: skip
    page.goto(f"{base}/pools/{pool.pk}/")
    assert page.locator("#pool-machines table.confusion").count() == 1
    screenshot(page, "judge-06-machines", max_height=1400)
    assert_clean(page, urls, "judging")


def test_a_second_rater_never_gets_the_first_raters_items(live_server, browser, page, policies_batch):
    base = live_server.url
    pool = pool_from_compare(page, base, policies_batch)
    pool_items = pool.items.count()
    with open_page(browser, {"width": 1280, "height": 900}) as other:
        log_in(other, base, "bob", "bob-judges-pools")
        seen = {"alice": [], "bob": []}
        page.goto(f"{base}/pools/{pool.pk}/judge/")
        other.goto(f"{base}/pools/{pool.pk}/judge/")
        for _ in range(8):
            for rater, tab in (("alice", page), ("bob", other)):
                seen[rater].append(position(tab))
                press(tab, "1")
        assert not set(seen["alice"]) & set(seen["bob"]), seen
        assert len(set(seen["alice"])) == len(set(seen["bob"])) == 8
        assert other.errors == [] and page.errors == []
    assert RelevanceJudgment.objects.filter(pool=pool).count() == 16 and pool_items >= 30


def test_a_rater_turns_the_one_key_shortcuts_off_and_they_stay_off(
    live_server, page, screenshot, policies_batch
):
    """WCAG 2.1.4: the workspace's one-key shortcuts can be turned off (a speech-input user's words are not taken
    for grades), the choice is kept in the browser for the next visit, and turned on again."""
    base = live_server.url
    pool = pool_from_compare(page, base, policies_batch)
    page.goto(f"{base}/pools/{pool.pk}/judge/")
    switch = page.get_by_role("checkbox", name="One-key shortcuts")
    assert switch.is_visible() and switch.is_checked()
    switch.uncheck()
    page.locator("body").click(position={"x": 5, "y": 5})  # the focus off the checkbox, as a rater would
    at = position(page)
    page.keyboard.press("1")
    page.keyboard.press("j")
    page.wait_for_timeout(300)  # a shortcut would have submitted or navigated by now
    assert position(page) == at and RelevanceJudgment.objects.filter(pool=pool).count() == 0
    assert "off" in page.inner_text(".judge-head .keys")

    page.reload()
    switch = page.get_by_role("checkbox", name="One-key shortcuts")
    assert not switch.is_checked()  # kept across visits
    page.keyboard.press("2")
    page.wait_for_timeout(300)
    assert RelevanceJudgment.objects.filter(pool=pool).count() == 0

    switch.check()
    page.locator("body").click(position={"x": 5, "y": 5})  # the focus off the checkbox, as a rater would
    press(page, "2")
    assert RelevanceJudgment.objects.get(pool=pool).grade == 2
    screenshot(page, "judge-shortcuts", max_height=500)
    assert page.errors == []


def place(page) -> str:
    return page.inner_text("#judge-place")


def test_a_rater_skips_with_s_and_moves_among_their_own_items_with_j_and_k(
    live_server, page, screenshot, policies_batch
):
    """Issue 40, item 9: s passes over an item without recording anything and the next one is new; j and k move
    through the rater's own items (skipped ones among them) with their place shown; the workspace's next new item
    is never the skipped one while others are left."""
    urls = watch_requests(page)
    base = live_server.url
    pool = pool_from_compare(page, base, policies_batch)
    page.goto(f"{base}/pools/{pool.pk}/judge/")
    skipped = position(page)
    assert "Item 1 of 1 of yours" in place(page) and "s skip" in page.inner_text("#judge-keys")
    press(page, "s")
    graded = position(page)
    assert graded != skipped and "Item 2 of 2 of yours" in place(page)
    assert RelevanceJudgment.objects.filter(pool=pool).count() == 0  # a skip records nothing
    press(page, "1")
    third = position(page)
    assert third not in (skipped, graded) and "Item 3 of 3 of yours" in place(page)
    press(page, "k")
    assert position(page) == graded and "Item 2 of 3 of yours" in place(page)
    assert page.locator("#judge-item .grade.chosen").count() == 1
    press(page, "k")
    assert position(page) == skipped and "Item 1 of 3 of yours" in place(page)
    press(page, "j")
    press(page, "j")
    assert position(page) == third
    screenshot(page, "judge-07-skip-and-place", max_height=900)
    page.goto(f"{base}/pools/{pool.pk}/judge/")  # the next item: the open new one, not the skipped one
    assert position(page) == third
    assert [(j.document_id, j.grade) for j in RelevanceJudgment.objects.filter(pool=pool)] == [
        (pool.items.get(position=graded).document_id, 1)
    ]
    page.goto(f"{base}/pools/{pool.pk}/")
    assert "1 / 3" in page.inner_text("#pool-raters")  # alice: one judged of the three she was given
    assert_clean(page, urls, "judging-skip")
