"""The audit trail: who wrote what, when. Every service that writes records an event here, inside its own
transaction, so a write that fails leaves no event behind and a write that commits always has one.

Actors are named one way everywhere: "user:<username>" from the dashboard and the admin, "api-key:<prefix>"
from the API (the prefix the admin shows; a key's name may be blank), "user:<username> api-key:<prefix>" from a
key with a person (docs/teams.md), "command:<name>" from management
commands, and "job" for a job whose input recorded nobody.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from django.db import connection

from evalsite.audit.models import AuditEvent, audit_object_registered
from evalsite.tenancy.models import ApiKey, Tenant


class AuditedCollection(Protocol):
    """The collection a write belongs to (a goldenset Collection), as the platform sees it: an event keeps its
    slug and uid, a job its primary key."""

    pk: Any
    slug: str
    uid: uuid.UUID


# --- actors ------------------------------------------------------------------------------------------------


def actor_user(user: Any) -> str:
    return f"user:{user.get_username()}"


def actor_api_key(key: ApiKey) -> str:
    """A key's writes name the key, and first its person when it has one: "user:rita api-key:esk_AbCdEfGh"."""
    if key.user_id is not None and key.user is not None:
        return f"user:{key.user.get_username()} api-key:{key.prefix}"
    return f"api-key:{key.prefix}"


def actor_command(name: str) -> str:
    return f"command:{name}"


# --- events ------------------------------------------------------------------------------------------------


def audit_event(
    *,
    tenant: Tenant | int,
    action: str,
    object_type: str,
    object_id: Any,
    actor: str,
    changes: dict[str, Any] | None = None,
    collection: AuditedCollection | None = None,
) -> AuditEvent:
    """An unsaved event (for bulk_create). Its object_type must be registered by the app that owns it."""
    if not audit_object_registered(object_type):
        raise ValueError(f"audit object {object_type!r} is not registered (evalsite.audit.models)")
    return AuditEvent(
        tenant_id=tenant if isinstance(tenant, int) else tenant.pk,
        collection_slug=collection.slug if collection is not None else "",
        collection_uid=collection.uid if collection is not None else None,
        object_type=object_type,
        object_id=str(object_id),
        action=action,
        actor=actor,
        changes=changes or {},
    )


def audit_record(**kwargs: Any) -> AuditEvent:
    """Save one event; the caller's write and this event commit or roll back together."""
    require_transaction()
    event = audit_event(**kwargs)
    event.save()
    return event


def require_transaction() -> None:
    # An event written outside the write's transaction could outlive a failed write.
    if not connection.in_atomic_block:
        raise RuntimeError("Audit events are written inside the transaction of the write they record.")


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """Field -> [before, after] of the fields that changed."""
    return {k: [before.get(k), v] for k, v in after.items() if before.get(k) != v}
