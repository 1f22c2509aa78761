"""The one error envelope: {"error": {"code", "message", "details"}} with stable codes.

Views and services raise evalsite.errors.EvalsiteError (or DRF's own exceptions); this handler turns every one of them, and every unexpected
exception, into the envelope, so a client never sees an HTML page or a traceback. A database that cannot be reached
is a 503 database-unavailable (evalsite.unavailable); exceptions outside DRF's views (middleware) reach
evalsite.views.server_error, which answers the same.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from evalsite import unavailable
from evalsite.errors import EvalsiteError, envelope

logger = logging.getLogger(__name__)


_CODES = {
    # evalsite's JSON parser raises its own invalid-json; DRF's ParseError comes from the form parsers.
    exceptions.ParseError: "invalid-body",
    exceptions.AuthenticationFailed: "unauthenticated",
    exceptions.NotAuthenticated: "unauthenticated",
    exceptions.PermissionDenied: "permission-denied",
    exceptions.NotFound: "not-found",
    exceptions.MethodNotAllowed: "method-not-allowed",
    exceptions.NotAcceptable: "not-acceptable",
    exceptions.UnsupportedMediaType: "unsupported-media-type",
    exceptions.Throttled: "throttled",
    exceptions.ValidationError: "validation-error",
}


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as {"entries[2].question": ["This field may not be blank."]}."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors":
                name = prefix or "non_field_errors"
            elif isinstance(key, int):  # a list's errors by index (ListField; ListSerializer in DRF 3.15+)
                name = f"{prefix}[{key}]"
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
            for k, v in _flatten(value, name).items():
                out.setdefault(k, []).extend(v)
    elif isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            out[prefix or "non_field_errors"] = [str(item) for item in detail]
        else:
            for index, value in enumerate(detail):
                if value in ({}, []):
                    continue
                name = f"{prefix}[{index}]"
                for k, v in _flatten(value, name).items():
                    out.setdefault(k, []).extend(v)
    else:
        out[prefix or "non_field_errors"] = [str(detail)]
    return out


def exception_handler(exc: Exception, context: dict) -> Response:
    headers: dict[str, str] = {}
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()

    if isinstance(exc, EvalsiteError):
        if exc.retry_after is not None:
            headers["Retry-After"] = str(exc.retry_after)
        return Response({"error": exc.as_dict()}, status=exc.status_code, headers=headers)

    # Django's request limits (DATA_UPLOAD_MAX_NUMBER_FIELDS / _FILES / _MEMORY_SIZE) and other malformed
    # requests: the client's fault, so a 4xx, never the 500 an unknown exception gets.
    if isinstance(exc, RequestDataTooBig):
        return Response(
            envelope("payload-too-large", str(exc) or "Request body too large."),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, SuspiciousOperation):
        return Response(
            envelope("bad-request", str(exc) or "Bad request."), status=status.HTTP_400_BAD_REQUEST
        )

    if isinstance(exc, exceptions.APIException):
        if auth_header := getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = auth_header
        if wait := getattr(exc, "wait", None):
            headers["Retry-After"] = f"{int(wait)}"
        fallback = "internal-error" if exc.status_code >= 500 else "bad-request"
        code = next((c for cls, c in _CODES.items() if isinstance(exc, cls)), fallback)
        if isinstance(exc, exceptions.ValidationError):
            fields = _flatten(exc.detail)
            first_field, first_errors = next(iter(fields.items()), ("", [""]))
            message = f"{first_field}: {first_errors[0]}" if first_field else "Invalid input."
            if len(fields) > 1:
                message += f" (and {len(fields) - 1} more field errors)"
            return Response(
                envelope(code, message, {"fields": fields}), status=exc.status_code, headers=headers
            )
        message = str(exc.detail) if not isinstance(exc.detail, list | dict) else str(exc.default_detail)
        return Response(envelope(code, message), status=exc.status_code, headers=headers)

    # A database that cannot be reached is no bug of ours and no fault of the request: 503, said without a host,
    # port, name or path (evalsite.unavailable decides which errors are that; the rest stay 500 below).
    if unavailable.database_unavailable(exc):
        logger.error("Database unavailable: %s: %s", type(exc).__name__, exc, exc_info=exc)
        return Response(
            envelope("database-unavailable", unavailable.MESSAGE),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(unavailable.RETRY_AFTER_SECONDS)},
        )

    # Anything else is a bug: log it with its traceback, answer the envelope without one.
    view = context.get("view")
    logger.exception("Unhandled error in %s", type(view).__name__ if view else "API view")
    return Response(
        envelope("internal-error", "An unexpected error occurred; it has been logged."),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )
