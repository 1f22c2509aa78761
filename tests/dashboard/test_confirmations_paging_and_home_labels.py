"""What a new user meets first on the dashboard: the review queue's reject asks first, a
retrieval run's questions are paged and numbered from 1 in their URLs, the home page caps its labels and gives
them distinct colours."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evalsite.audit.models import AuditEvent
from evaluation.dashboard import charts
from evaluation.dashboard.golden_reads import HOME_LABELS
from evaluation.dashboard.runs_reads import RUN_QUESTIONS_PER_PAGE
from goldenset import services
from goldenset.models import GoldenEntry, Origin
from goldenset.services import EntryInput
from tests.dashboard.conftest import make_runs

# --- the review queue's reject asks for a confirmation -----------------------------------------------------


@pytest.fixture
def drafted(world) -> GoldenEntry:
    """A generated, unreviewed entry waiting in handbook's review queue."""
    (entry,), _ = services.golden_entries_add(
        collection=world.collection,
        entries=[EntryInput(question="What does the warranty cover?", expected_document_ids=["warranty"])],
        actor="job",
        origin=Origin.GENERATED,
    )
    return entry


def test_reject_asks_for_confirmation_before_deleting(alice, drafted):
    review = reverse("dashboard:golden-review", args=["handbook"])
    action = reverse("dashboard:golden-review-action", args=["handbook"])
    response = alice.post(action, {"entry": str(drafted.pk), "action": "reject", "next": review + "?page=1"})
    assert response.status_code == 200
    assert GoldenEntry.objects.filter(pk=drafted.pk).exists()
    assert not AuditEvent.objects.filter(object_id=str(drafted.pk), action="delete").exists()
    html = response.content.decode()
    assert "Reject 1 golden entry?" in html and drafted.question in html
    assert "› <span>reject</span></nav>" in html
    # The confirmation posts the same entry back as reject-confirmed, and Cancel returns to the queue.
    assert f'<form method="post" action="{action}" class="buttons">' in html
    assert f'<input type="hidden" name="entry" value="{drafted.pk}">' in html
    assert 'value="reject-confirmed" class="danger">Yes, reject</button>' in html
    assert f'<a href="{review}?page=1">Cancel</a>' in html

    confirmed = alice.post(
        action, {"entry": str(drafted.pk), "action": "reject-confirmed", "next": review + "?page=1"}
    )
    assert confirmed.status_code == 302 and confirmed["Location"] == review + "?page=1"
    assert not GoldenEntry.objects.filter(pk=drafted.pk).exists()
    assert AuditEvent.objects.filter(object_id=str(drafted.pk), action="delete").exists()


def test_the_golden_set_delete_confirmation_is_unchanged(alice, drafted):
    response = alice.post(
        reverse("dashboard:golden-action", args=["handbook"]), {"entry": str(drafted.pk), "action": "delete"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and "Delete 1 golden entry?" in html
    assert f'action="{reverse("dashboard:golden-action", args=["handbook"])}"' in html
    assert 'value="delete-confirmed" class="danger">Yes, delete</button>' in html


# --- question URLs count from 1, as the pages do -----------------------------------------------------------


def test_question_urls_count_from_one_like_the_page(alice, batch):
    """Question 1 of the table is /questions/1/, its page says "question 1", and its neighbours link 1-based."""
    run = batch.runs[0]
    table = alice.get(reverse("dashboard:run", args=[run.pk])).content.decode()
    first = reverse("dashboard:run-question", args=[run.pk, 1])
    assert first.endswith("/questions/1/")
    assert '<td class="num" data-value="0">1</td>' in table
    assert f'<a href="{first}">' in table
    page = alice.get(first)
    assert page.status_code == 200
    assert page.context["result"].position == 0
    html = page.content.decode()
    assert "<span>question 1</span>" in html
    assert page.context["previous"] is None and page.context["following"] == 2
    assert f'href="{reverse("dashboard:run-question", args=[run.pk, 2])}" rel="next"' in html
    second = alice.get(reverse("dashboard:run-question", args=[run.pk, 2]))
    assert second.context["result"].position == 1 and "<span>question 2</span>" in second.content.decode()
    assert second.context["previous"] == 1


def test_question_zero_and_past_the_last_are_404(alice, batch):
    run = batch.runs[0]
    count = run.results.count()
    assert alice.get(reverse("dashboard:run-question", args=[run.pk, 0])).status_code == 404
    assert alice.get(reverse("dashboard:run-question", args=[run.pk, count])).status_code == 200
    assert alice.get(reverse("dashboard:run-question", args=[run.pk, count + 1])).status_code == 404


# --- a retrieval run's questions come a page at a time -----------------------------------------------------


def numbers_shown(response) -> list[int]:
    """The question numbers (as shown, from 1) of the page's question rows."""
    return [
        int(n)
        for n in re.findall(r'<tr>\s*<td class="num" data-value="\d+">(\d+)</td>', response.content.decode())
    ]


def test_a_retrieval_runs_questions_are_paged_like_an_answer_runs(alice, world):
    (run,) = make_runs(world.tenant, world.collection, 1, questions=250)
    url = reverse("dashboard:run", args=[run.pk])
    first = alice.get(url)
    assert first.context["question_total"] == 250
    assert numbers_shown(first) == list(range(1, RUN_QUESTIONS_PER_PAGE + 1))
    html = first.content.decode()
    assert "page 1 of 3" in html and '<a href="?page=2" rel="next">' in html
    last = alice.get(url + "?page=3")
    assert numbers_shown(last) == list(range(2 * RUN_QUESTIONS_PER_PAGE + 1, 251))
    # Each number links its own question; past the last page is the last page, as everywhere.
    assert f'href="{reverse("dashboard:run-question", args=[run.pk, 250])}"' in last.content.decode()
    assert numbers_shown(alice.get(url + "?page=9")) == numbers_shown(last)
    assert numbers_shown(alice.get(url + "?page=x")) == numbers_shown(first)


def test_the_failures_filter_pages_and_keeps_its_filter(alice, world):
    (run,) = make_runs(world.tenant, world.collection, 1, questions=450)
    response = alice.get(reverse("dashboard:run", args=[run.pk]) + "?failures=1")
    failures = response.context["failures"]
    assert failures > RUN_QUESTIONS_PER_PAGE  # enough failures for more than one page
    assert len(numbers_shown(response)) == RUN_QUESTIONS_PER_PAGE
    assert '<a href="?failures=1&amp;page=2" rel="next">' in response.content.decode()
    pages = -(-failures // RUN_QUESTIONS_PER_PAGE)
    tail = alice.get(reverse("dashboard:run", args=[run.pk]) + f"?failures=1&page={pages}")
    assert len(numbers_shown(tail)) == failures - (pages - 1) * RUN_QUESTIONS_PER_PAGE


def test_a_short_run_has_no_page_links(alice, batch):
    response = alice.get(reverse("dashboard:run", args=[batch.runs[0].pk]))
    assert numbers_shown(response) == list(range(1, batch.runs[0].question_count + 1))
    assert 'class="pagination"' not in response.content.decode()


# --- the home page: the most recent labels, in distinct colours --------------------------------------------


def home_labels(response) -> list[tuple[str, str]]:
    """(colour, label) of each row of the home page's latest runs, in page order."""
    return re.findall(
        r'<td class="label"><span class="swatch" style="background: (#[0-9A-Fa-f]{6})"></span><a href="[^"]+">([^<]+)</a>',
        response.content.decode(),
    )


def test_home_shows_the_most_recent_labels_and_how_many_more(alice, world):
    labels = [f"config {i:02d}" for i in range(12)]
    # One run per label, "config 00" the newest.
    make_runs(world.tenant, world.collection, 12, labels=labels)
    response = alice.get(reverse("home"))
    shown = [label for _, label in home_labels(response)]
    assert shown == labels[:HOME_LABELS]
    html = response.content.decode()
    assert "and 4 more configurations" in html
    assert f'<a href="{reverse("dashboard:runs")}?collection=handbook">see all runs</a>' in html


def test_home_colours_differ_within_a_collection(alice, world):
    """Labels whose own colours clash (sha256 into 10 colours) get distinct ones on the home page."""
    labels = [f"label {i}" for i in range(HOME_LABELS)]
    assert len({charts.label_color(label) for label in labels}) < len(labels)  # some clash by hash
    make_runs(world.tenant, world.collection, len(labels), labels=labels)
    colors = [color for color, _ in home_labels(alice.get(reverse("home")))]
    assert len(colors) == len(labels) and len(set(colors)) == len(colors)


def test_home_with_few_labels_says_nothing_more(alice, batch):
    response = alice.get(reverse("home"))
    assert sorted(label for _, label in home_labels(response)) == ["fulltext", "hybrid", "vector"]
    assert "more configuration" not in response.content.decode()


def test_distinct_colors_keep_a_labels_own_colour_when_free():
    colors = charts.distinct_colors(["b", "a", "b"])
    assert set(colors) == {"a", "b"} and colors["a"] == charts.label_color("a")  # "a" comes first: its own
    assert len(set(colors.values())) == 2
    many = charts.distinct_colors([f"label {i}" for i in range(len(charts.PALETTE))])
    assert sorted(many.values()) == sorted(charts.PALETTE)
    # The order the labels come in changes nothing.
    assert charts.distinct_colors([f"label {i}" for i in reversed(range(10))]) == many
