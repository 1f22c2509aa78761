"""The Team page (docs/teams.md), for a tenant's admins: members and their roles, the last admin kept; API keys
with a role, a person and an expiry, the secret shown once, revoked at once; signing out everywhere."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.audit.models import AuditEvent
from evalsite.tenancy.models import ApiKey, Membership
from tests.conftest import api_client
from tests.support import db_state, member_of


@pytest.fixture
def admin(world):
    browser = Client()
    browser.force_login(member_of(world.tenant, "ada", role="admin"))
    return browser


def test_members_are_added_given_roles_and_removed_and_the_last_admin_stays(admin, world):
    member_of(world.other_tenant, "ben", role="admin")  # a user of another tenant, added here as a rater
    assert (
        admin.post(reverse("dashboard:member-add"), {"username": "ben", "role": "rater"}).status_code == 302
    )
    ben = Membership.objects.get(tenant=world.tenant, user__username="ben")
    assert ben.role == "rater"
    page = admin.get(reverse("dashboard:team")).content.decode()
    assert ">ben<" in page and 'value="rater" selected' in page
    assert admin.post(reverse("dashboard:member-role", args=["ben"]), {"role": "admin"}).status_code == 302
    # two admins: ada may step down; then ben is the last and can be neither demoted nor removed
    assert admin.post(reverse("dashboard:member-role", args=["ada"]), {"role": "curator"}).status_code == 302
    boss = Client()
    boss.force_login(ben.user)
    boss.post(reverse("dashboard:tenant-switch"), {"tenant": "acme/search"})  # ben is also rival's admin
    before = db_state()
    for response in (
        boss.post(reverse("dashboard:member-role", args=["ben"]), {"role": "viewer"}),
        boss.post(reverse("dashboard:member-remove", args=["ben"])),
    ):
        assert response.status_code == 409
        assert "ben is the last admin of acme/search" in response.content.decode()
    assert db_state() == before
    assert boss.post(reverse("dashboard:member-remove", args=["ada"])).status_code == 302
    assert not Membership.objects.filter(tenant=world.tenant, user__username="ada").exists()
    events = AuditEvent.objects.filter(object_type="membership").order_by("pk")
    assert [(e.object_id, e.action, e.actor, e.changes) for e in events] == [
        ("ben", "create", "user:ada", {"role": "rater"}),
        ("ben", "update", "user:ada", {"role": ["rater", "admin"]}),
        ("ada", "update", "user:ada", {"role": ["admin", "curator"]}),
        ("ada", "delete", "user:ben", {"role": "curator"}),
    ]
    # another tenant's members are not this page's, and bad input names what is wrong
    assert boss.post(reverse("dashboard:member-remove", args=["nobody"])).status_code == 404
    refused = boss.post(reverse("dashboard:member-add"), {"username": "ghost", "role": "viewer"})
    assert refused.status_code == 400 and "no user is called &#x27;ghost&#x27;" in refused.content.decode()


def test_a_key_is_made_with_its_role_person_and_expiry_shown_once_and_revoked_at_once(admin, world):
    member_of(world.tenant, "rita", role="rater")
    made = admin.post(
        reverse("dashboard:key-create"), {"name": "rita's", "role": "rater", "user": "rita", "expires": "30"}
    )
    assert made.status_code == 200
    secret = re.search(r"data-new-secret>(esk_[\w-]+)<", made.content.decode()).group(1)
    key = ApiKey.objects.get(name="rita's")
    assert (key.role, key.user.username, key.expires_at is not None) == ("rater", "rita", True)
    assert secret not in admin.get(reverse("dashboard:team")).content.decode()
    client = api_client(secret)
    assert client.get("/lmkit/v1/collections").status_code == 200
    assert client.post("/lmkit/v1/search/evaluate", {}, format="json").status_code == 403
    # never more than the person: a rater's key cannot be an evaluator's
    over = admin.post(reverse("dashboard:key-create"), {"role": "evaluator", "user": "rita"})
    assert over.status_code == 400 and "may not do more than its person" in over.content.decode()
    assert admin.post(reverse("dashboard:key-create"), {"role": "viewer", "expires": "0"}).status_code == 400
    assert admin.post(reverse("dashboard:key-revoke", args=[key.prefix])).status_code == 302
    assert client.get("/lmkit/v1/collections").status_code == 401
    # another tenant's key is not found here
    rival = ApiKey.objects.filter(tenant=world.other_tenant).first()
    assert admin.post(reverse("dashboard:key-revoke", args=[rival.prefix])).status_code == 404
    assert ApiKey.objects.get(pk=rival.pk).revoked_at is None


def test_only_an_admin_sees_the_team_link_and_page(admin, world):
    viewer = Client()
    viewer.force_login(member_of(world.tenant, "val", role="viewer"))
    assert reverse("dashboard:team") in admin.get(reverse("home")).content.decode()
    assert reverse("dashboard:team") not in viewer.get(reverse("home")).content.decode()
    assert viewer.get(reverse("dashboard:team")).status_code == 403


def test_signing_out_everywhere_ends_every_session_of_the_user_only(world):
    user = member_of(world.tenant, "sam", role="viewer")
    phone, laptop, other = Client(), Client(), Client()
    phone.force_login(user)
    laptop.force_login(user)
    other.force_login(member_of(world.tenant, "tom", role="viewer"))
    for browser in (phone, laptop, other):
        assert browser.get(reverse("home")).status_code == 200
    response = laptop.post(reverse("dashboard:sign-out-everywhere"))
    assert response.status_code == 302 and response["Location"] == reverse("login")
    for browser in (phone, laptop):
        assert browser.get(reverse("home")).status_code == 302  # to the sign-in page
    assert other.get(reverse("home")).status_code == 200
