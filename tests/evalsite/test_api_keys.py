"""API keys with a role and a person (docs/teams.md): `createapikey --role --user --expires`, a key never doing more
than its person, and a revoked or expired key refused on every process of the production server at once."""

from __future__ import annotations

import time
from datetime import timedelta
from io import StringIO

import httpx
import pytest
from django.core.management import call_command
from django.utils import timezone

from evalsite.tenancy.models import ApiKey, hash_api_key
from evalsite.tenancy.services import api_key_create, api_key_revoke
from tests.conftest import api_client
from tests.support import member_of
from tests.worker_support import Serve


def _create(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("createapikey", "--cluster", "acme", "--tenant", "search", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def test_a_persons_key_carries_the_person_and_never_more_than_their_role(world):
    member_of(world.tenant, "rita", role="rater")
    code, out, _ = _create("--role", "rater", "--user", "rita", "--name", "rita's", "--expires", "30")
    assert code == 0
    key = ApiKey.objects.get(key_hash=hash_api_key(out.splitlines()[-1]))
    assert (key.role, key.user.username, key.name) == ("rater", "rita", "rita's")
    assert timedelta(days=29, hours=23) < key.expires_at - timezone.now() <= timedelta(days=30)
    assert out.splitlines()[0].startswith(f"Created rater API key {key.prefix}… for acme/search, person rita")

    # a rater's key cannot evaluate, nor can an outsider have a key of the tenant
    code, out, err = _create("--role", "evaluator", "--user", "rita")
    assert (code, out) == (2, "")
    assert err.strip() == (
        "error [validation-error] role: a key may not do more than its person; rita is rater in acme/search."
    )
    member_of(world.other_tenant, "olga", role="admin")
    code, _, err = _create("--role", "viewer", "--user", "olga")
    assert code == 2 and "olga is no member of acme/search." in err
    code, _, err = _create("--role", "viewer", "--user", "nobody")
    assert code == 2 and "nobody" in err
    for days in ("0", "3651"):
        code, _, err = _create("--role", "viewer", "--expires", days)
        assert code == 2 and f"--expires: {days} is not a number of days from 1 to 3650." in err
    assert ApiKey.objects.filter(tenant=world.tenant).count() == 2  # the fixture's and rita's


def test_an_expired_key_is_refused_naming_when(world):
    key, secret = api_key_create(
        tenant=world.tenant, role="viewer", expires_at=timezone.now() + timedelta(seconds=1), actor="test"
    )
    client = api_client(secret)
    assert client.get("/lmkit/v1/collections").status_code == 200
    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client.get("/lmkit/v1/collections")
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "unauthenticated" and error["message"].startswith("This API key expired at ")


@pytest.mark.django_db(transaction=True)
def test_a_revoked_or_expired_key_is_refused_by_every_process_within_five_seconds(
    world, manage_env, tmp_path
):
    revoked_key, revoked = api_key_create(tenant=world.tenant, role="viewer", actor="test")
    expiring_key, expiring = api_key_create(tenant=world.tenant, role="viewer", actor="test")
    serve = Serve(manage_env, tmp_path / "serve.log", processes=2, threads=2).start()
    try:
        with httpx.Client(base_url=serve.url, timeout=10) as http:

            def answers(secret: str, times: int = 12) -> set[int]:
                # a new connection each time, so the requests spread over the web processes
                return {
                    http.get(
                        "/lmkit/v1/collections",
                        headers={"Authorization": f"Bearer {secret}", "Connection": "close"},
                    ).status_code
                    for _ in range(times)
                }

            assert answers(revoked) == {200} and answers(expiring) == {200}
            api_key_revoke(key=revoked_key, actor="test")
            ApiKey.objects.filter(pk=expiring_key.pk).update(expires_at=timezone.now())
            started = time.monotonic()
            assert answers(revoked) == {401} and answers(expiring) == {401}
            assert time.monotonic() - started < 5
    finally:
        serve.close()
