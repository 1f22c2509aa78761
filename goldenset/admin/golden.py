"""Golden entries: the curators' main page. Every write goes through the audited services."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpResponse
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator, slugify

from evalsite.audit.models import AuditEvent
from goldenset import exporters, services
from goldenset.admin.common import CollectionFilter, PathLabelsMixin, actor_for
from goldenset.forms import GoldenEntryAdminForm, collection_label
from goldenset.models import Collection, GoldenAuditObject, GoldenEntry, RejectedQuestion

AUDIT_TRAIL_LENGTH = 20
TAG_CHOICES_LIMIT = 200


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

    def get_changelist_form(self, request, **kwargs):
        """The list's editable boxes sit under their column's header with no label of their own: each is named
        by its column and its row for assistive technology (WCAG 4.1.2)."""
        base = super().get_changelist_form(request, **kwargs)

        class NamedBoxes(base):  # type: ignore[valid-type,misc]
            def __init__(self, *args, **form_kwargs):
                super().__init__(*args, **form_kwargs)
                row = Truncator(self.instance.question).chars(60) if self.instance.pk else ""
                for field in self.fields.values():
                    field.widget.attrs["aria-label"] = f"{field.label}: {row}"

        return NamedBoxes

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
        events = AuditEvent.objects.filter(
            object_type=GoldenAuditObject.GOLDEN_ENTRY, object_id=str(obj.pk)
        ).order_by("-at", "-id")[:AUDIT_TRAIL_LENGTH]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((date_format(e.at, "DATETIME_FORMAT"), e.actor, e.action, e.summary()) for e in events),
        )
        if not rows:
            return "No recorded changes."
        return format_html(
            "<table><thead><tr><th>when</th><th>who</th><th>action</th><th>what</th></tr></thead>"
            '<tbody>{}</tbody></table><p><a href="{}">All events of this entry</a></p>',
            rows,
            reverse("admin:audit_auditevent_changelist") + f"?q={obj.pk}",
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
        data = exporters.golden_entries_dump(queryset)
        response = HttpResponse(data, content_type="application/json; charset=utf-8")
        filename = f"{slugify(collections[0].slug) or 'collection'}-golden.json"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


# --- rejected questions ------------------------------------------------------------------------------------


@admin.register(RejectedQuestion)
class RejectedQuestionAdmin(admin.ModelAdmin):
    """The generated questions curators rejected, which generation skips (goldenset.services.rejections). Rows
    are written by rejections only; deleting one un-rejects its question (the next generate may write it)."""

    list_display = ("question_text", "collection_path", "rejected_by", "rejected_at")
    list_filter = (CollectionFilter,)
    list_select_related = ("collection__tenant__cluster",)
    search_fields = ("question", "=rejected_by")
    list_per_page = 50
    fields = ("collection", "question", "source_page", "rejected_by", "rejected_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="question", ordering="question")
    def question_text(self, obj: RejectedQuestion) -> str:
        return Truncator(obj.question).chars(100)

    @admin.display(description="collection", ordering="collection__slug")
    def collection_path(self, obj: RejectedQuestion) -> str:
        return collection_label(obj.collection)
