"""Sign-in from the organisation's identity provider (docs/teams.md, "Single sign-on"), end to end against a
real OpenID Connect provider (panva's oidc-provider, tests/oidc, started on 127.0.0.1): authorization code with
PKCE; the groups claim mapped to tenants and roles; the first sign-in creates the user with its memberships; a
group removed at the provider removes the membership at the next sign-in; a forged state or nonce is refused."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session

from evalsite import sign_in
from evalsite.tenancy.models import Membership
from tests.worker_support import free_port

ROOT = Path(__file__).resolve().parents[2]
PROVIDER = ROOT / "tests" / "oidc"
pytestmark = pytest.mark.django_db(transaction=True)
ACCOUNTS = {
    "ann": {
        "email": "ann@example.org",
        "groups": ["evalsite:acme/search:curator", "evalsite:acme/rival:viewer"],
    },
    "bob": {"email": "bob@example.org", "groups": ["staff", "evalsite:acme/nowhere:admin"]},
}


def _provider_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (PROVIDER / "node_modules" / "oidc-provider").exists():
        return "the test provider is not installed (npm ci in tests/oidc: scripts/setup test does it)"
    return None


@pytest.fixture
def provider(live_server, settings):
    missing = _provider_missing()
    if missing:
        import os

        if os.environ.get("EVALSITE_REQUIRE_BROWSER") == "1":  # CI: the provider is part of the test tools
            pytest.fail(missing)
        pytest.skip(missing)
    port = free_port()
    process = subprocess.Popen(
        ["node", "provider.js", str(port), f"{live_server.url}/oidc/callback/", json.dumps(ACCOUNTS)],
        cwd=PROVIDER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("ready "), line
    settings.EVALSITE_OIDC_ISSUER = f"http://127.0.0.1:{port}"
    settings.EVALSITE_OIDC_NAME = "Acme SSO"
    settings.OIDC_RP_CLIENT_ID = "evalsite"
    settings.OIDC_RP_CLIENT_SECRET = "evalsite-test-secret"
    sign_in._DISCOVERED.clear()
    yield process
    process.terminate()
    process.wait(10)
    process.stdin.close()
    process.stdout.close()
    sign_in._DISCOVERED.clear()


def _follow(client: httpx.Client, response: httpx.Response) -> httpx.Response:
    while response.is_redirect:
        response = client.get(urljoin(str(response.url), response.headers["location"]))
    return response


def _submit(client: httpx.Client, page: httpx.Response, fields: dict[str, str]) -> httpx.Response:
    """The page's form sent as a browser sends it (its hidden fields, and ours)."""
    form = re.search(r'<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>', page.text, re.S)
    assert form, page.text[:500]
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form.group(2)))
    action = urljoin(str(page.url), html.unescape(form.group(1)))
    return _follow(client, client.post(action, data={**hidden, **fields}))


def _sign_in(base: str, login: str, *, before_callback=None) -> httpx.Response:
    """Through the provider's own pages: its login form (any password), its consent, back to evalsite."""
    with httpx.Client(timeout=20) as client:
        return _through_the_provider(client, base, login, before_callback)


def _through_the_provider(client: httpx.Client, base: str, login: str, before_callback) -> httpx.Response:
    page = _follow(client, client.get(f"{base}/oidc/authenticate/"))
    assert 'name="login"' in page.text, page.text[:300]
    page = _submit(client, page, {"login": login, "password": "not checked by the test provider"})
    if 'name="prompt" value="consent"' in page.text:
        form = re.search(r'<form[^>]*action="([^"]+)"', page.text).group(1)
        answer = client.post(urljoin(str(page.url), html.unescape(form)), data={"prompt": "consent"})
        while answer.is_redirect and not answer.headers["location"].startswith(base):
            answer = client.get(urljoin(str(answer.url), answer.headers["location"]))
        if before_callback is not None:
            before_callback(client, answer)
        page = _follow(client, client.get(answer.headers["location"]))
    return page


def _memberships(username: str) -> dict[str, tuple[str, bool]]:
    return {
        str(m.tenant): (m.role, m.from_sign_in)
        for m in Membership.objects.filter(user__username=username).select_related("tenant__cluster")
    }


def test_the_first_sign_in_makes_the_user_with_the_memberships_its_groups_grant(world, live_server, provider):
    home = _sign_in(live_server.url, "ann")
    assert home.status_code == 200 and urlsplit(str(home.url)).path == "/"
    assert '<span class="user">ann</span>' in home.text
    user = get_user_model().objects.get(username="ann")
    assert user.email == "ann@example.org" and not user.has_usable_password()
    assert _memberships("ann") == {"acme/search": ("curator", True), "acme/rival": ("viewer", True)}
    # a group naming no tenant, or no evalsite group at all, grants nothing
    _sign_in(live_server.url, "bob")
    assert _memberships("bob") == {}


def test_a_group_removed_at_the_provider_removes_the_membership_at_the_next_sign_in(
    world, live_server, provider
):
    _sign_in(live_server.url, "ann")
    hand_made = Membership.objects.get(user__username="ann", tenant=world.other_tenant)
    Membership.objects.filter(pk=hand_made.pk).update(from_sign_in=False)  # an admin's, from now on
    provider.stdin.write(
        json.dumps({"ann": {"email": "ann@example.org", "groups": ["evalsite:acme/search:rater"]}})
    )
    provider.stdin.write("\n")
    provider.stdin.flush()
    _sign_in(live_server.url, "ann")
    # the role follows the groups; the membership an admin keeps stays as it was
    assert _memberships("ann") == {"acme/search": ("rater", True), "acme/rival": ("viewer", False)}
    provider.stdin.write(json.dumps({"ann": {"email": "ann@example.org", "groups": []}}) + "\n")
    provider.stdin.flush()
    _sign_in(live_server.url, "ann")
    assert _memberships("ann") == {"acme/rival": ("viewer", False)}


def _forge(key: str):
    def forge(client: httpx.Client, answer: httpx.Response) -> None:
        location = answer.headers["location"]
        assert location.startswith(f"{client.base_url}") or "/oidc/callback/" in location
        session = Session.objects.get()
        data = session.get_decoded()
        for state in data["oidc_states"].values():
            state[key] = "forged-" + state[key]
        Session.objects.filter(pk=session.pk).update(session_data=Session.objects.encode(data))

    return forge


@pytest.mark.parametrize("forged", ["nonce", "code_verifier"])
def test_a_callback_whose_nonce_or_verifier_is_not_the_sessions_is_refused(
    world, live_server, provider, forged
):
    page = _sign_in(live_server.url, "ann", before_callback=_forge(forged))
    assert urlsplit(str(page.url)).path == "/accounts/login/" and page.status_code == 200
    assert "did not succeed" in page.text
    assert not get_user_model().objects.filter(username="ann").exists()
    assert '<span class="user">' not in page.text


def test_a_forged_state_is_refused(world, live_server, provider):
    with httpx.Client(timeout=20) as client:
        _follow(client, client.get(f"{live_server.url}/oidc/authenticate/"))
        forged = client.get(f"{live_server.url}/oidc/callback/", params={"code": "stolen", "state": "forged"})
    assert forged.status_code == 302 and forged.headers["location"] == "/accounts/login/?sign_in=failed"
    assert not get_user_model().objects.filter(username="ann").exists()


def test_password_sign_in_can_be_switched_off(world, live_server, provider, settings):
    settings.EVALSITE_PASSWORD_SIGN_IN = False
    page = httpx.get(f"{live_server.url}/accounts/login/")
    assert "Sign in with Acme SSO" in page.text and 'name="password"' not in page.text
    with httpx.Client() as client:
        client.get(f"{live_server.url}/accounts/login/")
        refused = client.post(
            f"{live_server.url}/accounts/login/",
            data={
                "username": "x",
                "password": "y",
                "csrfmiddlewaretoken": client.cookies.get("csrftoken", ""),
            },
            headers={"Referer": f"{live_server.url}/accounts/login/"},
        )
    assert refused.status_code == 403


def test_a_provider_out_of_reach_is_a_503_that_says_so(world, live_server, provider, settings):
    settings.EVALSITE_OIDC_ISSUER = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    sign_in._DISCOVERED.clear()
    answer = httpx.get(f"{live_server.url}/oidc/authenticate/")
    assert answer.status_code == 503 and "cannot be reached" in answer.text


def test_a_local_account_of_the_same_name_is_never_signed_into_from_the_provider(
    world, live_server, provider
):
    local = get_user_model().objects.create_user("ann", password="the local ann's own password")
    page = _sign_in(live_server.url, "ann")
    assert urlsplit(str(page.url)).path == "/accounts/login/" and "did not succeed" in page.text
    assert get_user_model().objects.filter(username="ann").count() == 1 and _memberships("ann") == {}
    local.refresh_from_db()
    assert local.has_usable_password()


def test_a_code_in_the_password_sign_ins_query_is_not_taken_for_the_providers(world, live_server, provider):
    with httpx.Client() as client:
        client.get(f"{live_server.url}/accounts/login/")
        answer = client.post(
            f"{live_server.url}/accounts/login/?code=stolen&state=forged",
            data={"username": "ann", "password": "wrong", "csrfmiddlewaretoken": client.cookies["csrftoken"]},
            headers={"Referer": f"{live_server.url}/accounts/login/"},
        )
    assert answer.status_code == 200 and "didn't match" in answer.text  # the form's own error, no 500
