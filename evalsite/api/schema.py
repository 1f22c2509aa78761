"""OpenAPI extensions: how drf-spectacular documents evalsite's own API plumbing."""

import re

from drf_spectacular import openapi
from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.plumbing import is_list_serializer, is_serializer
from drf_spectacular.utils import OpenApiRequest
from rest_framework import fields, permissions, serializers
from rest_framework import parsers as parsers_module

from evalsite.tenancy.access import permission_for
from evalsite.tenancy.roles import Role, roles_allowing


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "evalsite.api.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from `manage.py createapikey`.",
        }


class JobResultByKind(OpenApiSerializerExtension):
    """A job's `result`, typed by kind. goldenset's JobOut cannot name evaluation's results (nothing in goldenset
    imports evaluation), so the wiring documents them here."""

    target_class = "goldenset.api.serializers.JobOut"

    def map_serializer(self, auto_schema, direction):
        # Late, here and below: the settings name this module, so loading it must load no app module; the
        # apps' serializers are named when the schema is built.
        from evaluation.reports.presenter import AnswerEvaluationOut, EvaluateOut
        from goldenset.api.serializers import IngestResultOut

        schema = super().map_serializer(auto_schema, direction)
        typed = [
            auto_schema.resolve_serializer(shape, direction).ref
            for shape in (EvaluateOut, AnswerEvaluationOut, IngestResultOut)
        ]
        schema["properties"]["result"] = {
            "anyOf": [*typed, {"type": "object", "additionalProperties": {}}],
            "nullable": True,
            "description": "null until the job completes. By kind: Evaluate: EvaluateOut; EvaluateAnswers: "
            "AnswerEvaluationOut; Ingest: IngestResultOut; Generate: what generation accepted and rejected.",
        }
        return schema


# Methods whose body the API reads: a body too large (413) or of a type the endpoint does not read (415).
_BODY_METHODS = ("POST", "PUT", "PATCH")

_HEADERS = {
    429: {
        "Retry-After": {
            "schema": {"type": "integer"},
            "description": "Seconds until the key's budget of calls is renewed (the next minute).",
        }
    },
    401: {
        "WWW-Authenticate": {
            "schema": {"type": "string"},
            "description": 'The scheme the API expects: `Bearer realm="lmkit"`.',
        }
    },
    503: {
        "Retry-After": {
            "schema": {"type": "integer"},
            "description": "Seconds to wait before trying again: sent with database-unavailable, "
            "index-building and broker-unavailable.",
        }
    },
}


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's schema, with every error answer an operation can give documented once for all: each
    status with the envelope (ErrorOut) and, in its description, the codes it carries.

    What every operation shares is decided here from the view: 401 where a key is required, 400 and 404 on
    every tenant-scoped view (its path and query values are checked, its cluster_id / tenant_id and path ids
    looked up), 413 and 415 where a body is read, 503 database-unavailable everywhere. What only one operation
    can answer (a 409 conflict, a 503 of a dependency it calls) it declares itself with
    goldenset.api.serializers.error_responses(*codes); both are merged here. And what the HTTP server refuses
    before any view, with the same envelope (evalsite.gunicorn_worker): 400 bad-request (not HTTP), 414 and
    431 (a request line or header fields past its limits)."""

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        from goldenset.api.serializers import ErrorOut  # late: see map_serializer

        envelope = self.resolve_serializer(ErrorOut, "response").ref
        responses = operation.setdefault("responses", {})
        for status, codes in self.shared_errors().items():
            documented = responses.setdefault(str(status), {"description": ""})
            content = documented.setdefault("content", {})
            content.setdefault("application/json", {"schema": envelope})
            documented["description"] = _merge(documented.get("description", ""), codes)
            if status == 400:
                documented["description"] += (
                    "\n- and this operation's own 400 codes (docs/api.md, Errors), each naming "
                    "the field, line or record in `details`"
                )
            if status in _HEADERS:
                documented.setdefault("headers", {}).update(_HEADERS[status])
        operation["responses"] = dict(sorted(responses.items()))
        perm = permission_for(self.view, self.method)
        if perm is not None:
            # The permission the operation declares, said where a reader of the schema looks (docs/teams.md).
            roles = ", ".join(role.value for role in roles_allowing(perm))
            operation["description"] = (
                operation.get("description", "")
                + f"\n\nNeeds the `{perm.value}` permission (roles: {roles})."
            ).lstrip()
        return operation

    def _get_request_body(self, direction="request"):
        """A body the operation reads in several media types gets a component for each, holding what that media
        type can carry (media_variant): a client generator builds a model per component and picks the media type
        by the model it is given, so with one shared component it could not tell them apart (openapi-python-client
        sent every body as multipart). Every such operation, declared (`request={media type: serializer}`) or
        implied by several parsers."""
        body = super()._get_request_body(direction)
        if body is None or len(body["content"]) < 2:
            return body
        request = self.get_request_serializer()
        for media_type, media in body["content"].items():
            serializer = request.get(media_type) if isinstance(request, dict) else request
            if isinstance(serializer, OpenApiRequest):
                serializer = serializer.request
            if is_serializer(serializer) and not is_list_serializer(serializer):
                variant = media_variant(serializer, media_type)
                media["schema"] = self._get_request_for_media_type(variant, direction)[0]
        # Not marked required, though a request without a body is refused (400 validation-error naming the
        # missing field): openapi-python-client 0.29 writes a module that does not import for a required body
        # of several media types (it names `Unset` without importing it; its issue 1451).
        body.pop("required", None)
        return body

    def shared_errors(self) -> dict[int, list[str]]:
        """The error codes (by status) this operation answers as every operation of its kind does."""
        from goldenset.api.base import TenantAPIView  # late: see map_serializer

        errors: dict[int, list[str]] = {}
        if isinstance(self.view, TenantAPIView):
            # NUL in a path id or query value, a query or body field refused; a disallowed Host header.
            errors[400] = ["validation-error", "bad-request"]
            # No such object for this tenant; cluster_id / tenant_id naming another; a page past the last.
            errors[404] = ["not-found"]
        if self.method in _BODY_METHODS:
            parsers = self.view.get_parsers()
            if any(isinstance(p, parsers_module.JSONParser) for p in parsers):
                errors.setdefault(400, []).append("invalid-json")
            if any(
                isinstance(p, parsers_module.FormParser | parsers_module.MultiPartParser) for p in parsers
            ):
                errors.setdefault(400, []).append("invalid-body")
            errors[413] = ["payload-too-large"]
            errors[415] = ["unsupported-media-type"]
        if self.view.get_authenticators() and not all(
            isinstance(p, permissions.AllowAny) for p in self.view.get_permissions()
        ):
            errors[401] = ["unauthenticated"]
        perm = permission_for(self.view, self.method)
        if perm is not None:
            # every key's calls are counted (evalsite.api.throttles)
            errors[429] = ["throttled"]
        if perm is not None and roles_allowing(perm) != list(Role):
            # a role without the declared permission is refused (every role may view: a read is never a 403)
            errors[403] = ["forbidden"]
        # Every request may need the database (the key is looked up in it, to begin with).
        errors[503] = ["database-unavailable"]
        # Refused by the HTTP server before any view (evalsite.gunicorn_worker), whatever the operation.
        if "bad-request" not in errors.get(400, []):
            errors.setdefault(400, []).append("bad-request")
        errors[414] = ["uri-too-long"]
        errors[431] = ["headers-too-large"]
        return dict(sorted(errors.items()))


def _merge(description: str, codes: list[str]) -> str:
    """An error response's description with a line for each shared code it does not name yet."""
    from goldenset.api.serializers import describe_errors  # late: see map_serializer

    missing = [code for code in codes if f"`{code}`" not in description]
    lines = [line for line in (description, describe_errors(missing)) if line]
    return "\n".join(lines)


# What each media type a body can come in is called in its component's name (JudgmentsInMultipartRequest).
_MEDIA_NAMES = {
    "application/json": "Json",
    "multipart/form-data": "Multipart",
    "application/x-www-form-urlencoded": "Form",
}
_VARIANTS: dict[tuple[type, str], type] = {}


def media_variant(serializer, media_type: str):
    """The request serializer as one media type carries it, a subclass named after both: JSON carries no file; a
    form (multipart or urlencoded) no list or object, as the views read a form's fields one value each; an
    urlencoded form no file either."""
    cls: type[serializers.Serializer] = serializer if isinstance(serializer, type) else type(serializer)
    media_type = media_type.split(";")[0].strip()
    name = _MEDIA_NAMES.get(media_type) or re.sub(r"[^A-Za-z0-9]", "", media_type.title())
    if (cls, name) not in _VARIANTS:
        dropped = {
            field_name: None  # None in a subclass removes a serializer's declared field
            for field_name, field in cls._declared_fields.items()
            if not _carries(field, media_type)
        }
        attributes = {"__module__": cls.__module__, "__doc__": cls.__doc__, **dropped}
        # setdefault: two schemas built at once keep one class (one identity) for the component.
        _VARIANTS.setdefault((cls, name), type(f"{cls.__name__}{name}", (cls,), attributes))
    variant = _VARIANTS[cls, name]
    if isinstance(serializer, type):
        return variant
    return variant(*serializer._args, **serializer._kwargs)  # as it was made (partial=True, say)


def _carries(field: fields.Field, media_type: str) -> bool:
    files = isinstance(field, fields.FileField) or (
        isinstance(field, fields.ListField) and isinstance(field.child, fields.FileField)
    )
    structured = not files and isinstance(
        field, fields.ListField | fields.DictField | fields.HStoreField | serializers.BaseSerializer
    )
    if media_type == "application/json":
        return not files
    if media_type == "multipart/form-data":
        return not structured
    if media_type == "application/x-www-form-urlencoded":
        return not (files or structured)
    return True


def drop_unreferenced_components(result, generator, request, public):
    """A postprocessing hook: the schemas no operation reaches are dropped (the one component a body with several
    media types was documented with before AutoSchema gave each media type its own)."""
    schemas = result.get("components", {}).get("schemas", {})
    reached: set[str] = set()
    pending = _schema_refs(result.get("paths", {}))
    while pending:
        name = pending.pop()
        if name not in reached and name in schemas:
            reached.add(name)
            pending |= _schema_refs(schemas[name])
    for name in [name for name in schemas if name not in reached]:
        del schemas[name]
    return result


def _schema_refs(node) -> set[str]:
    """The schema components a part of the schema refers to, by name."""
    if isinstance(node, list):
        return set().union(*map(_schema_refs, node))
    if not isinstance(node, dict):
        return set()
    found = set().union(*map(_schema_refs, node.values()))
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_SCHEMAS):
        found.add(ref.removeprefix(_SCHEMAS))
    return found


_SCHEMAS = "#/components/schemas/"
