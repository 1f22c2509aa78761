import sys

from django.db import DatabaseError
from django.http import HttpResponse, JsonResponse
from django.template import loader
from django.utils.cache import patch_vary_headers
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import bad_request as django_bad_request
from django.views.defaults import page_not_found
from django.views.defaults import permission_denied as django_permission_denied
from django.views.defaults import server_error as django_server_error

from evalsite import health, unavailable
from evalsite.api.errors import envelope


def healthz(request):
    """The database, the broker and the workers' heartbeats: 200 when all are up, 503 naming what is down.

    Anyone (a load balancer, a monitor) reads the status names and timings; the details (engine, counts,
    messages, the exception text that names hosts, ports and databases) are for a signed-in staff user."""
    report = health.system_health()
    database_up = report["checks"]["database"]["status"] == "ok"
    if not _staff(request, database_up):
        report = health.public(report)
    response = JsonResponse(report, status=200 if report["status"] == "ok" else 503)
    response["Cache-Control"] = "no-store"
    patch_vary_headers(response, ["Cookie"])
    return response


def _staff(request, database_up: bool) -> bool:
    """A signed-in staff user (session auth). The session and the user live in the database: with it down no
    one can be known to be staff, and asking would raise the very error this page reports."""
    if not database_up:
        return False
    try:
        return bool(request.user.is_authenticated and request.user.is_staff)
    except DatabaseError:  # down since the check a moment ago: the public answer
        return False


def _is_api(request) -> bool:
    return request.path.startswith("/lmkit/")


def _no_endpoint(request) -> JsonResponse:
    return JsonResponse(envelope("not-found", f"No API endpoint at {request.path}."), status=404)


@csrf_exempt  # any method may be sent to a missing endpoint; the answer is the same 404
def api_not_found(request, *args, **kwargs):
    """The last /lmkit/ route: with DEBUG on, Django would answer an unmatched path with its HTML page."""
    return _no_endpoint(request)


def not_found(request, exception=None):
    """JSON for API paths (clients never parse an HTML 404), the usual page elsewhere."""
    if _is_api(request):
        return _no_endpoint(request)
    return page_not_found(request, exception)


def bad_request(request, exception=None):
    """A request Django refuses before any view (a disallowed Host, say): the envelope on API paths."""
    if _is_api(request):
        return JsonResponse(envelope("bad-request", "Bad request."), status=400)
    return django_bad_request(request, exception)


def permission_denied(request, exception=None):
    if _is_api(request):
        return JsonResponse(envelope("permission-denied", "Permission denied."), status=403)
    return django_permission_denied(request, exception)


def server_error(request):
    """Every exception no view handled, from any middleware, authentication or view (Django calls this inside
    its `except` block, and has already logged the exception with its traceback). A database that cannot be
    reached is a 503 that says so; anything else is the 500 of a bug. Neither shows a traceback or a detail."""
    if unavailable.database_unavailable(sys.exc_info()[1]):
        return _database_unavailable(request)
    if _is_api(request):
        return JsonResponse(
            envelope("internal-error", "An unexpected error occurred; it has been logged."), status=500
        )
    return django_server_error(request)


def _database_unavailable(request) -> HttpResponse:
    response: HttpResponse
    if _is_api(request):
        response = JsonResponse(envelope("database-unavailable", unavailable.MESSAGE), status=503)
    else:
        # Rendered without the request: a context processor would read the session or the user, which are in
        # the database that is down.
        response = HttpResponse(loader.render_to_string("503.html"), status=503)
    response["Retry-After"] = str(unavailable.RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response
