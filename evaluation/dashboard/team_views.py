"""The tenant's team, for its admins: members with their roles (add, change, remove; the last admin stays) and API
keys (create with a role, a person and an expiry, the secret shown once; revoke). The same services as the
admin and `createapikey` (evalsite.tenancy.services), each write audited; docs/teams.md."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError, NotFound
from evalsite.tenancy.models import ApiKey, Membership, Tenant
from evalsite.tenancy.roles import ROLE_DESCRIPTIONS, Perm, Role
from evalsite.tenancy.services import (
    api_key_create,
    api_key_revoke,
    key_expiry,
    membership_add,
    membership_remove,
    membership_set_role,
    sessions_end,
)
from evaluation.dashboard.common_views import tenant_page


def _team(request: HttpRequest, tenant: Tenant, status: int = 200, **extra: Any) -> HttpResponse:
    members = Membership.objects.filter(tenant=tenant).select_related("user").order_by("user__username")
    keys = ApiKey.objects.filter(tenant=tenant).select_related("user").order_by("-created_at")
    return render(
        request,
        "dashboard/team.html",
        {
            "tenant": tenant,
            "members": members,
            "keys": keys,
            "roles": [(role.value, ROLE_DESCRIPTIONS[role]) for role in Role],
            "nav_section": "team",
            **extra,
        },
        status=status,
    )


@require_GET
@tenant_page(Perm.ADMINISTER)
def team(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    return _team(request, tenant)


def _member(tenant: Tenant, username: str) -> Membership:
    membership = (
        Membership.objects.filter(tenant=tenant, user__username=username).select_related("user").first()
    )
    if membership is None:
        raise NotFound("Member", username)
    return membership


@require_POST
@tenant_page(Perm.ADMINISTER)
def member_add(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    username = request.POST.get("username", "").strip()[:150]
    user = get_user_model().objects.filter(username=username).first()
    try:
        if user is None:
            raise EvalsiteError("validation-error", f"username: no user is called {username!r}.")
        membership_add(
            tenant=tenant, user=user, role=request.POST.get("role", ""), actor=actor_user(request.user)
        )
    except EvalsiteError as exc:
        return _team(request, tenant, status=400, member_error=exc.message, username=username)
    messages.success(request, f"{username} is a member now.")
    return redirect("dashboard:team")


@require_POST
@tenant_page(Perm.ADMINISTER)
def member_role(request: HttpRequest, tenant: Tenant, username: str) -> HttpResponse:
    membership = _member(tenant, username)
    try:
        membership_set_role(
            membership=membership, role=request.POST.get("role", ""), actor=actor_user(request.user)
        )
    except EvalsiteError as exc:
        return _team(request, tenant, status=exc.status_code, member_error=exc.message)
    messages.success(request, f"{username} is {membership.role} now.")
    return redirect("dashboard:team")


@require_POST
@tenant_page(Perm.ADMINISTER)
def member_remove(request: HttpRequest, tenant: Tenant, username: str) -> HttpResponse:
    try:
        membership_remove(membership=_member(tenant, username), actor=actor_user(request.user))
    except EvalsiteError as exc:
        if isinstance(exc, NotFound):
            raise
        return _team(request, tenant, status=exc.status_code, member_error=exc.message)
    messages.success(request, f"{username} is no longer a member.")
    return redirect("dashboard:team")


@require_POST
@tenant_page(Perm.ADMINISTER)
def key_create(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """A new key; its secret is in this answer only (never stored, never redirected with)."""
    days_text = request.POST.get("expires", "").strip()
    person = request.POST.get("user", "").strip()
    try:
        expires_at = key_expiry(int(days_text) if days_text else None)
    except ValueError:
        return _team(
            request, tenant, status=400, key_error=f"expires: a whole number of days, not {days_text[:20]!r}."
        )
    except EvalsiteError as exc:
        return _team(request, tenant, status=400, key_error=exc.message)
    user = _member(tenant, person).user if person else None
    try:
        key, secret = api_key_create(
            tenant=tenant,
            role=request.POST.get("role", ""),
            name=request.POST.get("name", "").strip()[:200],
            user=user,
            expires_at=expires_at,
            actor=actor_user(request.user),
        )
    except EvalsiteError as exc:
        return _team(request, tenant, status=400, key_error=exc.message)
    return _team(request, tenant, new_key=key, new_secret=secret)


@require_POST
@tenant_page(Perm.ADMINISTER)
def key_revoke(request: HttpRequest, tenant: Tenant, prefix: str) -> HttpResponse:
    key = ApiKey.objects.filter(tenant=tenant, prefix=prefix).first()
    if key is None:
        raise NotFound("API key", prefix)
    if api_key_revoke(key=key, actor=actor_user(request.user)):
        messages.success(request, f"Revoked {prefix}…: it is refused from now on.")
    return redirect("dashboard:team")


@require_POST
@tenant_page(Perm.VIEW)
def sign_out_everywhere(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    """The signed-in user's every session ends, this one included: back to the sign-in page."""
    sessions_end(user=request.user)
    return redirect("login")
