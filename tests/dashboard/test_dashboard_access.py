"""Who sees what: login required, members see their tenants only (superusers all), the tenant switcher."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.jobs.models import Job
from evalsite.tenancy.models import Membership
from evaluation.dashboard.common_views import SESSION_TENANT
from evaluation.models import EvaluationJobKind


@pytest.fixture
def job(world):
    return Job.objects.create(
        tenant=world.tenant, kind=EvaluationJobKind.EVALUATE, collection=world.collection
    )


@pytest.fixture
def pages(world, golden, batch, job) -> list[str]:
    """Every dashboard page of the world's tenant, with real objects in it."""
    run = batch.runs[0]
    slug = world.collection.slug
    return [
        reverse("home"),
        reverse("dashboard:collection", args=[slug]),
        reverse("dashboard:collection", args=[slug]) + "?q=refund&tag=policy&origin=Manual&reviewed=no",
        reverse("dashboard:documents", args=[slug]),
        reverse("dashboard:documents", args=[slug]) + "?q=ship",
        reverse("dashboard:document", args=[slug, "refunds"]),
        reverse("dashboard:golden-entry", args=[slug, golden[0].pk]),
        reverse("dashboard:golden-new", args=[slug]),
        reverse("dashboard:golden-generate", args=[slug]),
        reverse("dashboard:golden-review", args=[slug]),
        reverse("dashboard:golden-csv", args=[slug]),
        reverse("dashboard:golden-json", args=[slug]),
        reverse("dashboard:launch"),
        reverse("dashboard:job", args=[job.pk]),
        reverse("dashboard:job-progress", args=[job.pk]),
        reverse("dashboard:runs"),
        reverse("dashboard:runs") + f"?collection={slug}&label=fulltext&kind=retrieval&date_from=2020-01-01",
        reverse("dashboard:run", args=[run.pk]),
        reverse("dashboard:run", args=[run.pk]) + "?failures=1",
        reverse("dashboard:run-question", args=[run.pk, 1]),
        reverse("dashboard:run-json", args=[run.pk]),
        reverse("dashboard:run-csv", args=[run.pk]),
        reverse("dashboard:run-trec", args=[run.pk]),
        reverse("dashboard:compare"),
        reverse("dashboard:compare") + f"?batch={batch.batch_id}",
        reverse("dashboard:compare")
        + "".join(f"{'&' if i else '?'}run={r.pk}" for i, r in enumerate(batch.runs)),
        reverse("dashboard:trends"),
        reverse("dashboard:trends") + f"?collection={slug}&metric=mrr",
    ]


def test_every_page_renders_for_a_member(alice, pages):
    for url in pages:
        response = alice.get(url)
        assert response.status_code == 200, url


def test_every_page_is_a_404_for_a_tenant_the_user_is_not_a_member_of(alice, pages):
    for url in pages:
        joiner = "&" if "?" in url else "?"
        response = alice.get(f"{url}{joiner}tenant=acme/rival")
        assert response.status_code == 404, url


def test_another_tenants_objects_are_a_404(world, outsider, golden, batch, job):
    """rob belongs to the rival tenant: acme/search's run, entry and job do not exist for him."""
    client = Client()
    client.force_login(outsider)
    run = batch.runs[0]
    for url in [
        reverse("dashboard:run", args=[run.pk]),
        reverse("dashboard:run-question", args=[run.pk, 1]),
        reverse("dashboard:run-trec", args=[run.pk]),
        reverse("dashboard:compare") + f"?batch={batch.batch_id}",
        reverse("dashboard:golden-entry", args=["handbook", golden[0].pk]),
        reverse("dashboard:job", args=[job.pk]),
        reverse("dashboard:job-progress", args=[job.pk]),
        reverse("dashboard:collection", args=["no-such-collection"]),
    ]:
        assert client.get(url).status_code == 404, url
    # His own tenant's collection of the same name is his to see.
    page = client.get(reverse("dashboard:collection", args=["handbook"]))
    assert page.status_code == 200
    assert page.context["tenant"] == world.other_tenant


@pytest.mark.parametrize(
    "url",
    ["/", "/runs/", "/compare/", "/trends/", "/launch/", "/collections/handbook/", "/runs/x/run.trec"],
)
def test_login_is_required(db, client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={url}"


def test_progress_json_answers_401_without_a_session(world, client):
    job = Job.objects.create(tenant=world.tenant, kind=EvaluationJobKind.EVALUATE)
    response = client.get(reverse("dashboard:job-progress", args=[job.pk]))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_the_login_page_signs_in_and_lands_on_home(member, client):
    page = client.get(reverse("login"))
    assert page.status_code == 200 and b"csrfmiddlewaretoken" in page.content
    response = client.post(reverse("login"), {"username": "alice", "password": "secret-alice"})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert client.get(reverse("home")).status_code == 200


def test_logout_is_a_post_and_ends_the_session(alice):
    response = alice.post(reverse("logout"))
    assert response.status_code == 302 and response["Location"] == reverse("login")
    assert alice.get(reverse("home")).status_code == 302


def test_a_user_without_memberships_is_told_what_to_do(db, django_user_model):
    user = django_user_model.objects.create_user("nobody")
    client = Client()
    client.force_login(user)
    page = client.get(reverse("home"))
    assert page.status_code == 200
    assert b"not a member of any tenant" in page.content
    assert client.get(reverse("dashboard:runs") + "?tenant=acme/search").status_code == 404


def test_a_superuser_sees_every_tenant_and_switches(world, admin_user):
    client = Client()
    client.force_login(admin_user)
    page = client.get(reverse("home"))
    keys = [t["key"] for t in page.context["dashboard"].tenants]
    assert keys == ["acme/rival", "acme/search"]
    assert b'name="tenant"' in page.content  # the switcher, since there are several
    assert client.get(reverse("home") + "?tenant=acme/search").context["tenant"] == world.tenant


def test_the_switcher_changes_the_current_tenant(world, member):
    Membership.objects.create(user=member, tenant=world.other_tenant, role="admin")
    client = Client()
    client.force_login(member)
    first = client.get(reverse("home"))
    assert first.context["tenant"] == world.other_tenant  # the first visible, by cluster/slug
    assert b'<select id="tenant-select" name="tenant"' in first.content
    response = client.post(
        reverse("dashboard:tenant-switch"), {"tenant": "acme/search", "next": reverse("dashboard:runs")}
    )
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:runs")
    assert client.session[SESSION_TENANT] == world.tenant.pk
    assert client.get(reverse("home")).context["tenant"] == world.tenant
    # A page naming an object is not a safe place to land after a switch: home instead.
    response = client.post(reverse("dashboard:tenant-switch"), {"tenant": "acme/rival", "next": "/runs/abc/"})
    assert response["Location"] == reverse("home")
    # Nor another site.
    response = client.post(
        reverse("dashboard:tenant-switch"), {"tenant": "acme/rival", "next": "https://evil.example/"}
    )
    assert response["Location"] == reverse("home")


def test_switching_to_a_tenant_the_user_may_not_see_is_a_404(alice, world):
    response = alice.post(reverse("dashboard:tenant-switch"), {"tenant": "acme/rival"})
    assert response.status_code == 404
    assert alice.get(reverse("home")).context["tenant"] == world.tenant


def test_a_single_tenant_shows_no_switcher(alice):
    page = alice.get(reverse("home"))
    assert b'name="tenant"' not in page.content
    assert b"acme/search" in page.content


def test_a_revoked_membership_is_noticed_on_the_next_request(world, member, alice):
    Membership.objects.create(user=member, tenant=world.other_tenant, role="admin")
    assert alice.get(reverse("home") + "?tenant=acme/rival").status_code == 200
    Membership.objects.filter(user=member, tenant=world.other_tenant).delete()
    page = alice.get(reverse("home"))
    assert page.context["tenant"] == world.tenant  # the session's tenant is checked again, every request


def test_forms_carry_a_csrf_token(alice, golden, world):
    for url in [
        reverse("dashboard:launch"),
        reverse("dashboard:collection", args=[world.collection.slug]),
        reverse("dashboard:golden-entry", args=[world.collection.slug, golden[0].pk]),
    ]:
        assert b"csrfmiddlewaretoken" in alice.get(url).content, url


def test_posts_without_a_csrf_token_are_refused(member, golden, world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    response = client.post(
        reverse("dashboard:golden-action", args=[world.collection.slug]),
        {"action": "reviewed", "entry": [str(golden[0].pk)]},
    )
    assert response.status_code == 403


def test_the_not_found_page_is_the_dashboards(alice):
    response = alice.get("/runs/00000000-0000-0000-0000-000000000000/")
    assert response.status_code == 404
    assert b"belongs to a tenant you are not a member of" in response.content
    assert b'href="/runs/"' in response.content


@pytest.mark.parametrize("url", ["/favicon.ico", "/no/such/page/", "/runs/x/y/z/"])
def test_an_unmatched_url_is_the_not_found_page_for_a_signed_in_user(alice, url):
    """No route resolved: the header's navigation has no section to mark, and says so rather than failing."""
    response = alice.get(url)
    assert response.status_code == 404
    assert b"<h1>Not found</h1>" in response.content
    assert b'aria-current="page"' not in response.content  # no section of the navigation is current
    assert b"for tenant <strong>acme/search</strong>" in response.content
