"""Unknown query parameters are refused (issue 38): `golden-set?search=...` listed every entry, as if no filter
were given. Every operation of the REST API answers a query parameter it does not document with a 400
validation-error naming it and listing the ones it knows (evalsite.api.query): the routes are walked from the URL
configuration itself, so a new endpoint is held to it as soon as it is routed, and what each operation knows is
what the schema documents for it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from evalsite.api.query import known_query_parameters
from goldenset.api.base import TenantAPIView
from tests.schema_support import served_schema
from tests.support import handbook_entries

API = "lmkit/v1/"


def routes(patterns=None, prefix: str = "") -> Iterator[tuple[str, type]]:
    """(route, view class) of every URL pattern under /lmkit/v1/, as the URL configuration routes them."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern) and route.startswith(API):
            yield route, pattern.callback.cls  # type: ignore[attr-defined]


def methods(view_class: type) -> list[str]:
    """Every method the view answers, HEAD (its GET) and OPTIONS included."""
    answered = [m for m in view_class.http_method_names if hasattr(view_class, m)]
    return [m.upper() for m in answered] + (["HEAD"] if "get" in answered else [])


def concrete(route: str) -> str:
    """The route with every path id filled in (the check comes before any lookup)."""
    return "/" + re.sub(r"<(?:\w+:)?\w+>", "some-id", route)


def test_every_operation_refuses_an_unknown_query_parameter_naming_it_and_the_known_ones(world):
    found = list(routes())
    assert len(found) >= 30, found
    problems = []
    for route, view_class in found:
        assert issubclass(view_class, TenantAPIView), f"{route}: {view_class} is no TenantAPIView"
        for method in methods(view_class):
            known = sorted(known_query_parameters(view_class, method))
            target = concrete(route)
            response = world.client.generic(method, f"{target}?bogus=1&page_size=2")
            where = f"{method} {target}"
            if response.status_code != 400:
                problems.append(f"{where}?bogus=1: {response.status_code}")
                continue
            if method == "HEAD":  # no body to read
                continue
            error = response.json()["error"]
            unknown = ["bogus"] if "page_size" in known else ["bogus", "page_size"]
            expected = {"field": "bogus", "unknown": unknown, "allowed": known}
            if error["code"] != "validation-error" or error["details"] != expected:
                problems.append(f"{where}: {error}, expected {expected}")
            elif not error["message"].startswith(f"{', '.join(unknown)}: unknown query parameter"):
                problems.append(f"{where}: {error['message']}")
            elif known and f"it takes {', '.join(known)}." not in error["message"]:
                problems.append(f"{where}: {error['message']} does not list {known}")
            # Every parameter it knows passes the check (the view may still refuse a value: not as unknown).
            if known:
                sent = world.client.generic(method, target + "?" + "&".join(f"{name}=1" for name in known))
                if "unknown" in sent.json().get("error", {}).get("details", {}):
                    problems.append(f"{where} refused what it documents: {sent.json()}")
    assert not problems, "\n".join(problems)


def test_what_an_operation_knows_is_what_the_schema_documents_for_it():
    schema = served_schema()
    documented = {}
    for path, operations in schema["paths"].items():
        view_class = resolve(re.sub(r"\{\w+\}", "some-id", path)).func.cls  # type: ignore[attr-defined]
        for method, operation in operations.items():
            names = sorted(p["name"] for p in operation.get("parameters", []) if p["in"] == "query")
            assert sorted(known_query_parameters(view_class, method)) == names, (method, path)
            documented[view_class, method.upper()] = names
    # ... and every method of every route is an operation of the schema (HEAD and OPTIONS aside).
    routed = {(c, m) for _, c in routes() for m in methods(c) if m not in ("HEAD", "OPTIONS")}
    assert routed == set(documented), routed ^ set(documented)


@pytest.mark.parametrize(
    "query", ["search=refund", "serach=refund&page=1", "q=refund&collection_id=handbook"]
)
def test_a_golden_set_filter_it_does_not_know_is_refused_not_a_list_of_every_entry(world, query):
    handbook_entries(world.collection)
    response = world.client.get(f"/lmkit/v1/search/golden-set?{query}")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    name = query.split("=")[0]
    known = [
        "answerable", "cluster_id", "collection_id", "origin", "page", "page_size", "reviewed", "tag",
        "tenant_id", "text",
    ]  # fmt: skip
    assert error == {
        "code": "validation-error",
        "message": f"{name}: unknown query parameter of GET /lmkit/v1/search/golden-set; it takes "
        f"{', '.join(known)}.",
        "details": {"field": name, "unknown": [name], "allowed": known},
    }


def test_the_parameters_a_list_documents_filter_and_page_it(world):
    handbook_entries(world.collection)
    listed = world.client.get("/lmkit/v1/search/golden-set?text=refund&page=1&page_size=2")
    assert listed.status_code == 200, listed.json()
    assert [e["key"] for e in listed.json()["results"]] == ["q1"]
    paged = world.client.get("/lmkit/v1/search/golden-set?collection_id=handbook&page=2&page_size=2")
    assert paged.status_code == 200 and paged.json()["count"] == 3
    assert [e["key"] for e in paged.json()["results"]] == ["q3"]
    exported = world.client.get(
        "/lmkit/v1/search/golden-set/export?collection_id=handbook&format=trec&part=qrels"
    )
    assert exported.status_code == 200 and exported.content.decode().startswith("q1 0 refunds")
