"""OpenAPI extensions: how drf-spectacular documents evalsite's own API plumbing."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension


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
        from evaluation.api.serializers import AnswerEvaluationOut, EvaluateOut
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
