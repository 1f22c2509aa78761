"""The dashboard behind the production command (DEBUG off, gunicorn, a real worker), in Chromium: the status
line in the footer says the database, the broker and the worker are up; the static files come from the server
itself, under names that hold a hash of their content, compressed, cached for years; plotly.js does not hold up
the page's first paint (deferred) and still draws the charts."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from evalsite.tenancy.models import Membership
from evalsite.tenancy.services import tenant_get_or_create
from evaluation.configs import parse_configs
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from goldenset import services
from tests.browser.pages import assert_clean, log_in, watch_requests
from tests.conftest import add_documents
from tests.support import handbook_entries
from tests.worker_support import Serve

pytestmark = pytest.mark.django_db(transaction=True)

HASHED = re.compile(r"/static/.+\.[0-9a-f]{12}\.(js|css)$")
TEN_YEARS = 315_360_000  # whitenoise's max-age for a file whose name holds its hash


def test_the_status_line_shows_a_live_worker_behind_the_production_server(
    manage_env, tmp_path, page, screenshot, django_user_model
):
    tenant = tenant_get_or_create(cluster_slug="acme", tenant_slug="search")
    collection = services.collection_create(tenant=tenant, slug="handbook", name="Handbook", actor="test")
    add_documents(
        collection,
        {
            "refunds": "Customers get a full refund within 30 days of purchase.",
            "shipping": "Orders ship within two business days. Express shipping arrives the next day.",
            "warranty": "Every device carries a two-year warranty covering manufacturing defects.",
        },
    )
    handbook_entries(collection)
    configs = parse_configs(
        [{"label": "lucene"}, {"label": "okapi", "bm25_variant": "okapi"}], available_rerankers()
    )
    batch_id, _ = evaluate_retrieval(tenant=tenant, collections=[collection], ks=[10], configs=configs)
    # Hashed as the server hashes (the test settings use a fast hasher the server does not accept).
    password = PBKDF2PasswordHasher().encode("ann-secret-123", PBKDF2PasswordHasher().salt())
    user = django_user_model.objects.create(username="ann", password=password)
    Membership.objects.create(user=user, tenant=tenant, role="admin")
    serve = Serve(
        {**manage_env, "EVALSITE_WORKERS": "1", "EVALSITE_JOB_HEARTBEAT_SECONDS": "1"}, tmp_path / "s.log"
    )
    serve.start()
    try:
        urls = watch_requests(page)
        log_in(page, serve.url, "ann", "ann-secret-123")
        footer = page.locator("footer[data-system-status]")
        footer.wait_for()
        assert footer.locator("[data-part=database]").inner_text() == "Database ok"
        assert footer.locator("[data-part=broker]").inner_text().startswith("Broker (")
        assert footer.locator("[data-part=broker]").inner_text().endswith(") ok")
        assert footer.locator("[data-part=workers]").inner_text().startswith("Workers: 1 alive, last beat")
        assert footer.locator(".part.down").count() == 0
        screenshot(page, "production-status-line")

        static = []
        page.on("response", lambda r: static.append(r) if "/static/" in r.url else None)
        page.goto(f"{serve.url}/compare/?batch={batch_id}")
        page.wait_for_selector(
            "#compare-chart .main-svg"
        )  # drawn by dashboard.js after the deferred plotly.js
        assert page.locator("head script[src*='plotly'][defer]").count() == 1
        names = {r.url.rsplit("/", 1)[-1]: r for r in static}
        assert any(n.startswith("plotly.min.") for n in names) and any(
            n.startswith("evalsite.") for n in names
        )
        for name, response in names.items():
            headers = response.all_headers()
            assert response.status == 200 and HASHED.search(response.url), response.url
            assert headers.get("content-encoding") == "gzip", (name, headers)
            assert f"max-age={TEN_YEARS}" in headers.get("cache-control", ""), (name, headers)
            assert "immutable" in headers["cache-control"]
        page.goto(f"{serve.url}/api/docs")  # the vendored Swagger UI finds its files under their hashed names
        page.wait_for_selector(".swagger-ui .opblock")
        assert_clean(page, urls, "home, compare and the API docs behind serve")
        assert all(u.startswith(serve.url) for u in urls if "/static/" in u)
    finally:
        serve.close()
