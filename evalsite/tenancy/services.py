"""Writes of tenancy: tenants made on first use, API keys created, renamed, revoked and deleted, each audited.
The secret of a key is returned once, at its creation; only its hash is stored."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from evalsite.audit.models import AuditAction, PlatformAuditObject
from evalsite.audit.services import audit_record
from evalsite.errors import EvalsiteError, NotFound
from evalsite.tenancy.access import role_of
from evalsite.tenancy.models import ApiKey, Cluster, Membership, Tenant, hash_api_key
from evalsite.tenancy.roles import ROLE_PERMISSIONS, Role


@transaction.atomic
def tenant_get_or_create(*, cluster_slug: str, tenant_slug: str) -> Tenant:
    cluster, _ = Cluster.objects.get_or_create(slug=cluster_slug)
    tenant, _ = Tenant.objects.get_or_create(cluster=cluster, slug=tenant_slug)
    return tenant


@transaction.atomic
def api_key_create(
    *,
    tenant: Tenant,
    role: Role | str,
    name: str = "",
    user: Any = None,
    expires_at: datetime | None = None,
    actor: str,
) -> tuple[ApiKey, str]:
    """A new key with its role in the tenant and, for a person's key, its person (who must hold at least what
    the key may do: a key never does more than the person behind it). The secret is returned once and only its
    hash is stored (the audit trail has neither)."""
    role = _role(role)
    problem = key_person_problem(tenant=tenant, role=role, user=user)
    if problem:
        raise EvalsiteError("validation-error", f"role: {problem}", details={"fields": {"role": [problem]}})
    secret = ApiKey.new_secret()
    key = ApiKey.objects.create(
        tenant=tenant,
        name=name,
        role=role.value,
        user=user,
        expires_at=expires_at,
        prefix=secret[: ApiKey.PREFIX_LENGTH],
        key_hash=hash_api_key(secret),
    )
    changes: dict[str, Any] = {"name": name, "role": role.value}
    if user is not None:
        changes["user"] = user.get_username()
    if expires_at is not None:
        changes["expires_at"] = expires_at.isoformat()
    _audit_key(key, AuditAction.CREATE, actor, changes)
    return key, secret


KEY_MAX_DAYS = 3650


def key_expiry(days: int | None, *, field: str = "expires") -> datetime | None:
    """When a key made now for `days` days expires (None: never); a number outside 1-3650 is refused."""
    if days is None:
        return None
    if not 1 <= days <= KEY_MAX_DAYS:
        raise EvalsiteError(
            "validation-error",
            f"{field}: {days} is not a number of days from 1 to {KEY_MAX_DAYS}.",
            details={"fields": {field: [f"1 to {KEY_MAX_DAYS}"]}},
        )
    return timezone.now() + timedelta(days=days)


def key_person_problem(*, tenant: Tenant, role: Role, user: Any) -> str | None:
    """Why a key of this role cannot be this person's (None when it can): a key never does more than the person
    behind it, who must be a member of the key's tenant."""
    if user is None:
        return None
    held = role_of(user, tenant)
    if held is None:
        return f"{user.get_username()} is no member of {tenant}."
    if not ROLE_PERMISSIONS[role] <= ROLE_PERMISSIONS[held]:
        return f"a key may not do more than its person; {user.get_username()} is {held.value} in {tenant}."
    return None


def _role(role: Role | str) -> Role:
    try:
        return Role(role)
    except ValueError:
        choices = ", ".join(r.value for r in Role)
        raise EvalsiteError(
            "validation-error",
            f"role: {str(role)[:40]!r} is not a role ({choices}).",
            details={"fields": {"role": [f"one of {choices}"]}},
        ) from None


@transaction.atomic
def api_key_rename(*, key: ApiKey, name: str, actor: str) -> None:
    before = ApiKey.objects.filter(pk=key.pk).values_list("name", flat=True).first()
    if before is None:
        raise NotFound("API key", key.prefix)
    key.name = name
    ApiKey.objects.filter(pk=key.pk).update(name=name)
    if before != name:
        _audit_key(key, AuditAction.UPDATE, actor, {"name": [before, name]})


@transaction.atomic
def api_key_revoke(*, key: ApiKey, actor: str) -> bool:
    """Revoke a key; False (and no event) when it was revoked already."""
    now = timezone.now()
    if not ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=now):
        return False
    key.revoked_at = now
    _audit_key(key, AuditAction.REVOKE, actor, {"name": key.name})
    return True


@transaction.atomic
def api_keys_delete(*, keys: Sequence[ApiKey], actor: str) -> int:
    keys = list(keys)
    for key in keys:
        _audit_key(key, AuditAction.DELETE, actor, {"name": key.name, "revoked": key.revoked_at is not None})
    ApiKey.objects.filter(pk__in=[k.pk for k in keys]).delete()
    return len(keys)


def _audit_key(key: ApiKey, action: str, actor: str, changes: dict[str, Any]) -> None:
    audit_record(
        tenant=key.tenant_id,
        action=action,
        object_type=PlatformAuditObject.API_KEY,
        object_id=key.prefix,
        actor=actor,
        changes=changes,
    )


# --- members -------------------------------------------------------------------------------------------------


@transaction.atomic
def membership_add(*, tenant: Tenant, user: Any, role: Role | str, actor: str) -> Membership:
    """A user made a member of the tenant with a role (a member already: 409 via the role change instead)."""
    role = _role(role)
    if Membership.objects.filter(tenant=tenant, user=user).exists():
        raise EvalsiteError(
            "validation-error",
            f"username: {user.get_username()} is a member of {tenant} already; change their role instead.",
            details={"fields": {"username": ["a member already"]}},
        )
    membership = Membership.objects.create(tenant=tenant, user=user, role=role.value)
    _audit_member(membership, AuditAction.CREATE, actor, {"role": role.value})
    return membership


@transaction.atomic
def membership_set_role(*, membership: Membership, role: Role | str, actor: str) -> None:
    role = _role(role)
    locked, admins = _locked(membership)
    if locked.role == role.value:
        return
    if locked.role == Role.ADMIN.value:
        _keep_an_admin(locked, admins, "given another role")
    Membership.objects.filter(pk=locked.pk).update(role=role.value)
    _audit_member(locked, AuditAction.UPDATE, actor, {"role": [locked.role, role.value]})
    membership.role = role.value


@transaction.atomic
def membership_remove(*, membership: Membership, actor: str) -> None:
    locked, admins = _locked(membership)
    if locked.role == Role.ADMIN.value:
        _keep_an_admin(locked, admins, "removed")
    _audit_member(locked, AuditAction.DELETE, actor, {"role": locked.role})
    locked.delete()


def _locked(membership: Membership) -> tuple[Membership, int]:
    """The membership as stored, and how many admins its tenant has, the tenant's memberships locked (on
    PostgreSQL; SQLite's writes take turns) so two admins demoting each other at once cannot both win."""
    rows = list(Membership.objects.select_for_update().filter(tenant_id=membership.tenant_id).order_by("pk"))
    found = next((m for m in rows if m.pk == membership.pk), None)
    if found is None:
        raise NotFound("Member", str(membership.user_id))
    return found, sum(m.role == Role.ADMIN.value for m in rows)


def _keep_an_admin(membership: Membership, admins: int, change: str) -> None:
    if admins <= 1:
        raise EvalsiteError(
            "last-admin",
            f"{membership.user.get_username()} is the last admin of {membership.tenant}: they cannot be {change}. "
            "Make another member an admin first.",
            details={"username": membership.user.get_username()},
            status=409,
        )


def _audit_member(membership: Membership, action: str, actor: str, changes: dict[str, Any]) -> None:
    audit_record(
        tenant=membership.tenant_id,
        action=action,
        object_type=PlatformAuditObject.MEMBERSHIP,
        object_id=membership.user.get_username(),
        actor=actor,
        changes=changes,
    )


def sessions_end(*, user: Any) -> int:
    """Sign a user out everywhere: every session of theirs ends (the database's sessions, read one by one: a
    session names its user only inside its signed data). The number ended."""
    from django.contrib.sessions.models import Session  # late: the sessions app's models, only here

    ended = [
        session.pk
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator(chunk_size=500)
        if session.get_decoded().get("_auth_user_id") == str(user.pk)
    ]
    Session.objects.filter(pk__in=ended).delete()
    return len(ended)


@transaction.atomic
def memberships_sync(*, user: Any, wanted: dict[tuple[str, str], Role], actor: str) -> None:
    """A user's memberships as the identity provider's groups grant them at sign-in: each granted one made or
    given its role; one the groups granted before and no longer do removed. Memberships added by hand are the
    admins' and stay as they are. A group naming a tenant that does not exist grants nothing."""
    tenants = {
        (t.cluster.slug, t.slug): t
        for t in Tenant.objects.select_related("cluster").filter(
            cluster__slug__in={c for c, _ in wanted}, slug__in={t for _, t in wanted}
        )
    }
    held = {m.tenant_id: m for m in Membership.objects.select_for_update().filter(user=user)}
    granted: set[int] = set()
    for place, role in wanted.items():
        tenant = tenants.get(place)
        if tenant is None:
            continue
        granted.add(tenant.pk)
        membership = held.get(tenant.pk)
        if membership is None:
            membership = Membership.objects.create(
                tenant=tenant, user=user, role=role.value, from_sign_in=True
            )
            _audit_member(membership, AuditAction.CREATE, actor, {"role": role.value, "from": "sign-in"})
        elif membership.from_sign_in and membership.role != role.value:
            Membership.objects.filter(pk=membership.pk).update(role=role.value)
            _audit_member(membership, AuditAction.UPDATE, actor, {"role": [membership.role, role.value]})
    for tenant_id, membership in held.items():
        if membership.from_sign_in and tenant_id not in granted:
            _audit_member(membership, AuditAction.DELETE, actor, {"role": membership.role, "from": "sign-in"})
            membership.delete()
