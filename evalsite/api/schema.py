"""OpenAPI extensions: how drf-spectacular documents evalsite's own API plumbing."""

from drf_spectacular import openapi
from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from rest_framework import parsers as parsers_module
from rest_framework import permissions


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
        from evaluation.runs.presenter import AnswerEvaluationOut, EvaluateOut
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
                )
                "the field, line or record in `details`"
            if status in _HEADERS:
                documented.setdefault("headers", {}).update(_HEADERS[status])
        operation["responses"] = dict(sorted(responses.items()))
        return operation

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
