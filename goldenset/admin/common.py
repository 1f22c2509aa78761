"""What the admin's pages share: who the audit trail names, the tenant and collection filters and selects."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from evalsite.audit.services import actor_user
from evalsite.tenancy.models import Tenant
from goldenset.forms import CollectionChoiceField, collection_label
from goldenset.models import Collection


def actor_for(request: HttpRequest) -> str:
    return actor_user(request.user)


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
