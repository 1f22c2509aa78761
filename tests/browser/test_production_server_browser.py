"""The dashboard behind the production command (DEBUG off, gunicorn, a real worker), in Chromium: the status
line in the footer says the database, the broker and the worker are up; the static files come from the server
itself."""

from __future__ import annotations

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from evalsite.tenancy.models import Membership
from evalsite.tenancy.services import tenant_get_or_create
from goldenset import services
from tests.browser.pages import assert_clean, log_in, watch_requests
from tests.worker_support import Serve

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_status_line_shows_a_live_worker_behind_the_production_server(
    manage_env, tmp_path, page, screenshot, django_user_model
):
    tenant = tenant_get_or_create(cluster_slug="acme", tenant_slug="search")
    services.collection_create(tenant=tenant, slug="handbook", name="Handbook", actor="test")
    # Hashed as the server hashes (the test settings use a fast hasher the server does not accept).
    password = PBKDF2PasswordHasher().encode("ann-secret-123", PBKDF2PasswordHasher().salt())
    user = django_user_model.objects.create(username="ann", password=password)
    Membership.objects.create(user=user, tenant=tenant)
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
        assert_clean(page, urls, "home behind serve")
        css = [u for u in urls if u.endswith(".css")]
        assert css and all(u.startswith(serve.url) for u in css)
    finally:
        serve.close()
