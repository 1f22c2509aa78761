from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render
from django.views.defaults import page_not_found
from django.views.defaults import server_error as django_server_error

from evalsite.api.errors import envelope


def home(request):
    return render(request, "home.html")


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


def not_found(request, exception=None):
    """JSON for API paths (clients never parse an HTML 404), the usual page elsewhere."""
    if request.path.startswith("/lmkit/"):
        return JsonResponse(envelope("not-found", f"No API endpoint at {request.path}."), status=404)
    return page_not_found(request, exception)


def server_error(request):
    if request.path.startswith("/lmkit/"):
        return JsonResponse(
            envelope("internal-error", "An unexpected error occurred; it has been logged."), status=500
        )
    return django_server_error(request)
