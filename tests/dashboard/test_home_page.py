"""The home page: each collection's most recent run labels (capped, with how many more); and a label's colour, the
same on every page and no two labels alike."""

from __future__ import annotations

import re

from django.urls import reverse

from evaluation.dashboard.golden_reads import HOME_LABELS
from evaluation.dashboard.label_colors import tenant_label_colors
from evaluation.models import EvaluationRun
from tests.dashboard.conftest import compare_url, make_runs


def home_labels(response) -> list[tuple[str, str]]:
    """(colour, label) of each row of the home page's latest runs, in page order."""
    return re.findall(
        r'<td class="label pin"><span class="swatch" style="background: (#[0-9A-Fa-f]{6})"></span><a href="[^"]+">([^<]+)</a>',
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


def swatches(response) -> dict[str, set[str]]:
    """Label (or Compare's series name) -> the colours of its swatches on the page."""
    found: dict[str, set[str]] = {}
    for color, label in re.findall(
        r'<span class="swatch(?: big)?" style="background: (#[0-9A-Fa-f]{6})"></span>\s*(?:<a href="[^"]+">)?([^<]+)<',
        response.content.decode(),
    ):
        found.setdefault(label.strip(), set()).add(color)
    return found


def test_a_label_has_one_colour_on_every_page_and_no_two_labels_share_one(alice, world, other_collection):
    """14 labels over two collections, more than the palette: Home, Runs, Trends, Compare, a run and its
    question, and every chart, give each label the same colour, and no page gives two labels one."""
    labels = [f"label {i}" for i in range(14)]
    make_runs(world.tenant, world.collection, 14, labels=labels, questions=2)
    # The other collection ran some of them, in another order, and one of its own.
    faq = make_runs(world.tenant, other_collection, 4, labels=["label 13", "faq only", "label 2", "label 7"])
    expected = tenant_label_colors(world.tenant)
    assert len(set(expected.values())) == len(expected) == 15
    runs = list(EvaluationRun.objects.filter(collections=world.collection).order_by("label"))
    pages = {
        "home": alice.get(reverse("home")),
        "runs": alice.get(reverse("dashboard:runs")),
        "trends": alice.get(reverse("dashboard:trends") + "?collection=handbook&metric=ndcg@10"),
        "trends faq": alice.get(reverse("dashboard:trends") + "?collection=faq&metric=ndcg@10"),
        "compare": alice.get(compare_url(*runs[:12])),
        "compare faq": alice.get(compare_url(*faq)),
        "run": alice.get(reverse("dashboard:run", args=[runs[3].pk])),
        "question": alice.get(reverse("dashboard:run-question", args=[runs[3].pk, 1])),
    }
    for name, page in pages.items():
        assert page.status_code == 200, name
        shown = swatches(page)
        assert shown, name
        assert {label: colors for label, colors in shown.items()} == {
            label: {expected[label]} for label in shown
        }, name  # the tenant's colour, one per label
        colors = [next(iter(c)) for c in shown.values()]
        assert len(set(colors)) == len(colors), name  # no two labels alike
    assert (
        len(swatches(pages["home"])) > HOME_LABELS
    )  # two cards: 8 labels of one, 4 of the other, some shared
    for name, context_key in (("compare", "series_rows"), ("compare faq", "series_rows")):
        rows = pages[name].context[context_key]
        assert {row.color for row in rows} == {expected[row.run.label] for row in rows}
    trends_chart = pages["trends"].context["chart"]
    for label in labels:  # each line drawn in its label's colour
        assert f'"line":{{"color":"{expected[label]}"}}' in trends_chart.replace(" ", "")


def test_home_with_few_labels_says_nothing_more(alice, batch):
    response = alice.get(reverse("home"))
    assert sorted(label for _, label in home_labels(response)) == ["fulltext", "hybrid", "vector"]
    assert "more configuration" not in response.content.decode()
