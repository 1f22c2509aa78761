"""What every dashboard page shares: the current tenant (from the session, switched by `?tenant=`), the
decorator that hands it to a page, the header's context, and the helpers for `next`, paging and lookups."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property, wraps
from typing import Any, cast
from urllib.parse import quote

from django.contrib.auth.views import redirect_to_login
from django.core.paginator import Page as PaginatorPage
from django.core.paginator import Paginator
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseNotAllowed,
    JsonResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import RFC3986_SUBDELIMS, url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from evalsite import health
from evalsite.errors import EvalsiteError, NotFound
from evalsite.tenancy.access import Forbidden, allowed, declare, needs, require
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm, roles_allowing
from evaluation.dashboard.common_reads import tenant_key, tenants_for_user
from goldenset import selectors as golden_selectors
from goldenset.models import Collection

SESSION_TENANT = "dashboard_tenant"


# --- the current tenant ------------------------------------------------------------------------------------


def visible_tenants(request: HttpRequest) -> list[Tenant]:
    cached = getattr(request, "_dashboard_tenants", None)
    if cached is None:
        cached = tenants_for_user(request.user)
        request._dashboard_tenants = cached  # type: ignore[attr-defined]
    return cached


def current_tenant(request: HttpRequest, *, from_query: bool = True) -> Tenant | None:
    """The tenant this request works in: `?tenant=` (switching to it), else the session's, else the first
    one the user may see (None when there is none). A tenant the user may not see is a 404."""
    if hasattr(request, "_dashboard_tenant"):
        return cast(Tenant | None, request._dashboard_tenant)
    tenants = visible_tenants(request)
    wanted = request.GET.get("tenant") if from_query else None
    if wanted:
        tenant = next((t for t in tenants if tenant_key(t) == wanted), None)
        if tenant is None:
            raise Http404("No such tenant.")
    else:
        stored = request.session.get(SESSION_TENANT)
        tenant = next((t for t in tenants if t.pk == stored), tenants[0] if tenants else None)
    if tenant is not None and request.session.get(SESSION_TENANT) != tenant.pk:
        request.session[SESSION_TENANT] = tenant.pk
    if from_query:
        request._dashboard_tenant = tenant  # type: ignore[attr-defined]
    return tenant


TenantView = Callable[..., HttpResponseBase]


def tenant_page(perm: Perm, *, post: Perm | None = None) -> Callable[[TenantView], TenantView]:
    """A page of a tenant: login required, the permission it declares held in the current tenant (`perm` for
    every method, `post` for POST when it differs: a form a viewer may read but not send), the tenant passed
    in, and the domain's NotFound shown as the 404 page. A role without the permission gets the 403 page that
    names it (evalsite.tenancy.access, the one check)."""
    declared = needs(perm, **({"POST": post} if post is not None else {}))

    def decorate(view: TenantView) -> TenantView:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            perm = declared.get(request.method or "")
            if perm is None:  # a method no page takes (TRACE, say): refused, as require_http_methods would
                return HttpResponseNotAllowed(sorted(declared))
            tenant = current_tenant(request)
            if tenant is None:
                return render(request, "dashboard/no_tenant.html")
            try:
                require(request.user, perm, tenant)
                return view(request, tenant, *args, **kwargs)
            except Forbidden as exc:
                return forbidden(request, exc)
            except NotFound as exc:
                raise Http404(exc.message) from None

        return declare(declared)(wrapper)

    return decorate


def forbidden(request: HttpRequest, exc: Forbidden) -> HttpResponse:
    holders = roles_allowing(exc.perm)
    return render(
        request,
        "dashboard/forbidden.html",
        {
            "perm": exc.perm.value,
            "role": exc.details.get("role"),
            "holders": ", ".join(role.value for role in holders),
            "holders_count": len(holders),
        },
        status=403,
    )


class DashboardContext:
    """What base.html shows in the header, computed only when a template reads it (admin pages never do)."""

    def __init__(self, request: HttpRequest):
        self.request = request

    @cached_property
    def tenants(self) -> list[dict[str, str]]:
        return [
            {"key": tenant_key(t), "name": t.name or tenant_key(t)} for t in visible_tenants(self.request)
        ]

    @cached_property
    def tenant(self) -> Tenant | None:
        try:
            return current_tenant(self.request, from_query=False)
        except Http404:
            return None

    @cached_property
    def administers(self) -> bool:
        """Whether the user is an admin of the current tenant (the header's Team link)."""
        return self.tenant is not None and allowed(self.request.user, Perm.ADMINISTER, self.tenant)

    @cached_property
    def tenant_key(self) -> str:
        return tenant_key(self.tenant) if self.tenant else ""

    @cached_property
    def system_status(self) -> list[dict[str, str]]:
        """The footer's status line: database, broker, workers (evalsite.health, at most seconds old); the
        failing checks' exception text (hosts, ports) for staff only, as on /healthz."""
        return health.status_line(health.cached_health(), detail=self.request.user.is_staff)


def dashboard_context(request: HttpRequest) -> dict[str, Any]:
    """Template context processor (settings.TEMPLATES): the header's tenant switcher."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"dashboard": DashboardContext(request)}


@require_POST
@declare(needs(Perm.VIEW))
def tenant_switch(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(reverse("home"))
    wanted = request.POST.get("tenant", "")
    tenant = next((t for t in visible_tenants(request) if tenant_key(t) == wanted), None)
    if tenant is None:
        raise Http404("No such tenant.")
    try:
        require(request.user, Perm.VIEW, tenant)
    except Forbidden as exc:
        return forbidden(request, exc)
    request.session[SESSION_TENANT] = tenant.pk
    # Pages that name no tenant's object keep the user where they were; any other could be another
    # tenant's object (a 404 after the switch), so home instead.
    staying = {
        reverse(name)
        for name in (
            "home",
            "dashboard:runs",
            "dashboard:trends",
            "dashboard:launch",
            "dashboard:launch-answers",
            "dashboard:studies",
            "dashboard:study-new",
        )
    }
    target = safe_next(request, reverse("home"))
    return redirect(target if target.split("?")[0] in staying else reverse("home"))


def safe_next(request: HttpRequest, default: str) -> str:
    """The `next` the form sent when it is a path on this site, else default."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if not target or not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return default
    return target


_URL_MARKER = "evalsite-url-marker"


def url_maker(name: str, *args: Any, marker: Any = _URL_MARKER) -> Callable[[Any], str]:
    """value -> reverse(name, args=[*args, value]), from one reverse() for a whole table: reversing per row and
    per link was a quarter of a 50-row page's time. The value is quoted as reverse() quotes it; `marker` is any
    value the route's last converter accepts (a number for an int)."""
    head, _marker, tail = reverse(name, args=[*args, marker]).rpartition(str(marker))
    return lambda value: head + quote(str(value), safe=RFC3986_SUBDELIMS + "/~:@") + tail


def paginate(request: HttpRequest, items: Any, per_page: int, count: int | None = None) -> PaginatorPage:
    """The page `?page=` names (the last one past the end); `count`: how many items there are, when the caller
    knows it already (not counted again)."""
    paginator = Paginator(items, per_page)
    if count is not None:
        paginator.__dict__["count"] = count  # Paginator.count is a cached property
    return paginator.get_page(request.GET.get("page"))


def query_without_page(request: HttpRequest) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


def collection_for(tenant: Tenant, slug: str) -> Collection:
    """The tenant's collection named by a URL's slug; NotFound (a 404 under tenant_page) for any other."""
    return golden_selectors.collection_get(tenant=tenant, collection_id=slug)


PollView = Callable[..., dict[str, Any]]


def tenant_poll(perm: Perm) -> Callable[[PollView], Callable[..., HttpResponse]]:
    """A page's poll: `view(request, tenant, ...)` returns a dict, sent as JSON for a signed-in user of the
    current tenant holding `perm`, never cached; 401 when signed out, 403 naming the permission, 404 for an
    object the tenant has not (NotFound), all as JSON the page's script reads."""
    declared = needs(perm)

    def decorate(view: PollView) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return JsonResponse(
                    {"error": {"code": "unauthenticated", "message": "Sign in first."}}, status=401
                )
            tenant = current_tenant(request)
            if tenant is None:
                raise Http404("No tenant.")
            perm = declared.get(request.method or "")
            if perm is None:  # as tenant_page: a method it does not take
                return HttpResponseNotAllowed(sorted(declared))
            try:
                require(request.user, perm, tenant)
                body = view(request, tenant, *args, **kwargs)
            except EvalsiteError as exc:  # a refusal, a 404, a bad field: named, as JSON
                return JsonResponse({"error": exc.as_dict()}, status=exc.status_code)
            response = JsonResponse(body)
            response["Cache-Control"] = "no-store"
            return response

        return declare(declared)(wrapper)

    return decorate
