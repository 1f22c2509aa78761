"""The one check of who may do what in a tenant.

An actor is a dashboard user (its membership's role in the tenant; a superuser is an admin everywhere) or an API
key (its own role, in its own tenant only). The permissions are rules of the `rules` library, one per
evalsite.tenancy.roles.Perm, named "tenancy.<perm>"; `allowed` and `require` are the only ways the code asks.

Every endpoint, page and command declares what it needs next to it, with `needs(...)` (or `public(...)` for
what shows no tenant's data): the API's permission class (evalsite.api.permissions), the dashboard's page
decorator and the command base read that declaration and call `require`. A view without one is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import rules

from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import ApiKey, Membership, Tenant
from evalsite.tenancy.roles import Perm, Role, role_allows, roles_allowing

RULE_PREFIX = "tenancy."
# The attribute a view (a function or a class) carries its declaration in.
DECLARATION = "required_permissions"
PUBLIC_REASON = "public_reason"


# --- roles ---------------------------------------------------------------------------------------------------


def role_of(actor: Any, tenant: Tenant | int | None) -> Role | None:
    """The actor's role in the tenant, None when it has none there (another tenant's key, no membership)."""
    if tenant is None or actor is None:
        return None
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    if isinstance(actor, ApiKey):
        return Role(actor.role) if actor.tenant_id == tenant_id else None
    if not getattr(actor, "is_authenticated", False):
        return None
    if actor.is_superuser:
        return Role.ADMIN
    # One query per user and request at most: the roles of all its memberships, kept on the user object.
    roles = getattr(actor, _ROLES, None)
    if roles is None:
        roles = remember_roles(
            actor, dict(Membership.objects.filter(user=actor).values_list("tenant_id", "role"))
        )
    role = roles.get(tenant_id)
    return Role(role) if role else None


_ROLES = "_tenant_roles"


def remember_roles(user: Any, roles: dict[int, str]) -> dict[int, str]:
    """Keep a user's roles by tenant id on the user object (request.user lives for one request), read with the
    memberships by whoever lists them first (the dashboard's tenant switcher)."""
    setattr(user, _ROLES, roles)
    return roles


def _rule(perm: Perm) -> Callable[[Any, Any], bool]:
    @rules.predicate(name=f"holds_{perm.value}")
    def holds(actor: Any, tenant: Any) -> bool:
        return role_allows(role_of(actor, tenant), perm)

    return holds


for _perm in Perm:
    rules.set_perm(RULE_PREFIX + _perm.value, _rule(_perm))


def allowed(actor: Any, perm: Perm, tenant: Tenant | int | None) -> bool:
    return bool(rules.has_perm(RULE_PREFIX + perm.value, actor, tenant))


class Forbidden(EvalsiteError):
    """403 `forbidden`: the actor's role in the tenant lacks the permission (another tenant's objects stay 404:
    a refusal is only ever about the caller's own tenant)."""

    def __init__(self, perm: Perm, role: Role | None):
        holders = ", ".join(r.value for r in roles_allowing(perm))
        super().__init__(
            "forbidden",
            f"This needs the '{perm.value}' permission ({holders}); "
            + (f"your role here is {role.value}." if role else "you have no role in this tenant."),
            details={"permission": perm.value, "role": role.value if role else None},
            status=403,
        )
        self.perm = perm


def require(actor: Any, perm: Perm, tenant: Tenant | int | None) -> None:
    if not allowed(actor, perm, tenant):
        raise Forbidden(perm, role_of(actor, tenant))


# --- declarations ------------------------------------------------------------------------------------------

V = TypeVar("V")


def needs(default: Perm | None = None, **by_method: Perm) -> dict[str, Perm]:
    """A declaration: the permission each HTTP method needs, `needs(Perm.VIEW, POST=Perm.CURATE)`. A method it
    does not name needs `default`; with no default, it is refused. HEAD needs what GET needs; OPTIONS (what
    the endpoint takes, no data) needs `view`."""
    declared = {method.upper(): perm for method, perm in by_method.items()}
    if default is not None:
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            declared.setdefault(method, default)
    if "GET" in declared:
        declared.setdefault("HEAD", declared["GET"])
    declared.setdefault("OPTIONS", Perm.VIEW)
    return declared


def permission_for(view: Any, method: str) -> Perm | None:
    """What the view declares for the method; None when it declares nothing for it (refused)."""
    declared: Mapping[str, Perm] | None = getattr(view, DECLARATION, None)
    if not declared:
        return None
    return declared.get(method.upper())


def declare(declared: Mapping[str, Perm]) -> Callable[[V], V]:
    """Put a declaration on a view function (the dashboard's pages do it through their decorator)."""

    def mark(view: V) -> V:
        setattr(view, DECLARATION, dict(declared))
        return view

    return mark


def public(view: V, reason: str) -> V:
    """Mark a view that shows no tenant's data (the health check, the sign-in page, the API schema): it needs
    no permission, and says why."""
    setattr(view, PUBLIC_REASON, reason)
    return view


def declaration_of(view: Any) -> dict[str, Perm] | str | None:
    """A view's declaration: its permissions by method, the reason it is public, or None (undeclared)."""
    for candidate in (view, getattr(view, "cls", None), getattr(view, "view_class", None)):
        if candidate is None:
            continue
        if getattr(candidate, PUBLIC_REASON, None):
            return str(getattr(candidate, PUBLIC_REASON))
        if getattr(candidate, DECLARATION, None):
            return dict(getattr(candidate, DECLARATION))
    return None
