"""Query parameters read strictly: a request naming one its operation does not know is refused, a 400
validation-error naming it and listing the ones the operation knows (a misspelt filter must not answer as if none
were given: `golden-set?search=...` listed every entry).

What an operation knows is what the OpenAPI schema documents for it, taken from the same place: the parameters
drf-spectacular builds for the view's method (its extend_schema parameters, an OpenApiParameter or a serializer's
fields, and the paginator's `page` and `page_size` on a list), so the check and the schema cannot drift. The REST
API's base view (goldenset.api.base.TenantAPIView) checks every request in `initial()`.
"""

from __future__ import annotations

import threading

from drf_spectacular.plumbing import ComponentRegistry
from drf_spectacular.utils import OpenApiParameter
from rest_framework.settings import api_settings

from evalsite.errors import EvalsiteError

# (view class, method) -> the query parameters its operation documents; built on the first request of each.
_KNOWN: dict[tuple[type, str], frozenset[str]] = {}
_BUILDING = threading.Lock()


def refuse_unknown_query_parameters(view, request) -> None:
    """Raise validation-error when the request names a query parameter its operation does not document."""
    method = request.method.lower()
    if method not in view.http_method_names or not hasattr(view, method):
        return  # no such operation: the view answers 405
    known = known_query_parameters(type(view), request.method)
    unknown = sorted(set(request.query_params) - known)
    if not unknown:
        return
    what = "unknown query parameter" if len(unknown) == 1 else "unknown query parameters"
    takes = f"it takes {', '.join(sorted(known))}" if known else "it takes none"
    raise EvalsiteError(
        "validation-error",
        f"{', '.join(unknown)}: {what} of {request.method} {request.path}; {takes}.",
        details={"field": unknown[0], "unknown": unknown, "allowed": sorted(known)},
    )


def known_query_parameters(view_class: type, method: str) -> frozenset[str]:
    """The query parameters the schema documents for this view's method (HEAD: its GET's)."""
    method = "GET" if method.upper() == "HEAD" else method.upper()
    key = (view_class, method)
    if key not in _KNOWN:
        with _BUILDING:
            _KNOWN[key] = _documented(view_class, method)
    return _KNOWN[key]


def _documented(view_class: type, method: str) -> frozenset[str]:
    if method == "OPTIONS":  # no operation of the schema
        return frozenset()
    handler = getattr(view_class, method.lower())
    # extend_schema keeps the method's schema class on it; a method without one has the default's.
    schema = getattr(handler, "kwargs", {}).get("schema", api_settings.DEFAULT_SCHEMA_CLASS)()
    view = view_class()
    view.request, view.args, view.kwargs, view.format_kwarg = None, (), {}, None
    schema.view = view
    # What the schema generator sets before it asks an operation for its parameters; no path parameter is asked.
    schema.registry = ComponentRegistry()
    schema.path = schema.path_regex = schema.path_prefix = ""
    schema.method = method
    parameters = schema._get_parameters()  # the very list the operation's `parameters` are
    return frozenset(p["name"] for p in parameters if p["in"] == OpenApiParameter.QUERY)
