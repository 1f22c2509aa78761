"""The shared test world: two tenants with keys, a collection with documents, API clients for each."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from evalsite.tenancy.models import Tenant
from evalsite.tenancy.services import api_key_create, tenant_get_or_create
from goldenset import services
from goldenset.models import Collection


@dataclass
class World:
    tenant: Tenant
    key: str
    client: APIClient
    other_tenant: Tenant
    other_key: str
    other_client: APIClient
    collection: Collection


def api_client(secret: str | None) -> APIClient:
    client = APIClient()
    if secret:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def person_client(world: World, name: str, role: str = "rater", tenant: Tenant | None = None) -> APIClient:
    """An API client for a person of the tenant (the world's by default): the user `name`, a member with `role`,
    through a key of theirs. A live judgment's rater is that person ("user:<name>"); one client per person."""
    from django.contrib.auth import get_user_model

    from evalsite.tenancy.models import Membership

    tenant = tenant or world.tenant
    made = world.__dict__.setdefault("_person_clients", {})
    if (tenant.pk, name) not in made:
        user, _ = get_user_model().objects.get_or_create(username=name)
        Membership.objects.get_or_create(user=user, tenant=tenant, defaults={"role": role})
        _, secret = api_key_create(tenant=tenant, role=role, user=user, name=name, actor="test")
        made[(tenant.pk, name)] = api_client(secret)
    return made[(tenant.pk, name)]


def add_documents(collection: Collection, docs: dict[str, str]) -> None:
    services.documents_upsert(
        collection=collection,
        documents=[services.DocumentInput.from_text(id=i, title=i.title(), text=t) for i, t in docs.items()],
        actor="test",
    )


@pytest.fixture
def world(db) -> World:
    tenant = tenant_get_or_create(cluster_slug="acme", tenant_slug="search")
    _, key = api_key_create(tenant=tenant, role="admin", name="tests", actor="test")
    other = tenant_get_or_create(cluster_slug="acme", tenant_slug="rival")
    _, other_key = api_key_create(tenant=other, role="admin", name="rival", actor="test")
    collection = services.collection_create(tenant=tenant, slug="handbook", name="Handbook", actor="test")
    add_documents(
        collection,
        {
            "refunds": "Customers get a full refund within 30 days of purchase.\n\nRefunds go to the original card.",
            "shipping": "Orders ship within two business days. Express shipping arrives the next day.",
            "warranty": "Every device carries a two-year warranty covering manufacturing defects.",
        },
    )
    # The rival tenant has a collection of the same name: ids must never cross tenants.
    rival_collection = services.collection_create(tenant=other, slug="handbook", actor="test")
    add_documents(rival_collection, {"refunds": "Rival refunds policy: no refunds."})
    return World(tenant, key, api_client(key), other, other_key, api_client(other_key), collection)


@pytest.fixture
def manage_env():
    """The environment for a real `manage.py` subprocess on this test run's database and index directory."""
    import os

    from django.conf import settings
    from django.db import connection

    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        url = f"sqlite:///{db['NAME']}"
    else:
        auth = (
            (db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "") + "@")
            if db.get("USER")
            else ""
        )
        url = f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "evalsite.settings",
        "DEBUG": "1",
        "DATABASE_URL": url,
        "EVALSITE_DATA_DIR": str(settings.DATA_DIR),
        # django-q2 signs queued tasks with SECRET_KEY: the worker must hold the same one.
        "SECRET_KEY": settings.SECRET_KEY,
        "EVALSITE_INDEX_DIR": str(settings.EVALSITE_INDEX_DIR),
        # Targets the tests point at their own servers on loopback (unset it to test the refusal).
        "EVALSITE_OUTBOUND_ALLOW": ",".join(settings.EVALSITE_OUTBOUND_ALLOW),
    }


@pytest.fixture(autouse=True)
def _no_optional_model(monkeypatch):
    """The suite describes a default install: without the minilm extra, `rerank: true` means proximity.
    The minilm tests check for the package at import time and put the real check back themselves."""
    from evaluation.retrieval.search import embeddings

    monkeypatch.setattr(embeddings, "minilm_available", lambda: False)


@pytest.fixture
def qcluster(transactional_db, monkeypatch, tmp_path, manage_env):
    """A real `manage.py qcluster` on the test database, index directory and broker (Redis when the suite runs
    with it). The test settings run django-q2 tasks inline; a test that takes this fixture gets the worker."""
    import subprocess
    import sys
    from pathlib import Path

    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", False)
    log = tmp_path / "qcluster.log"
    with log.open("w") as out:  # a file, not a pipe: a chatty worker must never block on a full pipe
        process = subprocess.Popen(
            [sys.executable, "manage.py", "worker"],
            cwd=Path(__file__).resolve().parents[1],
            env={**manage_env, "EVALSITE_WORKERS": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        process.log = log
        yield process
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def fresh_indexes(tmp_path, settings):
    """Search indexes of this test only, built afresh: test databases reuse primary keys and content versions,
    so nothing may come from memory or another test's files."""
    from evaluation.retrieval import indexes

    indexes.clear_memory()
    settings.EVALSITE_INDEX_DIR = tmp_path / "indexes"
    settings.DATA_DIR = tmp_path
    yield
    indexes.clear_memory()
