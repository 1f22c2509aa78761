"""Admin forms: the curator-facing validation the database constraints alone would turn into a 500.

The admin shows collections and tenants read-only on change pages, so Django's own constraint checks (which
skip constraints on fields not in the form) cannot see (collection, question_hash) or (collection, key);
these forms check them against the instance's collection and report a field error instead.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from django import forms
from django.forms.fields import InvalidJSONInput

from evalsite.bounded_json import JsonValueError, find_lone_surrogate, find_nul, json_loads
from evalsite.errors import EvalsiteError
from goldenset import services
from goldenset.models import Collection, Document, GoldenEntry
from goldenset.services.golden import ENTRY_INPUT_FIELDS
from goldenset.text import collection_id_problem, document_id_problem
from goldenset.vocabulary.golden_fields import ADMIN_FORM_FIELDS


def collection_label(collection: Collection) -> str:
    """cluster/tenant/collection: collection slugs repeat across tenants, so the slug alone is ambiguous."""
    return f"{collection.tenant}/{collection.slug}"


class CollectionChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Collection) -> str:
        return collection_label(obj)


class StringListField(forms.Field):
    """A JSON list of strings edited as text: one item per line (or per comma, with split_commas)."""

    widget = forms.Textarea

    def __init__(self, *, split_commas: bool = False, forbidden: str = "", **kwargs: Any):
        kwargs.setdefault("required", False)
        self.split_commas = split_commas
        self.forbidden = forbidden
        super().__init__(**kwargs)
        if isinstance(self.widget, forms.Textarea):
            self.widget.attrs["rows"] = 4

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return (", " if self.split_commas else "\n").join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:
        if value in self.empty_values:
            return []
        if isinstance(value, list | tuple):
            items = [str(v) for v in value]
        else:
            items = re.split(r"[,\n]" if self.split_commas else r"\n", str(value))
        # Blank lines and repeats are typing noise, not data.
        return list(dict.fromkeys(item.strip() for item in items if item.strip()))

    def validate(self, value: list[str]) -> None:
        super().validate(value)
        bad = [item for item in value if any(ch in item for ch in self.forbidden)]
        if bad:
            raise forms.ValidationError(
                "May not contain %(chars)s: %(items)s.",
                code="invalid",
                params={"chars": " ".join(self.forbidden), "items": ", ".join(bad)},
            )


class GradesField(forms.Field):
    """Graded relevance edited as text: one "document id: grade" per line. Only the parsing is here; what a
    valid set of grades is (whole numbers 0 to 1000, of expected documents only) is the service's rule
    (goldenset.text.grades_problem), the same for every writer."""

    widget = forms.Textarea

    def __init__(self, **kwargs: Any):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        if isinstance(self.widget, forms.Textarea):
            self.widget.attrs["rows"] = 3

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return "\n".join(f"{doc}: {grade}" for doc, grade in value.items())
        return value

    def to_python(self, value: Any) -> dict[str, int]:
        if isinstance(value, dict):
            return value
        grades: dict[str, int] = {}
        for number, line in enumerate(str(value or "").splitlines(), 1):
            if not line.strip():
                continue
            doc, colon, grade = line.rpartition(":")
            doc, grade = doc.strip(), grade.strip()
            if not colon or not doc or not re.fullmatch(r"-?\d+", grade):
                raise forms.ValidationError(
                    'Line %(line)s: write "document id: grade", the grade a whole number.',
                    code="invalid",
                    params={"line": number},
                )
            grades[doc] = int(grade)
        return grades


class StoredJSONField(forms.JSONField):
    """A JSON form field that reads JSON as the API does: NUL, lone surrogates, NaN, Infinity, numbers out of
    range and absurd nesting are field errors, not rows that fail to store (PostgreSQL) or to read (SQLite)."""

    def to_python(self, value: Any) -> Any:
        text = value if isinstance(value, str) and not self.disabled else ""
        if text not in self.empty_values and (problem := _json_text_problem(text)):
            raise forms.ValidationError(problem, code="invalid")
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        # Refused input is shown back as typed: decoded, a lone surrogate would break the page's encoding.
        if not self.disabled and isinstance(data, str) and _json_text_problem(data):
            return InvalidJSONInput(data)
        return super().bound_data(data, initial)


def _json_text_problem(text: str) -> str | None:
    for found, problem in (
        (find_nul(text), "NUL characters are not allowed"),
        (find_lone_surrogate(text), "lone surrogates are not valid Unicode"),
    ):
        if found is not None:
            return f"Line {found[0]}, column {found[1]}: {problem}."
    try:
        json_loads(text)
    except json.JSONDecodeError:
        return None  # Django's own "Enter a valid JSON."
    except JsonValueError as exc:
        return f"Line {exc.line}, column {exc.column}: {exc.message}."
    return None


class GoldenEntryAdminForm(forms.ModelForm):
    expected_document_ids = StringListField(
        label="Expected document ids", help_text="One document id (external id) per line."
    )
    tags = StringListField(
        split_commas=True,
        widget=forms.TextInput(attrs={"class": "vTextField"}),
        # "|" separates tags in tags_index, which the tag filter searches.
        forbidden="|",
        help_text="Comma-separated.",
    )

    class Meta:
        model = GoldenEntry
        fields = ADMIN_FORM_FIELDS
        field_classes = {"grades": StoredJSONField}

    def _collection(self) -> Collection | None:
        if "collection" in self.fields:
            return self.cleaned_data.get("collection")
        return self.instance.collection if self.instance.collection_id else None

    def clean_grades(self) -> Any:
        # The service's rule (goldenset.text.grades_problem) decides, in clean(): JSON null is "no grades".
        grades = self.cleaned_data.get("grades")
        return {} if grades is None else grades

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        collection = self._collection()
        if collection is None or self.errors:
            return cleaned
        # The service's own validation, on a copy: the one definition of a valid entry.
        candidate = copy.copy(self.instance)
        candidate.collection = collection
        for name in ENTRY_INPUT_FIELDS:
            setattr(candidate, name, cleaned.get(name, getattr(candidate, name)))
        try:
            services.golden_entry_check(entry=candidate)
        except EvalsiteError as exc:
            message = exc.message.split(": ", 1)[-1]  # drop the API's "entries[0].field: " prefix
            field = _ERROR_FIELDS.get(exc.code, exc.details.get("field"))
            self.add_error(field, message[:1].upper() + message[1:])
        return cleaned


# Where a service error belongs on the form (errors that name no field go on top of it).
_ERROR_FIELDS = {
    "empty-question": "question",
    "duplicate-question": "question",
    "duplicate-key": "key",
    "unknown-documents": "expected_document_ids",
}


class CollectionAdminForm(forms.ModelForm):
    class Meta:
        model = Collection
        fields = ("tenant", "slug", "name", "grade_scale")
        help_texts = {
            "grade_scale": "The scale relevance grades are given on. Changing it converts every grade its golden "
            "set stores (goldenset.vocabulary.grade_scales); the dashboard's collection page previews the change."
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["grade_scale"].required = False  # left out: the collection's own, or the default

    def clean_grade_scale(self) -> str:
        return self.cleaned_data.get("grade_scale") or self.instance.grade_scale

    def clean_slug(self) -> str:
        slug = self.cleaned_data["slug"]
        if problem := collection_id_problem(slug):
            raise forms.ValidationError(f"A collection id {problem}.")
        return slug


class DocumentAdminForm(forms.ModelForm):
    supersedes = StringListField(help_text="External ids this document replaces, one per line.")

    class Meta:
        model = Document
        fields = (
            "collection",
            "external_id",
            "title",
            "source",
            "metadata",
            "valid_from",
            "valid_until",
            "supersedes",
            "last_verified",
        )
        field_classes = {"metadata": StoredJSONField}

    def clean_external_id(self) -> str:
        external_id = self.cleaned_data["external_id"]
        if problem := document_id_problem(external_id):
            raise forms.ValidationError(f"A document id {problem}.")
        return external_id

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "collection" in self.fields:
            collection = cleaned.get("collection")
        else:
            collection = self.instance.collection if self.instance.collection_id else None
        external_id = cleaned.get("external_id")
        if collection is not None and external_id:
            clash = (
                Document.objects.filter(collection=collection, external_id=external_id)
                .exclude(pk=self.instance.pk)
                .exists()
            )
            if clash:
                self.add_error(
                    "external_id", f"Collection {collection.slug} already has a document {external_id!r}."
                )
        return cleaned
