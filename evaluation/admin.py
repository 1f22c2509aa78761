"""The admin's Target pages: the same services as the API and the dashboard (checks, sealed secrets, audit).
Secret header values are typed into a write-only field and never shown; their names are."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import transaction

from evalsite.errors import EvalsiteError
from evaluation.models import HumanLabel, JudgeThreshold, Target
from evaluation.targets import services as target_services
from evaluation.targets.definitions import secret_header_lines
from goldenset.admin.common import CollectionFilter, PathLabelsMixin, ReadOnlyAdmin, TenantFilter, actor_for

FIELDS = ("name", "kind", "base_url", "headers", "timeout_s", "concurrency", "rate_limit", "options")


class TargetAdminForm(forms.ModelForm):
    secret_headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "autocomplete": "off"}),
        help_text="Write-only: one “Header: value” per line, stored encrypted and never shown. A header named "
        "here gets this value, “Header:” alone removes it, the others are kept.",
    )

    class Meta:
        model = Target
        fields = ("tenant", *FIELDS)

    def clean_secret_headers(self) -> dict[str, str | None]:
        try:
            return secret_header_lines(self.cleaned_data.get("secret_headers", ""))
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        taken = Target.objects.filter(tenant=tenant, name=cleaned.get("name")).exclude(pk=self.instance.pk)
        if taken.exists():
            self.add_error("name", "This tenant has a target of this name.")
            return cleaned
        try:  # the services' own checks, before anything is written
            cleaned["options"] = target_services.target_check(
                cleaned["kind"],
                cleaned.get("options") or {},
                cleaned.get("base_url") or "",
                headers=cleaned.get("headers") or {},
                secret_headers=cleaned.get("secret_headers") or {},
                stored=Target.objects.get(pk=self.instance.pk) if self.instance.pk else None,
            )
        except EvalsiteError as exc:
            field = str(exc.details.get("field", "")).split(".", 1)[0]
            self.add_error(field if field in self.fields else None, exc.message)
        return cleaned


@admin.register(Target)
class TargetAdmin(PathLabelsMixin):
    form = TargetAdminForm
    list_display = ("name", "kind", "tenant", "base_url", "concurrency", "secret_names", "updated_at")
    list_filter = (TenantFilter, "kind")
    list_select_related = ("tenant__cluster",)
    search_fields = ("name", "base_url")
    readonly_fields = ("secret_names", "created_at", "updated_at")

    def get_readonly_fields(self, request, obj=None):
        # A target stays with its tenant (its runs and audit trail are the tenant's).
        return ("tenant", *self.readonly_fields) if obj is not None else self.readonly_fields

    @admin.display(description="secret headers (names)")
    def secret_names(self, obj: Target) -> str:
        return ", ".join(obj.secret_header_names or []) or "—"

    def save_model(self, request, obj, form, change):
        data = {name: form.cleaned_data[name] for name in FIELDS if name in form.cleaned_data}
        secrets = form.cleaned_data.get("secret_headers") or {}
        actor = actor_for(request)
        if change:
            fresh = Target.objects.get(pk=obj.pk)  # the stored row: the form has already set obj's fields
            if secrets:
                data["secret_headers"] = secrets
            saved = target_services.target_update(target=fresh, data=data, actor=actor)
        else:
            data["secret_headers"] = {k: v for k, v in secrets.items() if v is not None}
            saved = target_services.target_create(tenant=form.cleaned_data["tenant"], data=data, actor=actor)
        obj.pk, obj.secret_header_names = saved.pk, saved.secret_header_names

    def delete_model(self, request, obj):
        target_services.target_delete(target=obj, actor=actor_for(request))

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for target in queryset:
                target_services.target_delete(target=target, actor=actor_for(request))


# --- human labels and calibrated thresholds: written through their services (import, Calibration tab) ---------


@admin.register(HumanLabel)
class HumanLabelAdmin(ReadOnlyAdmin):
    """People's verdicts, to browse: imported all or nothing (import_labels, the API, the Calibration tab), so
    no hand edit here can leave an import half-changed or skip its audit event."""

    list_display = (
        "collection",
        "entry_key",
        "metric",
        "level",
        "rater",
        "verdict",
        "statement_start",
        "run",
    )
    list_filter = ("metric", "level", "rater", CollectionFilter)
    list_select_related = ("collection",)
    search_fields = ("=entry_key", "=rater", "statement")

    @admin.display(description="statement")
    def statement_start(self, obj: HumanLabel) -> str:
        return obj.statement[:80]


@admin.register(JudgeThreshold)
class JudgeThresholdAdmin(ReadOnlyAdmin):
    """Calibrated thresholds in force; applied and reset on the Calibration tab or with manage.py calibration."""

    list_display = ("collection", "judge", "metric", "value", "created_at")
    list_filter = ("metric", CollectionFilter)
    list_select_related = ("collection",)
