from __future__ import annotations

import json

from django.conf import settings
from rest_framework import parsers

from evalsite.bounded_json import (
    NUL_REFUSED,
    JsonValueError,
    find_lone_surrogate,
    find_nul,
    json_loads,
    nul_field,
)
from evalsite.errors import EvalsiteError


class JSONParser(parsers.JSONParser):
    """JSON with a bounded read and errors that name the line and column."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.EVALSITE_MAX_REQUEST_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise EvalsiteError(
                "payload-too-large",
                f"Request body exceeds the limit of {limit} bytes.",
                details={"limit_bytes": limit},
                status=413,
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EvalsiteError("invalid-json", f"Request body is not UTF-8 (byte {exc.start}).") from None
        if not text.strip():
            raise EvalsiteError("invalid-json", "Request body is empty; a JSON object was expected.")
        if (nul := find_nul(text)) is not None:  # PostgreSQL stores no NUL, in text or JSON columns
            raise EvalsiteError(
                "invalid-json",
                f"NUL character at line {nul[0]}, column {nul[1]}: not allowed.",
                details={"line": nul[0], "column": nul[1]},
            )
        if (surrogate := find_lone_surrogate(text)) is not None:  # not UTF-8: stored, then unreadable
            raise EvalsiteError(
                "invalid-json",
                f"Lone surrogate at line {surrogate[0]}, column {surrogate[1]}: not valid Unicode.",
                details={"line": surrogate[0], "column": surrogate[1]},
            )
        try:
            return json_loads(text)
        except json.JSONDecodeError as exc:
            raise EvalsiteError(
                "invalid-json",
                f"Malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.",
                details={"line": exc.lineno, "column": exc.colno},
            ) from None
        except JsonValueError as exc:  # NaN, Infinity, 1e400: no database column or JSON reader takes them
            raise EvalsiteError(
                "invalid-json",
                f"Malformed JSON at line {exc.line}, column {exc.column}: {exc.message}.",
                details={"line": exc.line, "column": exc.column},
            ) from None


def _refuse_nul(data) -> None:
    """A form field whose name or value holds NUL: validation-error naming it (evalsite.middleware's rule, for
    the API's forms, which DRF reads itself). An uploaded file's text is its reader's to check."""
    name = nul_field((k, v) for k, values in data.lists() for v in values)
    if name is not None:
        raise EvalsiteError(
            "validation-error", f"{name}: {NUL_REFUSED}", details={"fields": {name: [NUL_REFUSED]}}
        )


class MultiPartParser(parsers.MultiPartParser):
    """Multipart forms (file uploads), their fields held to the rule on NUL."""

    def parse(self, stream, media_type=None, parser_context=None):
        parsed = super().parse(stream, media_type, parser_context)
        _refuse_nul(parsed.data)
        return parsed


class FormParser(parsers.FormParser):
    """URL-encoded forms, their fields held to the rule on NUL."""

    def parse(self, stream, media_type=None, parser_context=None):
        parsed = super().parse(stream, media_type, parser_context)
        _refuse_nul(parsed)
        return parsed
