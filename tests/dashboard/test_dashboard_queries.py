"""Pages cost a fixed number of queries however many runs, questions or entries there are (no N+1)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldenset import services
from goldenset.services import EntryInput
from tests.dashboard.conftest import make_runs


def count_queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(queries)


@pytest.fixture
def many_runs(world, alice):
    """60 runs of one collection; the 5 newest with 200 question results each. alice has been to the site
    once, so her session already holds the tenant (its first visit also writes the session)."""
    runs = make_runs(world.tenant, world.collection, 60)
    scored = make_runs(world.tenant, world.collection, 5, questions=200)
    alice.get(reverse("home"))
    return runs, scored


def test_the_runs_page_is_bounded(alice, world, many_runs, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):  # +1: the tenant's label colours (label_colors)
        response = alice.get(reverse("dashboard:runs"))
    assert len(response.context["rows"]) == 50
    with django_assert_max_num_queries(9):
        alice.get(
            reverse("dashboard:runs") + "?collection=handbook&label=fulltext&page=2&date_from=2000-01-01"
        )


def test_compare_of_five_runs_is_bounded(alice, world, many_runs, django_assert_max_num_queries):
    _, scored = many_runs
    url = reverse("dashboard:compare") + "?" + "&".join(f"run={r.pk}" for r in scored)
    with django_assert_max_num_queries(6):  # +1: the tenant's label colours (label_colors)
        response = alice.get(url)
    assert response.context["questions"] == 200 and len(response.context["series_rows"]) == 5


def test_trends_are_bounded(alice, world, many_runs, django_assert_max_num_queries):
    # +1: the tenant's label colours (label_colors); +2: the points' question counts and what changed between them
    # (read in chunks of goldenset.vocabulary.chunks.CHUNK ids), and the collection's alerts
    with django_assert_max_num_queries(11):
        response = alice.get(reverse("dashboard:trends") + "?metric=ndcg@10")
    assert response.context["points"] == 65


def test_home_costs_the_same_with_more_runs_and_collections(alice, world, django_assert_max_num_queries):
    make_runs(world.tenant, world.collection, 3)
    alice.get(reverse("home"))
    few = count_queries(alice, reverse("home"))
    other = services.collection_create(tenant=world.tenant, slug="faq", actor="test")
    make_runs(world.tenant, world.collection, 30, labels=("a", "b", "c", "d"))
    make_runs(world.tenant, other, 30, labels=("x", "y"))
    assert count_queries(alice, reverse("home")) == few
    with django_assert_max_num_queries(7):  # +1: the tenant's label colours (label_colors)
        alice.get(reverse("home"))


def test_a_run_with_200_questions_is_bounded(alice, world, many_runs, django_assert_max_num_queries):
    _, scored = many_runs
    with django_assert_max_num_queries(7):  # +1: the tenant's label colours (label_colors)
        response = alice.get(reverse("dashboard:run", args=[scored[0].pk]))
    assert response.context["question_total"] == 200
    assert response.content.decode().count('<td class="diag">') == 100  # a page of them
    with django_assert_max_num_queries(10):
        alice.get(reverse("dashboard:run-question", args=[scored[0].pk, 101]))


def test_the_golden_set_page_is_bounded(alice, world, django_assert_max_num_queries):
    services.golden_entries_add(
        collection=world.collection,
        entries=[
            EntryInput(question=f"Question {i}?", expected_document_ids=["refunds"], tags=[f"t{i % 4}"])
            for i in range(80)
        ],
        actor="test",
    )
    alice.get(reverse("home"))
    with django_assert_max_num_queries(10):
        response = alice.get(reverse("dashboard:collection", args=["handbook"]) + "?tag=t1")
    assert len(response.context["rows"]) == 20
    first = count_queries(alice, reverse("dashboard:collection", args=["handbook"]))
    assert count_queries(alice, reverse("dashboard:collection", args=["handbook"]) + "?page=2") == first
