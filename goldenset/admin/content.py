"""Documents and pages, collections, tenancy and API keys. Writes to documents, collections and keys go
through the audited services; clusters, tenants and memberships are set-up data without an audit trail."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Count
from django.utils.text import Truncator

from evalsite.tenancy.models import ApiKey, Cluster, Membership, Tenant
from evalsite.tenancy.roles import Role
from evalsite.tenancy.services import (
    api_key_create,
    api_key_rename,
    api_key_revoke,
    api_keys_delete,
    key_person_problem,
)
from goldenset import services
from goldenset.admin.common import CollectionFilter, PathLabelsMixin, TenantFilter, actor_for
from goldenset.forms import CollectionAdminForm, DocumentAdminForm, collection_label
from goldenset.models import Collection, Document, GoldenEntry, Page
from goldenset.selectors import count_of
from goldenset.services.scales import scale_change

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
        # Inside the admin's transaction, after the document and its pages are saved: the service bumps the
        # collection's content version (search indexes are keyed on it) and records the write.
        pages_changed = any(formset.has_changed() for formset in formsets)
        if not change or form.has_changed() or pages_changed:
            services.document_touch(
                document=form.instance,
                actor=actor_for(request),
                created=not change,
                changed_fields=form.changed_data,
                pages_changed=pages_changed,
            )

    def delete_model(self, request, obj):
        services.document_delete(document=obj, actor=actor_for(request))

    def delete_queryset(self, request, queryset):
        documents = list(queryset.select_related("collection__tenant"))
        by_collection: dict[int, list[Document]] = {}
        for document in documents:
            by_collection.setdefault(document.collection_id, []).append(document)
        with transaction.atomic():
            for group in by_collection.values():
                services.documents_delete(
                    collection=group[0].collection, documents=group, actor=actor_for(request)
                )


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
        "grade_scale",
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

    def save_model(self, request, obj, form, change):
        """Saved as the services save it; a changed grade scale converts every stored grade to it, audited."""
        wanted = obj.grade_scale
        if change and "grade_scale" in form.changed_data:
            obj.grade_scale = Collection.objects.values_list("grade_scale", flat=True).get(pk=obj.pk)
        with transaction.atomic():
            services.collection_save(collection=obj, actor=actor_for(request))
            if wanted != obj.grade_scale:
                done = scale_change(collection=obj, grade_scale=wanted, actor=actor_for(request))
                self.message_user(
                    request,
                    f"Grades on the {done.target} scale: {done.grades} converted in {done.entries} entries.",
                )

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
    list_display = ("user", "tenant", "role", "created_at")
    list_filter = (TenantFilter, "role")
    list_select_related = ("user", "tenant__cluster")
    search_fields = ("user__username", "tenant__slug")
    readonly_fields = ("created_at",)


# --- API keys ----------------------------------------------------------------------------------------------


class ApiKeyForm(forms.ModelForm):
    """A new key's person must hold at least the key's role in its tenant (the rule api_key_create keeps)."""

    class Meta:
        model = ApiKey
        fields = ("tenant", "role", "user", "name", "expires_at")

    def clean(self):
        data = super().clean() or {}
        tenant, role, user = data.get("tenant"), data.get("role"), data.get("user")
        if self.instance.pk is None and tenant is not None and role:
            problem = key_person_problem(tenant=tenant, role=Role(role), user=user)
            if problem:
                self.add_error("user", problem)
        return data


@admin.register(ApiKey)
class ApiKeyAdmin(PathLabelsMixin):
    list_display = (
        "prefix", "tenant", "name", "role", "user", "created_at", "last_used_at", "expires_at", "revoked_at",
        "active",
    )  # fmt: skip
    list_filter = (TenantFilter, "role", ("revoked_at", admin.EmptyFieldListFilter))
    list_select_related = ("tenant__cluster", "user")
    form = ApiKeyForm
    search_fields = ("prefix", "name")
    actions = ("revoke_selected",)
    # key_hash is never shown: it is not in any field list, and not editable.
    change_fields = (
        "prefix", "tenant", "name", "role", "user", "created_at", "last_used_at", "expires_at", "revoked_at",
    )  # fmt: skip

    def get_fields(self, request, obj=None):
        return ("tenant", "role", "user", "name", "expires_at") if obj is None else self.change_fields

    def get_readonly_fields(self, request, obj=None):
        # Revoking goes through the action (api_key_revoke), and a revoked key stays revoked.
        # A key's role, person and expiry are its own: another role is another key.
        return () if obj is None else tuple(f for f in self.change_fields if f != "name")

    @admin.display(description="active", boolean=True)
    def active(self, obj: ApiKey) -> bool:
        return obj.is_active

    def save_model(self, request, obj, form, change):
        if change:
            api_key_rename(key=obj, name=obj.name, actor=actor_for(request))
            return
        key, secret = api_key_create(
            tenant=obj.tenant,
            role=obj.role,
            name=obj.name,
            user=obj.user,
            expires_at=obj.expires_at,
            actor=actor_for(request),
        )
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
        with transaction.atomic():
            revoked = sum(
                api_key_revoke(key=key, actor=actor_for(request))
                for key in queryset.filter(revoked_at__isnull=True)
            )
        self.message_user(request, f"Revoked {revoked} keys.", messages.SUCCESS)

    def delete_model(self, request, obj):
        api_keys_delete(keys=[obj], actor=actor_for(request))

    def delete_queryset(self, request, queryset):
        api_keys_delete(keys=list(queryset), actor=actor_for(request))
