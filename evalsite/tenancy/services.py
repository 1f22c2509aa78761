"""Writes of tenancy: tenants made on first use, API keys created, renamed, revoked and deleted, each audited.
The secret of a key is returned once, at its creation; only its hash is stored."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from evalsite.audit.models import AuditAction, PlatformAuditObject
from evalsite.audit.services import audit_record
from evalsite.errors import EvalsiteError, NotFound
from evalsite.tenancy.access import role_of
from evalsite.tenancy.models import ApiKey, Cluster, Tenant, hash_api_key
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
