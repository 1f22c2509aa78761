"""The dashboard's test world: the shared `world` plus dashboard users, a golden set and runs."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import timedelta
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.configs import parse_configs
from evaluation.models import EvaluationRun, QuestionResult
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset import services
from goldenset.models import Collection, GoldenEntry
from goldenset.services import EntryInput
from tests.conftest import add_documents
from tests.dashboard.answer_runs_support import AnswerBatch, make_answer_batch
from tests.support import add_entries, member_of


@pytest.fixture(autouse=True)
def _status_line_cached_for_the_test(monkeypatch):
    """The footer's status line (evalsite.health) is cached for seconds per process; here for the whole test,
    so the query-count tests count the page's own queries once the first page filled it."""
    from evalsite import health

    monkeypatch.setattr(health, "STATUS_TTL", 3600.0)
    monkeypatch.setattr(health, "_cache", {})


@pytest.fixture
def member(world):
    """alice: a member of the world's tenant (acme/search) only."""
    user = member_of(world.tenant, "alice", password="secret-alice")
    return user


@pytest.fixture
def outsider(world):
    """rob: a member of the rival tenant only."""
    user = member_of(world.other_tenant, "rob", password="secret-rob")
    return user


@pytest.fixture
def alice(member) -> Client:
    client = Client()
    client.force_login(member)
    return client


@pytest.fixture
def golden(world) -> list[GoldenEntry]:
    return add_entries(
        world.collection,
        EntryInput(
            question="How long is the refund window?",
            expected_document_ids=["refunds"],
            key="q-refund",
            tags=["policy", "money"],
            reference_answer="30 days.",
        ),
        EntryInput(
            question="When does express shipping arrive?",
            expected_document_ids=["shipping"],
            key="q-ship",
            tags=["shipping"],
        ),
        EntryInput(
            question="What does the warranty cover?",
            expected_document_ids=["warranty", "refunds"],
            grades={"warranty": 2},
            tags=["policy"],
        ),
    )


CONFIGS = [
    {"label": "fulltext", "search_type": "FullText"},
    {"label": "vector", "search_type": "Vector"},
    {"label": "hybrid", "search_type": "Hybrid", "fusion": "Rrf"},
]


@dataclass
class Batch:
    batch_id: uuid.UUID
    runs: list[EvaluationRun]


@pytest.fixture
def batch(world, golden) -> Batch:
    """A real evaluation of the world's golden set: three configurations, one batch."""
    batch_id, runs = evaluate_retrieval(
        tenant=world.tenant,
        collections=[world.collection],
        ks=[1, 3],
        configs=parse_configs(CONFIGS, available_rerankers()),
    )
    return Batch(batch_id, runs)


@pytest.fixture
def other_collection(world) -> Collection:
    """A second collection of the same tenant, with a golden entry."""
    collection = services.collection_create(tenant=world.tenant, slug="faq", name="FAQ", actor="test")
    add_documents(collection, {"hours": "The shop opens at nine and closes at six."})
    add_entries(collection, EntryInput(question="When does the shop open?", expected_document_ids=["hours"]))
    return collection


def make_runs(
    tenant,
    collection: Collection,
    count: int,
    *,
    labels=("fulltext", "vector", "hybrid"),
    questions: int = 0,
    start=None,
    step=timedelta(hours=1),
) -> list[EvaluationRun]:
    """Many stored runs at once (bulk_create), `questions` results each, the newest `start` (now)."""
    start = start or timezone.now()
    runs = [
        EvaluationRun(
            tenant=tenant,
            collection_ids=[collection.slug],
            batch_id=uuid.uuid4(),
            label=labels[i % len(labels)],
            config={"search_type": "FullText"},
            ks=[1, 10],
            metrics={
                "recall@1": 0.3,
                "recall@10": 0.6 + (i % 7) / 100,
                "ndcg@1": 0.3,
                "ndcg@10": 0.5,
                "mrr": 0.4,
            },
            question_count=questions,
        )
        for i in range(count)
    ]
    EvaluationRun.objects.bulk_create(runs)
    # created_at is auto_now_add: spread the runs over time afterwards.
    for i, run in enumerate(runs):
        run.created_at = start - step * i
    EvaluationRun.objects.bulk_update(runs, ["created_at"])
    EvaluationRun.collections.through.objects.bulk_create(
        [
            EvaluationRun.collections.through(evaluationrun_id=run.pk, collection_id=collection.pk)
            for run in runs
        ]
    )
    if questions:
        entry_ids = [uuid.uuid4() for _ in range(questions)]
        QuestionResult.objects.bulk_create(
            [
                QuestionResult(
                    run=run,
                    position=q,
                    entry_id=entry_ids[q],
                    entry_key=f"q{q}",
                    collection_id=collection.slug,
                    question=f"question {q}?",
                    expected={f"doc{q}": 1},
                    **QuestionResult.ranked_fields([(f"doc{q}", 2.0), (f"doc{q + 1}", 1.0)]),
                    first_relevant_rank=1 if (q + r) % 3 else None,
                    missing_document_ids=[] if (q + r) % 3 else [f"doc{q}"],
                    metrics={
                        "recall@1": float((q + r) % 3 != 0),
                        "recall@10": float((q + r) % 3 != 0),
                        "ndcg@1": float((q + r) % 3 != 0),
                        "ndcg@10": float((q + r) % 3 != 0),
                        "mrr": float((q + r) % 3 != 0),
                    },
                )
                for r, run in enumerate(runs)
                for q in range(questions)
            ],
            batch_size=1000,
        )
    return runs


@pytest.fixture(autouse=True)
def _fresh_indexes(fresh_indexes):
    """Every test here gets search indexes of its own (tests/conftest.py)."""


@pytest.fixture
def answer_batch(world) -> AnswerBatch:
    """The two answer runs of make_answer_batch in the world's collection."""
    return make_answer_batch(world.tenant, world.collection)


def run_url(run: EvaluationRun, query: str = "") -> str:
    return reverse("dashboard:run", args=[run.pk]) + query


def text_of(response) -> str:
    """The page's text with tags removed and whitespace collapsed, to assert on what a reader sees."""
    html = response.content.decode()
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()


def compare_url(*runs) -> str:
    return reverse("dashboard:compare") + "?" + "&".join(f"run={r.pk}" for r in runs)


def question_url(run: EvaluationRun, position: int) -> str:
    return reverse("dashboard:run-question", args=[run.pk, position + 1])  # URLs count from 1


SEARCH_CONFIG = {
    "search_type": "FullText",
    "fusion": "Rrf",
    "bm25_variant": "lucene",
    "rerank": "",
    "label": "",
}


def launch_data(configs: list[dict], collections=("handbook",), *, defaults=SEARCH_CONFIG, **fields) -> dict:
    """A launcher's POST: the form's fields and one "configs" formset row per configuration, over `defaults`
    ("enabled" is a checkbox: sent only when true)."""
    data: dict = {
        "collections": list(collections),
        "configs-TOTAL_FORMS": str(len(configs)),
        "configs-INITIAL_FORMS": str(len(configs)),
        "configs-MIN_NUM_FORMS": "0",
        "configs-MAX_NUM_FORMS": "20",
        **fields,
    }
    for i, config in enumerate(configs):
        for name, value in {**defaults, **config}.items():
            if name != "enabled":
                data[f"configs-{i}-{name}"] = value
            elif value:
                data[f"configs-{i}-enabled"] = "on"
    return data


def answer_launch_data(configs: list[dict], collections=("handbook",), **fields) -> dict:
    fields = {"judge_model": "", "max_questions": "", "unanswerable_questions": "", **fields}
    defaults = {**SEARCH_CONFIG, "top_k": "3", "model": "", "groundedness": "Off"}
    return launch_data(configs, collections, defaults=defaults, **fields)


ACTOR = "user:alice"


def collection_url(world, query: str = "") -> str:
    return reverse("dashboard:collection", args=[world.collection.slug]) + query


def edit_data(entry: GoldenEntry, **overrides) -> dict:
    """What the inline form posts for an entry as stored, with overrides (answerable / reviewed: booleans)."""
    flags = {"answerable": entry.answerable, "reviewed": entry.reviewed}
    for name in flags:
        if name in overrides:
            flags[name] = overrides.pop(name)
    data = {
        "question": entry.question,
        "key": entry.key,
        "expected_document_ids": "\n".join(entry.expected_document_ids),
        "reference_answer": entry.reference_answer,
        "tags": ", ".join(entry.tags),
        **overrides,
    }
    return data | {name: "on" for name, on in flags.items() if on}
