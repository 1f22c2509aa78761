"""The home page: each collection's most recent run labels (capped, with how many more), each label in a colour
of its own within the collection."""

from __future__ import annotations

import re

from django.urls import reverse

from evaluation.dashboard import charts
from evaluation.dashboard.golden_reads import HOME_LABELS
from tests.dashboard.conftest import make_runs


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
