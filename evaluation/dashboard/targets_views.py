"""The tenant's external targets: list, create, edit (secrets typed, never shown), test connection, delete.
The same services as /lmkit/v1/targets (evaluation.targets.services), the same checks and audit trail."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evalsite.audit.services import actor_user
from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation.dashboard.common_views import tenant_page
from evaluation.dashboard.target_forms import TargetForm, TargetTestForm, kind_examples
from evaluation.models import Target, TargetKind
from evaluation.targets import services as target_services


@require_GET
@tenant_page(Perm.VIEW)
def targets(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    found = [target_services.snapshot(t) for t in target_services.targets_list(tenant=tenant)]
    return render(request, "dashboard/targets.html", {"tenant": tenant, "targets": found})


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.ADMINISTER)
def target_new(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    form = TargetForm(
        request.POST or None, initial={"kind": TargetKind.HTTP, "timeout_s": 30, "concurrency": 4}
    )
    if request.method == "POST" and form.is_valid():
        try:
            target = target_services.target_create(
                tenant=tenant, data=form.as_data(creating=True), actor=actor_user(request.user)
            )
        except EvalsiteError as exc:
            form.add_service_error(exc.code, exc.message, _form_field(exc))
        else:
            messages.success(request, f"Created target “{target.name}”: test it below.")
            return redirect("dashboard:target", name=target.name)
    return _page(request, tenant, None, form, TargetTestForm())


@require_http_methods(["GET", "POST"])
@tenant_page(Perm.VIEW, post=Perm.ADMINISTER)
def target_detail(request: HttpRequest, tenant: Tenant, name: str) -> HttpResponse:
    """The target's form (POST saves it) and its test-connection panel."""
    target = target_services.target_get(tenant=tenant, name=name)
    if request.method == "POST":
        form = TargetForm(request.POST)
        if form.is_valid():
            try:
                target = target_services.target_update(
                    target=target, data=form.as_data(creating=False), actor=actor_user(request.user)
                )
            except EvalsiteError as exc:
                form.add_service_error(exc.code, exc.message, _form_field(exc))
                target.refresh_from_db()
            else:
                messages.success(request, f"Saved target “{target.name}”.")
                return redirect("dashboard:target", name=target.name)
    else:
        form = TargetForm(initial=_initial(target))
    return _page(request, tenant, target, form, TargetTestForm())


@require_POST
@tenant_page(Perm.ADMINISTER)
def target_test(request: HttpRequest, tenant: Tenant, name: str) -> HttpResponse:
    target = target_services.target_get(tenant=tenant, name=name)
    test_form = TargetTestForm(request.POST)
    result = None
    if test_form.is_valid():
        try:
            result = target_services.target_test(
                target=target, query=test_form.cleaned_data["query"], top_k=test_form.cleaned_data["top_k"]
            )
        except EvalsiteError as exc:  # secrets no configured key opens, a URL the egress policy refuses
            result = {"ok": False, "error": exc.message, "results": [], "raw": ""}
    return _page(request, tenant, target, TargetForm(initial=_initial(target)), test_form, result)


@require_POST
@tenant_page(Perm.ADMINISTER)
def target_delete(request: HttpRequest, tenant: Tenant, name: str) -> HttpResponse:
    target = target_services.target_get(tenant=tenant, name=name)
    target_services.target_delete(target=target, actor=actor_user(request.user))
    messages.success(request, f"Deleted target “{name}”. Runs that used it keep its name and kind.")
    return redirect("dashboard:targets")


def _initial(target: Target) -> dict:
    shown = target_services.snapshot(target)
    shown.pop("secret_headers")
    return shown


def _form_field(exc: EvalsiteError) -> str | None:
    """The form field an API error's field path is about (options.index -> options)."""
    field = exc.details.get("field")
    return field.split(".", 1)[0] if isinstance(field, str) else None


def _page(request, tenant, target, form, test_form, result=None) -> HttpResponse:
    bound_errors = form.is_bound and bool(form.errors)
    return render(
        request,
        "dashboard/target.html",
        {
            "tenant": tenant,
            "target": target,
            "secret_names": target.secret_header_names if target else [],
            "form": form,
            "test_form": test_form,
            "result": result,
            "examples": kind_examples(),
            "nav_section": "targets",
        },
        status=400 if bound_errors else 200,
    )
