"""Roles inside a tenant (docs/teams.md): every route declares the permission each of its methods needs, or why it
is public; every role is answered as the declarations say, on every endpoint and page (the expected answer is
read from the declarations, never written twice); a refusal is 403 `forbidden` naming the permission, and writes
nothing."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.core.management import get_commands, load_command_class
from django.test import Client

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job
from evalsite.tenancy.roles import ROLE_PERMISSIONS, Perm, Role, role_allows
from evalsite.tenancy.services import api_key_create
from evaluation.models import EvaluationRun
from goldenset.models import Collection, Document, GoldenEntry
from tests.access_support import HANDLERS, declared_operations, site_routes
from tests.conftest import api_client
from tests.support import member_of


def test_every_route_declares_what_each_method_needs_or_why_it_is_public():
    routes = site_routes()
    undeclared = [r.route for r in routes if r.declared is None]
    assert undeclared == []
    # every handler of an API view has its own entry (a method added later is not covered by another's)
    missing = [
        f"{r.route} {m.upper()}"
        for r in routes
        if r.is_api
        for m in HANDLERS
        if hasattr(r.callback.cls, m) and m.upper() not in r.declared
    ]
    assert missing == []
    api = [r for r in routes if r.is_api]
    pages = [r for r in routes if isinstance(r.declared, dict) and not r.is_api]
    public = [r for r in routes if isinstance(r.declared, str)]
    # what the note and docs/teams.md count
    assert (len(api), len(pages)) >= (36, 50), (len(api), len(pages))
    assert {r.route for r in public} >= {"healthz", "accounts/login/", "api/schema"}
    assert all(isinstance(perm, Perm) for _, _, perm in declared_operations())


def test_every_admin_action_declares_its_permissions():
    # the admin is the operator's (staff): Django's model permissions, and each action says which it needs
    for model_admin in admin.site._registry.values():
        for action in model_admin._get_base_actions():
            func = action[0]
            assert getattr(func, "allowed_permissions", None), (type(model_admin).__name__, action[1])


def test_every_command_declares_the_permission_it_stands_for():
    ours = {
        name: app for name, app in get_commands().items() if app in ("evalsite", "goldenset", "evaluation")
    }
    assert len(ours) >= 17
    for name, app in ours.items():
        command = load_command_class(app, name)
        declared = getattr(command, "required_permissions", None) or getattr(command, "operator_only", None)
        assert declared, name


def _counts() -> tuple[int, ...]:
    return tuple(
        model.objects.count() for model in (AuditEvent, Job, EvaluationRun, GoldenEntry, Document, Collection)
    )


@pytest.mark.parametrize("role", list(Role))
def test_an_api_key_of_each_role_gets_what_the_declarations_say_on_every_endpoint(world, role):
    _, secret = api_key_create(tenant=world.tenant, role=role, name=role.value, actor="test")
    client = api_client(secret)
    before = _counts()
    operations = [(r, m, p) for r, m, p in declared_operations() if r.is_api]
    assert len(operations) >= 49
    for route, method, perm in operations:
        response = getattr(client, method.lower())(route.path, {}, format="json")
        where = f"{role} {method} {route.route}"
        if role_allows(role, perm):
            assert response.status_code != 403, (where, response.content)
        else:
            assert response.status_code == 403, (where, response.content)
            error = response.json()["error"]
            assert error["code"] == "forbidden", where
            assert error["details"] == {"permission": perm.value, "role": role.value}, where
            assert f"'{perm.value}'" in error["message"], where
    if role == Role.VIEWER:
        # a viewer's key reads and writes nothing, whatever it sends
        assert _counts() == before


@pytest.mark.parametrize("role", list(Role))
def test_a_member_of_each_role_gets_what_the_declarations_say_on_every_page(world, role):
    browser = Client()
    member = member_of(world.tenant, f"{role}-member", role=role.value)
    before = _counts()
    pages = [(r, m, p) for r, m, p in declared_operations() if not r.is_api]
    served = set()
    for route, method, perm in pages:
        browser.force_login(member)  # signed in again: one of the pages signs its user out everywhere
        response = getattr(browser, method.lower())(route.path)
        if response.status_code == 405:
            continue  # a POST-only page asked with GET, or the other way round
        served.add(route.route)
        where = f"{role} {method} {route.route}"
        if role_allows(role, perm):
            assert response.status_code != 403, where
        else:
            assert response.status_code == 403, where
            text = response.content.decode()
            if response["Content-Type"].startswith("application/json"):
                assert response.json()["error"]["details"]["permission"] == perm.value, where
            else:
                assert f"<strong>{perm.value}</strong> permission" in text, where
    assert len(served) == len({r.route for r, _, _ in pages})
    if role == Role.VIEWER:
        assert _counts() == before


def test_the_roles_nest_as_the_issue_of_roles_says():
    held = {role: ROLE_PERMISSIONS[role] for role in Role}
    assert held[Role.VIEWER] == {Perm.VIEW}
    assert held[Role.VIEWER] < held[Role.RATER] < held[Role.CURATOR] < held[Role.ADMIN]
    assert held[Role.VIEWER] < held[Role.EVALUATOR] < held[Role.CURATOR]
    assert Perm.JUDGE not in held[Role.EVALUATOR] and Perm.EVALUATE not in held[Role.RATER]
    assert Perm.CURATE not in held[Role.EVALUATOR] | held[Role.RATER]
    assert held[Role.ADMIN] == set(Perm)


def test_docs_teams_prints_the_roles_and_every_operations_permission_as_the_code_declares_them():
    from pathlib import Path

    from evalsite.tenancy.roles import roles_table
    from tests.access_support import api_table, page_table

    text = (Path(__file__).resolve().parents[2] / "docs" / "teams.md").read_text()
    header, *rows = roles_table()
    roles = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(row) + " |" for row in rows
    ]
    for table in (roles, api_table(), page_table()):
        assert "\n".join(table) + "\n" in text, table[0]


def test_a_method_no_page_takes_is_405_on_every_page(world):
    browser = Client()
    browser.force_login(member_of(world.tenant, "tia", role="admin"))
    for route in site_routes():
        if isinstance(route.declared, dict) and not route.is_api:
            response = browser.generic("TRACE", route.path)
            assert response.status_code == 405, route.route


def test_a_missing_or_unknown_role_holds_nothing_and_each_permission_names_its_roles():
    from evalsite.tenancy.roles import roles_allowing

    assert not any(role_allows(role, perm) for role in (None, "", "owner", "Admin") for perm in Perm)
    assert roles_allowing(Perm.JUDGE) == [Role.RATER, Role.CURATOR, Role.ADMIN]
    assert roles_allowing(Perm.EVALUATE) == [Role.EVALUATOR, Role.CURATOR, Role.ADMIN]
    assert roles_allowing(Perm.ADMINISTER) == [Role.ADMIN] and roles_allowing(Perm.VIEW) == list(Role)


def test_the_groups_rule_grants_a_role_per_tenant_and_nothing_for_any_other_group():
    from evalsite.tenancy.roles import memberships_from_groups

    groups = [
        "evalsite:acme/search:viewer", "evalsite:acme/search:curator", "evalsite:acme/rival:rater",
        "staff", "evalsite:acme:admin", "evalsite:acme/search:owner", "evalsite:/search:admin", 42,
    ]  # fmt: skip
    assert memberships_from_groups(groups, "evalsite:") == {
        ("acme", "search"): Role.CURATOR,  # the role with the most permissions of the tenant's groups
        ("acme", "rival"): Role.RATER,
    }
    assert memberships_from_groups("evalsite:acme/search:admin", "evalsite:") == {}  # not a list
    assert memberships_from_groups(["sso-acme/search:admin"], "sso-") == {("acme", "search"): Role.ADMIN}
