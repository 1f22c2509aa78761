"""Trends as a watch over time: runs over another question set drawn apart, each point with its question count,
a marker where the configuration or the collection's content changed, and the collection's alerts on the chart."""

from __future__ import annotations

import json

from django.urls import reverse
from django.utils import timezone

from evaluation.configs import parse_configs
from evaluation.models import Alert, Schedule, ScheduleRun
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset.services import EntryInput
from tests.conftest import add_documents
from tests.support import add_entries


def _run(world, *configs: dict) -> None:
    evaluate_retrieval(tenant=world.tenant, collections=[world.collection], ks=[1, 3],
                       configs=parse_configs(list(configs), available_rerankers()))  # fmt: skip


def _chart(alice) -> tuple[dict, list[dict]]:
    page = alice.get(reverse("dashboard:trends") + "?collection=handbook&metric=mrr")
    assert page.status_code == 200
    html = page.context["chart"]
    figure = json.loads(html[html.index("{", html.index("application/json")) : html.rindex("}") + 1])
    return page.context, figure["data"]


def test_a_label_over_two_question_sets_draws_two_lines_and_changes_are_marked(alice, world, golden):
    _run(world, {"label": "bm25"}, {"label": "tuned", "bm25_k1": 0.5})
    _run(world, {"label": "tuned", "bm25_k1": 0.9})  # the configuration under the label changed
    add_documents(world.collection, {"returns": "Returns are accepted within 60 days."})
    _run(world, {"label": "tuned", "bm25_k1": 0.9})  # the collection's content changed
    add_entries(world.collection, EntryInput(question="How long do I have to return?",
                                             expected_document_ids=["returns"]))  # fmt: skip
    _run(world, {"label": "bm25"})  # a fourth question: another question set
    context, traces = _chart(alice)
    names = [t["name"] for t in traces]
    bm25 = [n for n in names if n.startswith("bm25")]
    assert len(bm25) == 2 and any("3 questions" in n for n in bm25) and any("4 questions" in n for n in bm25)
    tuned = next(t for t in traces if t["name"] == "tuned")
    changes = [text for text in tuned["hovertext"] if "changed" in text]
    assert len(changes) == 2
    assert "configuration changed" in changes[0] and "collection content changed" in changes[1]
    assert tuned["marker"]["symbol"] == ["circle", "diamond", "diamond"]
    assert all("3 questions" in text for text in tuned["hovertext"])
    assert {label.label for label in context["labels"]} == set(names)


def test_the_collection_s_alerts_are_on_the_chart(alice, world, golden):
    _run(world, {"label": "bm25"})
    schedule = Schedule.objects.create(
        tenant=world.tenant, collection=world.collection, name="nightly", configs=[{"label": "bm25"}], ks=[3],
        every_minutes=60, gate={"metric": "mrr", "min": 0.99},
    )  # fmt: skip
    tick = ScheduleRun.objects.create(schedule=schedule, tick_at=timezone.now(), passed=False)
    Alert.objects.create(tenant=world.tenant, collection=world.collection, schedule=schedule, fired_by=tick,
                         reasons=[{"reason": "below-min", "message": "mrr 0.5 is below the minimum 0.99"}])  # fmt: skip
    _, traces = _chart(alice)
    (alerts,) = [t for t in traces if t["name"] == "alerts"]
    assert len(alerts["x"]) == 1 and "nightly: mrr 0.5 is below the minimum 0.99" in alerts["hovertext"][0]
