"""The curators' admin: golden entries first, then the reference data around them.

Every write to a golden entry made here goes into the audit trail as "user:<username>", like the API's and
the commands' writes do. Changelists load their related rows with list_select_related and their counts
with annotations, so a page costs the same number of queries whatever its length.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator, slugify

from goldenset import importers, services
from goldenset.forms import (
    CollectionAdminForm,
    CollectionChoiceField,
    DocumentAdminForm,
    GoldenEntryAdminForm,
    collection_label,
)
from goldenset.models import (
    ApiKey,
    AuditAction,
    AuditEvent,
    Cluster,
    Collection,
    Document,
    GoldenEntry,
    Job,
    Membership,
    Page,
    Tenant,
)
from goldenset.selectors import count_of

AUDIT_TRAIL_LENGTH = 20
TAG_CHOICES_LIMIT = 200


def actor_for(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


# --- shared pieces -----------------------------------------------------------------------------------------


class PathFilter(admin.SimpleListFilter, ABC):
    """Filter on a tenant or collection, labelled cluster/tenant(/collection) and listed in one query.

    Django's RelatedFieldListFilter labels choices with str(), which is ambiguous for collections (slugs
    repeat across tenants) and costs a query per tenant (Tenant.__str__ reads its cluster).
    """

    field_path = ""

    @abstractmethod
    def choices_queryset(self) -> QuerySet: ...

    def label(self, obj: Any) -> str:
        return str(obj)

    def lookups(self, request, model_admin):
        return [(str(obj.pk), self.label(obj)) for obj in self.choices_queryset()]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        if not value.isdigit():
            return queryset.none()
        return queryset.filter(**{f"{self.field_path}__pk": int(value)})


class CollectionFilter(PathFilter):
    title = "collection"
    parameter_name = "collection"
    field_path = "collection"

    def choices_queryset(self) -> QuerySet:
        return Collection.objects.select_related("tenant__cluster").order_by(
            "tenant__cluster__slug", "tenant__slug", "slug"
        )

    def label(self, obj: Collection) -> str:
        return collection_label(obj)


class TenantFilter(PathFilter):
    title = "tenant"
    parameter_name = "tenant"
    field_path = "tenant"

    def choices_queryset(self) -> QuerySet:
        return Tenant.objects.select_related("cluster")


class PathLabelsMixin(admin.ModelAdmin):
    """Tenant and collection selects on forms: one query, and labels that say which tenant is meant."""

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "tenant":
            kwargs.setdefault("queryset", Tenant.objects.select_related("cluster"))
        elif db_field.name == "collection":
            kwargs.setdefault("queryset", Collection.objects.select_related("tenant__cluster"))
            kwargs.setdefault("form_class", CollectionChoiceField)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records written by the system: viewable, never added, edited or deleted by hand."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


def _short(value: Any, length: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return Truncator(text).chars(length)


def _changes_summary(event: AuditEvent) -> str:
    """Update events list the changed fields; create and delete events carry a whole snapshot."""
    if event.action == AuditAction.UPDATE:
        return "; ".join(
            f"{name}: {_short(pair[0], 60)} → {_short(pair[1], 60)}"
            if isinstance(pair, list) and len(pair) == 2
            else f"{name}: {_short(pair, 60)}"
            for name, pair in event.changes.items()
        )
    return _short(event.changes.get("question", ""), 120) if isinstance(event.changes, dict) else ""


# --- golden entries ----------------------------------------------------------------------------------------


class TagFilter(admin.SimpleListFilter):
    title = "tag"
    parameter_name = "tag"

    def lookups(self, request, model_admin):
        # Distinct tag combinations are few next to entries; split them into tags here.
        combos = (
            model_admin.get_queryset(request)
            .exclude(tags_index="")
            .order_by()
            .values_list("tags_index", flat=True)
            .distinct()
        )
        tags = sorted({tag for combo in combos for tag in combo.split("|") if tag})
        return [(tag, tag) for tag in tags[:TAG_CHOICES_LIMIT]]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        return queryset.filter(tags_index__contains=f"|{value}|")


@admin.register(GoldenEntry)
class GoldenEntryAdmin(PathLabelsMixin):
    form = GoldenEntryAdminForm
    list_display = (
        "question_text",
        "collection_path",
        "key",
        "origin",
        "reviewed",
        "answerable",
        "tag_list",
        "expected_count",
        "updated_at",
    )
    list_display_links = ("question_text",)
    list_editable = ("reviewed", "answerable")
    list_filter = (CollectionFilter, "origin", "reviewed", "answerable", TagFilter)
    list_select_related = ("collection__tenant__cluster",)
    search_fields = ("question", "key", "reference_answer")
    list_per_page = 50
    actions = ("mark_reviewed", "mark_unreviewed", "export_golden")
    readonly_fields = ("origin", "source_page", "job", "created_at", "updated_at", "audit_trail")

    def get_queryset(self, request):
        # The change page and the actions read entry.collection.tenant for the audit trail.
        return super().get_queryset(request).select_related("collection__tenant__cluster")

    def get_readonly_fields(self, request, obj=None):
        # Moving an entry between collections would rewrite history (its audit trail names the collection).
        return (*self.readonly_fields, "collection") if obj is not None else self.readonly_fields

    def get_fieldsets(self, request, obj=None):
        fieldsets = [
            (
                None,
                {
                    "fields": (
                        "collection",
                        "key",
                        "question",
                        "reference_answer",
                        "expected_document_ids",
                        "grades",
                        "tags",
                        ("answerable", "reviewed"),
                    )
                },
            ),
            ("Provenance", {"fields": ("origin", "source_page", "job", ("created_at", "updated_at"))}),
        ]
        if obj is not None:
            fieldsets.append(("Audit trail", {"fields": ("audit_trail",)}))
        return fieldsets

    @admin.display(description="question", ordering="question")
    def question_text(self, obj: GoldenEntry) -> str:
        return Truncator(obj.question).chars(100)

    @admin.display(description="collection", ordering="collection__slug")
    def collection_path(self, obj: GoldenEntry) -> str:
        return collection_label(obj.collection)

    @admin.display(description="tags")
    def tag_list(self, obj: GoldenEntry) -> str:
        return ", ".join(obj.tags)

    @admin.display(description="expected docs")
    def expected_count(self, obj: GoldenEntry) -> int:
        return len(obj.expected_document_ids)

    @admin.display(description="last changes")
    def audit_trail(self, obj: GoldenEntry) -> str:
        events = AuditEvent.objects.filter(object_type="golden-entry", object_id=str(obj.pk)).order_by(
            "-at", "-id"
        )[:AUDIT_TRAIL_LENGTH]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((date_format(e.at, "DATETIME_FORMAT"), e.actor, e.action, _changes_summary(e)) for e in events),
        )
        if not rows:
            return "No recorded changes."
        return format_html(
            "<table><thead><tr><th>when</th><th>who</th><th>action</th><th>what</th></tr></thead>"
            '<tbody>{}</tbody></table><p><a href="{}">All events of this entry</a></p>',
            rows,
            reverse("admin:goldenset_auditevent_changelist") + f"?q={obj.pk}",
        )

    # Writes: each one audited as the signed-in user.

    def save_model(self, request, obj, form, change):
        services.golden_entry_save(entry=obj, actor=actor_for(request))

    def delete_model(self, request, obj):
        services.golden_entries_delete(entries=[obj], actor=actor_for(request))

    def delete_queryset(self, request, queryset):
        # Django's delete_selected action (with its confirmation page) ends here.
        services.golden_entries_delete(
            entries=queryset.select_related("collection"), actor=actor_for(request)
        )

    def _mark(self, request, queryset, reviewed: bool) -> None:
        count = services.golden_entries_mark_reviewed(
            entries=queryset.select_related("collection"), reviewed=reviewed, actor=actor_for(request)
        )
        state = "reviewed" if reviewed else "unreviewed"
        self.message_user(request, f"Marked {count} entries {state}.", messages.SUCCESS)

    @admin.action(description="Mark selected entries reviewed", permissions=["change"])
    def mark_reviewed(self, request, queryset):
        self._mark(request, queryset, True)

    @admin.action(description="Mark selected entries unreviewed", permissions=["change"])
    def mark_unreviewed(self, request, queryset):
        self._mark(request, queryset, False)

    @admin.action(description="Export selected entries as golden.json", permissions=["view"])
    def export_golden(self, request, queryset):
        collections = list(
            Collection.objects.filter(pk__in=queryset.order_by().values("collection_id")).order_by("pk")
        )
        # Keys and questions are unique per collection only: a mixed file could fail to load again.
        if len(collections) != 1:
            self.message_user(
                request, "Select entries of one collection to export a golden.json.", messages.ERROR
            )
            return None
        data = importers.golden_entries_dump(queryset)
        response = HttpResponse(data, content_type="application/json; charset=utf-8")
        filename = f"{slugify(collections[0].slug) or 'collection'}-golden.json"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


# --- documents and pages -----------------------------------------------------------------------------------


class PageInline(admin.TabularInline):
    model = Page
    fields = ("number", "text")
    extra = 0
    ordering = ("number",)


@admin.register(Document)
class DocumentAdmin(PathLabelsMixin):
    form = DocumentAdminForm
    inlines = (PageInline,)
    list_display = ("external_id", "title_text", "collection_path", "page_count", "updated_at")
    list_filter = (CollectionFilter,)
    list_select_related = ("collection__tenant__cluster",)
    search_fields = ("external_id", "title")
    readonly_fields = ("created_at", "updated_at")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(page_count=Count("pages"))

    def get_readonly_fields(self, request, obj=None):
        # Moving a document would leave golden entries of the old collection pointing at nothing.
        return (*self.readonly_fields, "collection") if obj is not None else self.readonly_fields

    @admin.display(description="title", ordering="title")
    def title_text(self, obj: Document) -> str:
        return Truncator(obj.title).chars(80)

    @admin.display(description="collection", ordering="collection__slug")
    def collection_path(self, obj: Document) -> str:
        return collection_label(obj.collection)

    @admin.display(description="pages", ordering="page_count")
    def page_count(self, obj: Document) -> int:
        return obj.page_count  # type: ignore[attr-defined]  # an annotation of get_queryset

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        # Search indexes are keyed on the collection's content version: any change must bump it.
        if not change or form.has_changed() or any(formset.has_changed() for formset in formsets):
            services.collection_touch(collection=form.instance.collection)

    def delete_model(self, request, obj):
        services.document_delete(document=obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            collections = list(Collection.objects.filter(pk__in=queryset.order_by().values("collection_id")))
            queryset.delete()
            for collection in collections:
                services.collection_touch(collection=collection)


# --- tenancy and collections -------------------------------------------------------------------------------


@admin.register(Collection)
class CollectionAdmin(PathLabelsMixin):
    form = CollectionAdminForm
    list_display = (
        "slug",
        "name",
        "tenant",
        "document_count",
        "golden_entry_count",
        "content_version",
        "updated_at",
    )
    list_filter = (TenantFilter,)
    list_select_related = ("tenant__cluster",)
    search_fields = ("slug", "name")
    readonly_fields = ("content_version", "created_at", "updated_at")

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                document_count=count_of(Document, "collection"),
                golden_entry_count=count_of(GoldenEntry, "collection"),
            )
        )

    @admin.display(description="documents", ordering="document_count")
    def document_count(self, obj: Collection) -> int:
        return obj.document_count  # type: ignore[attr-defined]  # an annotation of get_queryset

    @admin.display(description="golden entries", ordering="golden_entry_count")
    def golden_entry_count(self, obj: Collection) -> int:
        return obj.golden_entry_count  # type: ignore[attr-defined]  # an annotation of get_queryset

    def delete_model(self, request, obj):
        services.collection_delete(collection=obj, actor=actor_for(request))

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for collection in queryset:
                services.collection_delete(collection=collection, actor=actor_for(request))


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "tenant_count", "created_at")
    search_fields = ("slug", "name")
    readonly_fields = ("created_at",)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(tenant_count=count_of(Tenant, "cluster"))

    @admin.display(description="tenants", ordering="tenant_count")
    def tenant_count(self, obj: Cluster) -> int:
        return obj.tenant_count  # type: ignore[attr-defined]  # an annotation of get_queryset


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "cluster", "name", "created_at")
    list_filter = ("cluster",)
    list_select_related = ("cluster",)
    search_fields = ("slug", "name", "cluster__slug")
    readonly_fields = ("created_at",)


@admin.register(Membership)
class MembershipAdmin(PathLabelsMixin):
    list_display = ("user", "tenant", "created_at")
    list_filter = (TenantFilter,)
    list_select_related = ("user", "tenant__cluster")
    search_fields = ("user__username", "tenant__slug")
    readonly_fields = ("created_at",)


# --- API keys ----------------------------------------------------------------------------------------------


@admin.register(ApiKey)
class ApiKeyAdmin(PathLabelsMixin):
    list_display = ("prefix", "tenant", "name", "created_at", "last_used_at", "revoked_at", "active")
    list_filter = (TenantFilter, ("revoked_at", admin.EmptyFieldListFilter))
    list_select_related = ("tenant__cluster",)
    search_fields = ("prefix", "name")
    actions = ("revoke_selected",)
    # key_hash is never shown: it is not in any field list, and not editable.
    change_fields = ("prefix", "tenant", "name", "created_at", "last_used_at", "revoked_at")

    def get_fields(self, request, obj=None):
        return ("tenant", "name") if obj is None else self.change_fields

    def get_readonly_fields(self, request, obj=None):
        # Revoking goes through the action (services.api_key_revoke), and a revoked key stays revoked.
        return () if obj is None else ("prefix", "tenant", "created_at", "last_used_at", "revoked_at")

    @admin.display(description="active", boolean=True)
    def active(self, obj: ApiKey) -> bool:
        return obj.is_active

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        key, secret = services.api_key_create(tenant=obj.tenant, name=obj.name)
        # The admin goes on with obj (log entry, redirect): make it the stored key.
        for field in ApiKey._meta.concrete_fields:
            setattr(obj, field.attname, getattr(key, field.attname))
        obj._state.adding = False
        obj._state.db = key._state.db
        obj._new_secret = secret

    def response_add(self, request, obj, post_url_continue=None):
        secret = getattr(obj, "_new_secret", None)
        if secret:
            self.message_user(
                request,
                f"The secret of API key {obj.prefix}… is {secret} . Copy it now: only its hash is stored, "
                "so it cannot be shown again.",
                messages.WARNING,
            )
        return super().response_add(request, obj, post_url_continue)

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke_selected(self, request, queryset):
        keys = list(queryset.filter(revoked_at__isnull=True))
        for key in keys:
            services.api_key_revoke(key=key)
        self.message_user(request, f"Revoked {len(keys)} keys.", messages.SUCCESS)


# --- system records ----------------------------------------------------------------------------------------


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor", "action", "object_type", "object_id", "collection_slug", "tenant")
    list_filter = ("action", "actor", "object_type", TenantFilter)
    list_select_related = ("tenant__cluster",)
    search_fields = ("=object_id",)
    fields = (
        "at",
        "tenant",
        "collection_slug",
        "object_type",
        "object_id",
        "action",
        "actor",
        "changes_json",
    )
    readonly_fields = fields

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
