"""Records the system writes (the audit trail, jobs): listed and read, never edited."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html

from evalsite.audit.models import AuditEvent, audit_objects
from evalsite.jobs.models import Job
from goldenset.admin.common import ReadOnlyAdmin, TenantFilter

# --- system records ----------------------------------------------------------------------------------------


class AuditObjectFilter(admin.SimpleListFilter):
    """The kinds of object the apps registered, with their labels (the field has no choices of its own)."""

    title = "object type"
    parameter_name = "object_type__exact"

    def lookups(self, request, model_admin):
        return audit_objects()

    def queryset(self, request, queryset):
        value = self.value()
        return queryset if value is None else queryset.filter(object_type=value)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor", "action", "object_type", "object_id", "collection_slug", "what", "tenant")
    list_filter = ("action", AuditObjectFilter, TenantFilter, "actor")
    list_select_related = ("tenant__cluster",)
    # "=": exact ids (an entry's trail links here with its id), collection slugs and actors.
    search_fields = ("=object_id", "=collection_slug", "=actor")
    date_hierarchy = "at"
    fields = (
        "at",
        "tenant",
        "collection_slug",
        "collection_uid",
        "object_type",
        "object_id",
        "action",
        "actor",
        "changes_json",
    )
    readonly_fields = fields

    @admin.display(description="what")
    def what(self, obj: AuditEvent) -> str:
        return obj.summary(80)

    @admin.display(description="changes")
    def changes_json(self, obj: AuditEvent) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.changes, indent=2, ensure_ascii=False))


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "kind",
        "status",
        "tenant",
        "collection",
        "progress_text",
        "created_at",
        "finished_at",
    )
    list_filter = ("kind", "status", TenantFilter)
    list_select_related = ("tenant__cluster", "collection")
    search_fields = ("=id",)

    @admin.display(description="progress")
    def progress_text(self, obj: Job) -> str:
        return f"{obj.progress:.0%} ({obj.progress_done}/{obj.progress_total})"
