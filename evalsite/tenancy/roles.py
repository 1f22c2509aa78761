"""Roles inside a tenant and what each may do (plain Python, imports no Django).

A permission is a kind of act on a tenant's data; a role is a named set of permissions. A dashboard membership
and an API key each hold one role in their tenant. Every endpoint, page and command declares the permission it
needs (evalsite.tenancy.access checks it, in one place); docs/teams.md prints ROLE_PERMISSIONS as its table.
"""

from __future__ import annotations

from enum import StrEnum


class Perm(StrEnum):
    """What an act on a tenant's data needs."""

    # pages, GETs, exports, reports, searches
    VIEW = "view"
    # live judging of the pools a rater is given (blind to runs and ranks)
    JUDGE = "judge"
    # evaluations, answer evaluations, studies, the CI gate: writes runs, never golden sets or judgments
    EVALUATE = "evaluate"
    # golden sets, documents, imports, generation, pools and their application, labels, presets
    CURATE = "curate"
    # targets and their secrets, members, API keys, deleting collections
    ADMINISTER = "administer"


PERM_DESCRIPTIONS: dict[Perm, str] = {
    Perm.VIEW: "read everything of the tenant: pages, GETs, exports, reports, searches",
    Perm.JUDGE: "judge the pools it is given, live (blind to runs and ranks)",
    Perm.EVALUATE: "run retrieval and answer evaluations, studies and the CI gate (writes runs)",
    Perm.CURATE: "golden sets, documents, imports, generation, pools (apply, revert), labels, presets",
    Perm.ADMINISTER: "targets and their secrets, members, API keys, deleting collections",
}


class Role(StrEnum):
    VIEWER = "viewer"
    RATER = "rater"
    EVALUATOR = "evaluator"
    CURATOR = "curator"
    ADMIN = "admin"


ROLE_PERMISSIONS: dict[Role, frozenset[Perm]] = {
    Role.VIEWER: frozenset({Perm.VIEW}),
    Role.RATER: frozenset({Perm.VIEW, Perm.JUDGE}),
    Role.EVALUATOR: frozenset({Perm.VIEW, Perm.EVALUATE}),
    Role.CURATOR: frozenset({Perm.VIEW, Perm.JUDGE, Perm.EVALUATE, Perm.CURATE}),
    Role.ADMIN: frozenset(Perm),
}

ROLE_DESCRIPTIONS: dict[Role, str] = {
    Role.VIEWER: "reads everything of the tenant (a manager)",
    Role.RATER: "a viewer who judges the pools it is given",
    Role.EVALUATOR: "a viewer who runs evaluations, studies and the CI gate (a CI job's key)",
    Role.CURATOR: "rater and evaluator, and curates golden sets, imports, generation, pools, labels, presets",
    Role.ADMIN: "curator, and targets with their secrets, members, keys, deleting collections",
}


def role_allows(role: str | None, perm: Perm) -> bool:
    """Whether a role (None: no role in the tenant, an unknown name: none either) holds the permission."""
    if role is None:
        return False
    try:
        return perm in ROLE_PERMISSIONS[Role(role)]
    except ValueError:
        return False


def roles_allowing(perm: Perm) -> list[Role]:
    """The roles that hold a permission, least first."""
    return [role for role in Role if perm in ROLE_PERMISSIONS[role]]


def roles_table() -> list[list[str]]:
    """The roles table (rows: a permission; columns: the roles), as docs/teams.md prints it."""
    header = ["permission", *[role.value for role in Role]]
    rows = [
        [
            f"`{perm.value}`: {PERM_DESCRIPTIONS[perm]}",
            *["yes" if perm in ROLE_PERMISSIONS[r] else "" for r in Role],
        ]
        for perm in Perm
    ]
    return [header, *rows]


def memberships_from_groups(groups: object, prefix: str) -> dict[tuple[str, str], Role]:
    """The memberships an identity provider's groups claim grants, by the documented rule (docs/teams.md): a
    group named `<prefix><cluster>/<tenant>:<role>` ("evalsite:acme/search:curator") makes its member that
    role in that tenant; of several groups naming one tenant, the role holding the most permissions wins. Any
    other group, or a malformed one, grants nothing."""
    wanted: dict[tuple[str, str], Role] = {}
    for group in groups if isinstance(groups, list | tuple) else ():
        if not isinstance(group, str) or not group.startswith(prefix):
            continue
        place, _, role_name = group[len(prefix) :].rpartition(":")
        cluster, slash, tenant = place.partition("/")
        if not (slash and cluster and tenant) or role_name not in Role.__members__.values():
            continue
        role = Role(role_name)
        held = wanted.get((cluster, tenant))
        if held is None or len(ROLE_PERMISSIONS[role]) > len(ROLE_PERMISSIONS[held]):
            wanted[(cluster, tenant)] = role
    return wanted
