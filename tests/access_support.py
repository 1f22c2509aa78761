"""The site's routes with what each declares (evalsite.tenancy.access): the permission tests and the docs' table
read them from the code, so the expected answers are never written a second time."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

from evalsite.tenancy.access import declaration_of
from evalsite.tenancy.roles import Perm

HANDLERS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Route:
    route: str  # as written in the URLconf
    path: str  # a path to request, each parameter filled with a plausible value
    callback: Any
    declared: dict[str, Perm] | str | None  # permissions by method, the reason it is public, or None

    @property
    def is_api(self) -> bool:
        return self.route.startswith("lmkit/") and hasattr(self.callback, "cls")

    @property
    def methods(self) -> list[str]:
        """The methods the route answers: an API view's handlers; a page's declared GET and POST."""
        if self.is_api:
            return [m.upper() for m in HANDLERS if hasattr(self.callback.cls, m)]
        if isinstance(self.declared, dict):
            return [m for m in ("GET", "POST") if m in self.declared]
        return []


def site_routes(patterns=None, prefix: str = "") -> list[Route]:
    """Every route of the site but the admin's (Django's own permissions: staff, model permissions, each action's
    `permissions`), in URLconf order."""
    out: list[Route] = []
    for pattern in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            if route.startswith("admin/"):
                continue
            out += site_routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            filled = re.sub(r"<int:\w+>", "1", route)
            path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", "x1", filled).lstrip("^").rstrip("$")
            out.append(Route(route, path, pattern.callback, declaration_of(pattern.callback)))
    return out


def declared_operations() -> list[tuple[Route, str, Perm]]:
    """(route, method, permission) of every tenant operation: the API's and the dashboard's."""
    return [
        (route, method, route.declared[method])
        for route in site_routes()
        if isinstance(route.declared, dict)
        for method in route.methods
    ]


def api_table() -> list[str]:
    """docs/teams.md's table of the API's operations and the permission each needs, from the declarations."""
    rows = ["| operation | permission |", "|---|---|"]
    for route, method, perm in declared_operations():
        if route.is_api:
            path = "/" + route.route.replace("<str:", "{").replace("<path:", "{").replace(">", "}")
            rows.append(f"| `{method} {path}` | `{perm.value}` |")
    return rows


def page_table() -> list[str]:
    """docs/teams.md's table of the dashboard's pages and the permission they need (a form's POST when it
    differs from its GET), from the declarations."""
    rows = ["| page | needs |", "|---|---|"]
    for route in site_routes():
        if isinstance(route.declared, dict) and not route.is_api:
            get, post = route.declared["GET"], route.declared["POST"]
            needs = f"`{get.value}`" if get == post else f"`{get.value}`, POST `{post.value}`"
            rows.append(f"| `/{route.route}` | {needs} |")
    return rows
