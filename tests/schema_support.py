"""The served OpenAPI schema as a test checks responses against it: `served_schema()` is what /api/schema/ serves,
`conforms()` asserts a response holds to its operation's documented response, `errors()` lists where a body
breaks a component, `to_json_schema()` closes OpenAPI's schemas into JSON Schema for that check."""

from __future__ import annotations

from typing import Any

from drf_spectacular.generators import SchemaGenerator
from jsonschema import Draft202012Validator


def served_schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def to_json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema, closed: `nullable: true` becomes a null alternative, and an object
    with declared properties admits no other (OpenAPI leaves undeclared properties allowed)."""
    if isinstance(node, list):
        return [to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "nullable":
            continue
        if key == "properties":  # a mapping of field names, not a schema: convert each field's schema
            out[key] = {name: to_json_schema(field) for name, field in value.items()}
        else:
            out[key] = to_json_schema(value)
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


def component(schema: dict, name: str) -> dict:
    """The named component, asserted to declare fields and require some: a free-form one lets anything through."""
    found = schema["components"]["schemas"][name]
    assert found.get("properties") and found.get("required"), f"{name} declares nothing: {found}"
    return found


def response_component(schema: dict, path: str, method: str, status: int) -> str:
    """The component the schema names for this operation's response (never a free-form object)."""
    response = schema["paths"][path][method]["responses"][str(status)]
    ref = response["content"]["application/json"]["schema"].get("$ref")
    assert ref, f"{method.upper()} {path} {status} is not documented by a component: {response}"
    name = ref.rsplit("/", 1)[1]
    component(schema, name)
    return name


def errors(schema: dict, name: str, body: Any) -> list[str]:
    validator = Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": to_json_schema(schema["components"])},
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in sorted(validator.iter_errors(body), key=lambda e: list(map(str, e.absolute_path)))
    ]


def conforms(schema: dict, response, path: str, method: str, status: int) -> dict:
    """The response's status is `status` and its body holds to that operation's documented response."""
    assert response.status_code == status, response.json()
    body = response.json()
    name = response_component(schema, path, method, status)
    assert errors(schema, name, body) == [], name
    return body
