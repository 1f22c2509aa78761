"""Limits on abuse (docs/teams.md, "Limits"): password sign-in throttled per account and per address, API calls
per key with the costly ones on a tighter budget (429 throttled with Retry-After), and a Content-Security-Policy
on every page."""

from __future__ import annotations

import re
import time

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from evalsite.api import throttles
from evalsite.tenancy.services import api_key_create
from tests.conftest import api_client
from tests.support import member_of

PASSWORD = "right-password-1"


def _sign_in(username: str, password: str, address: str):
    return Client(REMOTE_ADDR=address).post(reverse("login"), {"username": username, "password": password})


@override_settings(AXES_FAILURE_LIMIT=3)
def test_failed_sign_ins_lock_the_account_and_the_address_out(world):
    member_of(world.tenant, "ann", password=PASSWORD)
    member_of(world.tenant, "bea", password=PASSWORD)
    member_of(world.tenant, "cid", password=PASSWORD)
    # the form again with its error, then at the third failure the lock-out
    assert [_sign_in("ann", "wrong", "10.0.0.1").status_code for _ in range(3)] == [200, 200, 429]
    locked = _sign_in("ann", PASSWORD, "10.0.0.2")  # the account, from anywhere, the right password too
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.content.decode()
    locked = _sign_in("bea", PASSWORD, "10.0.0.1")  # the address, for any account
    assert locked.status_code == 429
    assert _sign_in("bea", PASSWORD, "10.0.0.3").status_code == 302  # anyone else signs in


def _fresh_minute() -> None:
    """Start at the beginning of a minute: the counts are per minute."""
    if 60 - time.time() % 60 < 10:
        time.sleep(60 - time.time() % 60 + 0.1)


@pytest.fixture
def limited(settings):
    settings.EVALSITE_API_RATE = 4
    settings.EVALSITE_API_COSTLY_RATE = 1
    settings.EVALSITE_WEB_PROCESSES = 1
    throttles._local.clear()
    _fresh_minute()
    yield settings
    throttles._local.clear()


def test_a_keys_calls_past_its_budget_are_429_with_retry_after(world, limited):
    _, secret = api_key_create(tenant=world.tenant, role="evaluator", actor="test")
    client = api_client(secret)
    assert [client.get("/lmkit/v1/collections").status_code for _ in range(4)] == [200] * 4
    refused = client.get("/lmkit/v1/collections")
    assert refused.status_code == 429
    error = refused.json()["error"]
    wait = int(refused["Retry-After"])
    assert 1 <= wait <= 60 and error["code"] == "throttled"
    assert error["details"] == {"scope": "all", "limit_per_minute": 4, "retry_after": wait}
    # another key has its own budget
    assert world.client.get("/lmkit/v1/collections").status_code == 200


def test_the_costly_calls_have_a_tighter_budget_of_their_own(world, limited):
    _, secret = api_key_create(tenant=world.tenant, role="evaluator", actor="test")
    client = api_client(secret)
    body = {"collection_id": "handbook", "configs": [{"label": "a"}]}
    first = client.post("/lmkit/v1/search/evaluate", body, format="json")
    assert first.status_code != 429  # (a 400: the handbook has no golden set here)
    second = client.post("/lmkit/v1/search/evaluate", body, format="json")
    assert second.status_code == 429 and second.json()["error"]["details"]["scope"] == "costly"
    assert client.get("/lmkit/v1/collections").status_code == 200  # reads go on


def test_a_page_allows_only_its_own_scripts(world):
    browser = Client()
    browser.force_login(member_of(world.tenant, "ann"))
    policy = browser.get(reverse("home"))["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    assert directives["default-src"] == "'self'" and directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["script-src"] == "'self'"  # no inline script, no eval
    assert "unsafe-eval" not in policy
    # the API's docs load their scripts as files too (Swagger UI's start script from ?script)
    for path in ("/api/docs", "/api/redoc"):
        page = browser.get(path)
        scripts = re.findall(r"<script([^>]*)>", page.content.decode())
        assert scripts and all("src=" in attributes for attributes in scripts), (path, scripts)
        for src in re.findall(r'<script[^>]* src="([^"]+)"', page.content.decode()):
            if not src.startswith("/static/"):
                assert browser.get(src).status_code == 200, src
