"""Builders and checks shared by test files of several folders (the shared world itself is in tests/conftest.py).

`db_state()` snapshots every row, for the "a refused request changes nothing" checks; `uploaded()` is a file as a
browser sends it; `member_of()` makes a user of a tenant; `add_entries()`, `handbook_entries()` and `answer_entries()` build golden entries on the world's
collections.
"""

from __future__ import annotations

import io
from dataclasses import replace

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from evalsite.tenancy.models import Membership
from evaluation.configs import parse_configs
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset.models import Collection, GoldenEntry
from goldenset.services import EntryInput, golden_entries_add

# One question per handbook document (tests/conftest.py), each finding its document as the top FullText hit.
HANDBOOK_QUESTIONS = {
    "q1": ("How long is the refund window?", "refunds"),
    "q2": ("When does express shipping arrive?", "shipping"),
    "q3": ("What does the warranty cover?", "warranty"),
}


def db_state() -> dict[str, list]:
    """Every row of the project's tables and the task queue (an API key's last-use stamp aside)."""
    state = {}
    for label in ("goldenset", "evaluation", "django_q"):
        for model in apps.get_app_config(label).get_models():
            fields = [f.attname for f in model._meta.concrete_fields if f.attname != "last_used_at"]
            state[model._meta.label] = sorted(model.objects.values_list(*fields), key=repr)
    return state


def uploaded(name: str, content: str | bytes) -> SimpleUploadedFile:
    """A file for a multipart upload (text is sent as UTF-8)."""
    return SimpleUploadedFile(name, content.encode() if isinstance(content, str) else content)


def iso(moment) -> str | None:
    """A datetime as the API writes it (UTC with a Z), None as None."""
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def member_of(tenant, username: str, password: str = "x", role: str = "admin", **fields):
    """A new user (a dashboard login) who is a member of `tenant`, an admin unless `role` says otherwise."""
    user = get_user_model().objects.create_user(username, password=password, **fields)
    Membership.objects.create(user=user, tenant=tenant, role=role)
    return user


def add_entries(collection: Collection, *entries: EntryInput | str, **fields) -> list[GoldenEntry]:
    """Golden entries added to the collection as the service adds them; a bare question gets `fields`."""
    created, _ = golden_entries_add(
        collection=collection,
        entries=[e if isinstance(e, EntryInput) else EntryInput(question=e, **fields) for e in entries],
        actor="test",
    )
    return created


def handbook_entries(
    collection: Collection, count: int = 3, *, unanswerable: bool = False
) -> list[GoldenEntry]:
    """q1..q<count> of HANDBOOK_QUESTIONS; with `unanswerable`, also q4, which expects no document (so is not
    evaluated)."""
    entries = [
        EntryInput(question=question, expected_document_ids=[document], key=key)
        for key, (question, document) in list(HANDBOOK_QUESTIONS.items())[:count]
    ]
    if unanswerable:
        entries.append(EntryInput(question="Who is the chief executive?", key="q4"))
    return add_entries(collection, *entries)


# Questions with reference answers over the handbook's documents (answer evaluation), and one it cannot answer.
HANDBOOK_ANSWERS = {
    "refund": EntryInput(
        question="How many days do customers have to get a full refund?",
        expected_document_ids=["refunds"],
        reference_answer="Customers get a full refund within 30 days of purchase.",
    ),
    "shipping": EntryInput(
        question="How quickly do orders ship?",
        expected_document_ids=["shipping"],
        reference_answer="Orders ship within two business days.",
    ),
    "warranty": EntryInput(
        question="What does the device warranty cover?",
        expected_document_ids=["warranty"],
        reference_answer="Manufacturing defects, for two years.",
    ),
    "gift-wrapping": EntryInput(
        question="Do you offer gift wrapping for birthday presents?",
        expected_document_ids=[],
        answerable=False,
    ),
}


def answer_entries(
    collection: Collection, *names: str, keys: dict[str, str] | None = None
) -> list[GoldenEntry]:
    """The HANDBOOK_ANSWERS named (every one when none is), in that order; `keys` gives some of them a key."""
    keys = keys or {}
    chosen = names or tuple(HANDBOOK_ANSWERS)
    entries = []
    for name in chosen:  # copies: the lists of HANDBOOK_ANSWERS are never handed to the service
        entry = HANDBOOK_ANSWERS[name]
        entries.append(
            replace(entry, key=keys.get(name, ""), expected_document_ids=list(entry.expected_document_ids))
        )
    return add_entries(collection, *entries)


# POST /search/evaluate as the seed sends it (string ks, one configuration with rerank), over the world's collection.
def answers_gate(*args: str) -> tuple[int, str]:
    """`manage.py evaluate --answers` on the world's handbook collection, as the CI gate runs it: its exit code
    and what it printed."""
    code, out, _ = answers_gate_verdict(*args)
    return code, out


def answers_gate_verdict(*args: str) -> tuple[int, str, str]:
    """answers_gate with what it wrote to stderr (the verdict's line) too."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("evaluate", "--answers", "--cluster", "acme", "--tenant", "search", "--collection",
                     "handbook", *args, stdout=out, stderr=err)  # fmt: skip
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


SEED_EVALUATE_BODY = {
    "cluster_id": "acme",
    "tenant_id": "search",
    "collection_id": "handbook",
    "ks": ["1", "3"],
    "configs": [
        {"label": "fulltext baseline", "search_type": "FullText", "fusion": "Rrf", "rerank": False},
        {"label": "hybrid + rerank", "search_type": "Hybrid", "fusion": "Rrf", "rerank": True},
    ],
}


def imported(*, records: int, created: int = 0, updated: int = 0, unchanged: int = 0) -> dict:
    """The body of an okfsmith golden-file import that created no document and warned of nothing."""
    return {"records": records, "created": created, "updated": updated, "unchanged": unchanged,
            "format": "okfsmith", "documents_created": 0, "warnings": []}  # fmt: skip


def refused(response, status: int, code: str) -> dict:
    """The envelope of a refused request: its status, its code; returns message and details."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json", response.content[:300]
    body = response.json()
    assert body.keys() == {"error"} and body["error"].keys() == {"code", "message", "details"}
    assert body["error"]["code"] == code, body
    return body["error"]


def migrate(targets):
    """Migrate the test database to `targets` ([(app, migration)]) and return the historical apps there (a
    migration test migrates back to `migration_leaves()` when done)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


def migration_leaves():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    return MigrationExecutor(connection).loader.graph.leaf_nodes()


LUCENE_AND_OKAPI = [{"label": "lucene"}, {"label": "okapi", "bm25_variant": "okapi"}]


def lucene_and_okapi_runs(world, ks=(1, 3)) -> list:
    """Two FullText runs (lucene, okapi) of the world's golden set, evaluated now: the runs pools are made from."""
    _, made = evaluate_retrieval(
        tenant=world.tenant, collections=[world.collection], ks=list(ks),
        configs=parse_configs(LUCENE_AND_OKAPI, available_rerankers()),
    )  # fmt: skip
    return made


# A golden CSV for the handbook with a problem of every kind a collection finds (tests of the import's preview).
EVERY_KIND_OF_PROBLEM = (
    "key,question,expected_document_ids,tags\n"
    "a,Refund window?,refunds,\n"
    "b,refund window?,,\n"  # the question of line 2 again
    "c,Ghost?,ghost-doc,\n"  # a document the collection lacks
    "a,Another?,,\n"  # line 2's key again
    "d,Fine?,ghost-2,\n"  # another unknown document
)
