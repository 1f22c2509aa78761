from __future__ import annotations

from django.conf import settings
from django.http import HttpResponseBadRequest, JsonResponse

from evalsite.bounded_json import NUL_REFUSED, nul_field


class ApiPayloadLimitMiddleware:
    """Answer 413 with the error envelope before an oversized API body is read at all.

    Django's DATA_UPLOAD_MAX_MEMORY_SIZE is not consulted when DRF reads the raw stream, so the limit is
    enforced here on Content-Length (and again while parsing, for bodies sent without one).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/lmkit/"):
            limit = settings.EVALSITE_MAX_REQUEST_BYTES
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > limit:
                return JsonResponse(
                    {
                        "error": {
                            "code": "payload-too-large",
                            "message": f"Request body of {length} bytes exceeds the limit of {limit} bytes.",
                            "details": {"limit_bytes": limit, "content_length": length},
                        }
                    },
                    status=413,
                )
        return self.get_response(request)


class IndexBuildsOffMiddleware:
    """No request builds a search index: a search that finds none ready queues a build job and answers with
    an older version, or 503 index-building (evaluation.retrieval.indexes.get_index)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from evaluation.retrieval.indexes import builds_off  # late: the app registry is not ready at import

        with builds_off():
            return self.get_response(request)


class NulRefusedMiddleware:
    """One rule for the text a request carries, the same on SQLite and PostgreSQL: no NUL character in a page's
    path, query values or form fields (the dashboard's and the admin's), refused with a 400 naming where, before
    any view reads it (a judgment's note with one was a 500 on PostgreSQL and stored on SQLite). The API holds
    the same rule after authentication, naming the path's id (goldenset.api.base.TenantAPIView), in its parsers
    (evalsite.api.parsers: JSON bodies and forms, which DRF reads itself); uploaded files, in their readers
    (goldenset.formats.decode)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/lmkit/"):
            return self.get_response(request)
        fields = [("path", request.path), *((k, v) for k, values in request.GET.lists() for v in values)]
        if request.method == "POST" and request.content_type in _FORMS:
            fields += [(k, v) for k, values in request.POST.lists() for v in values]
        name = nul_field(fields)
        if name is None:
            return self.get_response(request)
        return HttpResponseBadRequest(f"{name}: {NUL_REFUSED}", content_type="text/plain; charset=utf-8")


_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
