"""The demo (`manage.py load_demo`, which `scripts/run` calls): tenant demo/demo with the ClapNQ collection and
its golden set, real runs of both kinds to compare, a dashboard user and an API key kept in the data directory
so every start prints the same ones. Safe to run again: each part is made only when it is missing."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from evalsite.audit.services import actor_command
from evalsite.tenancy.models import ApiKey, Membership, hash_api_key
from evalsite.tenancy.roles import Role
from evalsite.tenancy.services import api_key_create, tenant_get_or_create
from evaluation.answers.configs import parse_answer_configs
from evaluation.answers.evaluate import evaluate_answers
from evaluation.configs import parse_configs
from evaluation.judgments.label_import import labels_import
from evaluation.judgments.labels import LabelRow, read_rows
from evaluation.models import EvaluationRun, HumanLabel, RunKind
from evaluation.request_fields import DEFAULT_KS
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset.beir_import import beir_import
from goldenset.models import Collection

DEMO_ANSWER_CONFIGS = [
    {"label": "answers fulltext", "search_type": "FullText", "groundedness": "Off"},
    {"label": "answers hybrid grounded", "search_type": "Hybrid", "fusion": "Rrf", "groundedness": "Medium"},
]
DEMO_CONFIGS = [
    {"label": "fulltext", "search_type": "FullText"},
    {"label": "fulltext okapi", "search_type": "FullText", "bm25_variant": "okapi"},
    {"label": "vector lsi", "search_type": "Vector"},
    {"label": "hybrid rrf", "search_type": "Hybrid", "fusion": "Rrf"},
    {"label": "hybrid weighted", "search_type": "Hybrid", "fusion": "Weighted"},
]
# Shown only with a model reranker (the minilm extra, an embeddings endpoint): the offline proximity reranker
# lowers the demo's nDCG@10 (benchmarks/vector_quality.py), so it is no configuration to show off.
DEMO_MODEL_RERANK = {"label": "hybrid rrf + rerank", "search_type": "Hybrid", "fusion": "Rrf", "rerank": True}


def demo_configs(rerankers: list[str]) -> list[dict]:
    """The demo's retrieval configurations: "hybrid rrf + rerank" only when a model reranker is installed."""
    has_model = any(name != "proximity" for name in rerankers)
    return [*DEMO_CONFIGS, DEMO_MODEL_RERANK] if has_model else list(DEMO_CONFIGS)


def demo_folder() -> Path:
    return Path(settings.BASE_DIR) / "demo" / "clapnq"


class _Steps:
    """The demo's steps as they run: "[2/4] Evaluating ... (done in 9 s)", so a first start is never silent."""

    TOTAL = 4

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say, self.number = say, 0

    @contextmanager
    def step(self, doing: str) -> Iterator[None]:
        self.number += 1
        self.say(f"[{self.number}/{self.TOTAL}] {doing} ...")
        started = time.monotonic()
        yield
        self.say(f"[{self.number}/{self.TOTAL}] done in {time.monotonic() - started:.0f} s.")

    def skip(self, what: str) -> None:
        self.number += 1
        self.say(f"[{self.number}/{self.TOTAL}] {what}: loaded already.")


def demo_load(*, say: Callable[[str], None]) -> tuple[str, str]:
    """Load what is missing of the demo, saying what it does, step by step; (dashboard password, API key)."""
    steps = _Steps(say)
    tenant = tenant_get_or_create(cluster_slug="demo", tenant_slug="demo")
    collection = _load_collection(tenant, steps)
    _load_runs(tenant, collection, steps)
    _load_labels(tenant, collection, steps)
    return _credentials(tenant)


def _load_collection(tenant, steps: _Steps) -> Collection:
    collection = Collection.objects.filter(tenant=tenant, slug="clapnq").first()
    if collection is not None and collection.golden_entries.exists():
        steps.skip("ClapNQ")
        return collection
    with steps.step("Loading ClapNQ: 597 Wikipedia passages and 600 questions, and indexing them"):
        result = beir_import(
            folder=demo_folder(),
            tenant=tenant,
            collection_id="clapnq",
            actor="command:load_demo",
            name="ClapNQ",
        )
        steps.say(
            f"Loaded ClapNQ: {result['documents']} documents, {result['entries_created']} golden entries."
        )
    return Collection.objects.get(tenant=tenant, slug="clapnq")


def _load_runs(tenant, collection: Collection, steps: _Steps) -> None:
    """Real runs of the demo collection, so the dashboard has configurations to compare from the start; and
    offline answer runs (extractive answers, heuristic judge) of the 600 questions, 300 unanswerable."""
    if EvaluationRun.objects.filter(tenant=tenant, kind=RunKind.RETRIEVAL).exists():
        steps.skip("The search runs")
    else:
        rerankers = available_rerankers()
        configs = parse_configs(demo_configs(rerankers), rerankers)
        with steps.step(f"Evaluating {len(configs)} search configurations on the golden set"):
            _, runs = evaluate_retrieval(
                tenant=tenant,
                collections=[collection],
                ks=list(DEFAULT_KS),
                configs=configs,
                actor=actor_command("load_demo"),
            )
            steps.say(
                "Evaluated the demo golden set: "
                + ", ".join(f"{r.label} nDCG@10 {r.metrics['ndcg@10']:.3f}" for r in runs)
            )
    if EvaluationRun.objects.filter(tenant=tenant, kind=RunKind.ANSWERS).exists():
        steps.skip("The answer runs")
        return
    with steps.step(
        f"Answering and judging the 600 questions offline, {len(DEMO_ANSWER_CONFIGS)} configurations"
    ):
        _, runs = evaluate_answers(
            tenant=tenant,
            collections=[collection],
            configs=parse_answer_configs(DEMO_ANSWER_CONFIGS, available_rerankers()),
            offline=True,
            actor=actor_command("load_demo"),
        )
        steps.say(
            "Evaluated the demo answers offline: "
            + ", ".join(
                f"{r.label} score {r.metrics.get('score', 0):.1f}, refusal recall "
                f"{r.metrics.get('refusal_recall', 0):.2f}, false refusals {r.metrics.get('false_refusal_rate', 0):.2f}"
                for r in runs
            )
        )


def _load_labels(tenant, collection: Collection, steps: _Steps) -> None:
    if HumanLabel.objects.filter(collection=collection).exists():
        steps.skip("The Calibration tab")
        return
    keys = set(collection.golden_entries.values_list("key", flat=True))
    # Only the questions this demo has (a benchmark loads a few of them); none: nothing to calibrate.
    rows = [row for row in demo_labels() if row.question_id in keys]
    with steps.step("Loading the human labels of the Calibration tab"):
        if rows:
            result = labels_import(
                tenant=tenant, collection=collection, rows=rows, actor=actor_command("load_demo")
            )
            steps.say(f"Loaded {result['labels']} human statement labels (the Calibration tab).")


def _credentials(tenant) -> tuple[str, str]:
    """The dashboard user's password and the API key, made once and kept in the data directory."""
    password = _secret_file("demo_password", lambda: secrets.token_urlsafe(12))
    with transaction.atomic():
        user, created = get_user_model().objects.get_or_create(
            username="demo", defaults={"is_staff": True, "is_superuser": True}
        )
        if created or not user.check_password(password):
            user.set_password(password)
            user.save()
        Membership.objects.get_or_create(user=user, tenant=tenant, defaults={"role": Role.ADMIN.value})
    key_path = Path(settings.DATA_DIR) / "demo_api_key"
    secret = key_path.read_text().strip() if key_path.exists() else ""
    if not secret or not ApiKey.objects.filter(key_hash=hash_api_key(secret), revoked_at=None).exists():
        # The demo's key is its user's, an admin's: a newcomer tries every call of the docs with it.
        _, secret = api_key_create(
            tenant=tenant, role=Role.ADMIN, name="demo", user=user, actor=actor_command("load_demo")
        )
        key_path.write_text(secret)
        key_path.chmod(0o600)
    return password, secret


def demo_labels() -> list[LabelRow]:
    """The held-out half of the statements labelled for the offline judge (benchmarks/data, its README says how
    they were made): faithfulness statement labels of ClapNQ questions, each with its passages. Only the test
    half, the one the judge was not tuned on (the split of benchmarks/judge_agreement.py), so the demo's
    calibration figures are the honest ones."""
    path = Path(settings.BASE_DIR) / "benchmarks" / "data" / "judge_statements.jsonl"
    records = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        row = json.loads(line)
        if hashlib.sha256(f"judge-split:{row['question_id']}".encode()).hexdigest()[0] >= "8":
            records.append((f"line {number}", {**row, "metric": "faithfulness"}))
    return read_rows(records)


def _secret_file(name: str, make: Callable[[], str]) -> str:
    path = Path(settings.DATA_DIR) / name
    if not path.exists():
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()
