from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta

from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from goldenset.text import (
    MAX_COLLECTION_ID_CHARS,
    MAX_EXPECTED_DOCUMENTS,
    MAX_ID_CHARS,
    MAX_QUESTION_CHARS,
    MAX_REFERENCE_ANSWER_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    collection_id_problem,
    document_id_problem,
    key_problem,
    tag_problem,
)


@extend_schema_field(OpenApiTypes.DATETIME)
class TemporalField(serializers.Field):
    """An ISO date or datetime. A date-only value is the start of that day, or with end_of_day its last instant,
    so a date-only valid_until covers that whole day. Naive datetimes are UTC."""

    default_error_messages = {"invalid": "Expected an ISO 8601 date or datetime, got {value!r}."}

    def __init__(self, *, end_of_day: bool = False, **kwargs):
        self.end_of_day = end_of_day
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> datetime:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        text = data.strip()
        try:
            # The date first: parse_datetime also reads "2024-06-30" (as midnight), which would lose end_of_day.
            day = parse_date(text)
            moment = None if day else parse_datetime(text)
            if moment is not None:
                # Stored in UTC: an instant that leaves years 1..9999 there ("0001-01-01T00:00:00+05:00")
                # overflows (SQLite) or is stored and then unreadable (PostgreSQL).
                return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
        except (ValueError, OverflowError):
            self.fail("invalid", value=data)
        if day is None:
            self.fail("invalid", value=data)
        start = datetime.combine(day, time.min, tzinfo=UTC)
        return start + timedelta(days=1, microseconds=-1) if self.end_of_day else start

    def to_representation(self, value: datetime) -> str:
        return value.isoformat().replace("+00:00", "Z")


@extend_schema_field(OpenApiTypes.STR)
class PageTextField(serializers.Field):
    """A page: a string, or an object {"text": ...}."""

    default_error_messages = {
        "invalid": 'A page must be a string or an object with a "text" string.',
        # As DRF's CharField (which `text` uses): PostgreSQL cannot store NUL in a text column.
        "null_characters": "Null characters are not allowed.",
    }

    def to_internal_value(self, data) -> str:
        if isinstance(data, dict):
            data = data.get("text")
        if not isinstance(data, str):
            self.fail("invalid")
        if "\x00" in data:
            self.fail("null_characters")
        return data


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers (DRF's CharField turns 42 into "42"): a question must be text."""

    default_error_messages = {"not_a_string": "Not a valid string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class StringListField(serializers.ListField):
    """A list of non-empty strings; a single string is taken as a one-item list.

    Absent, it is an empty list on create; a partial serializer (PATCH) skips it, so an edit never clears it.
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("child", serializers.CharField(max_length=MAX_ID_CHARS))
        kwargs.setdefault("default", list)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = [data]
        return super().to_internal_value(data)


def _rule(problem_of: Callable[[str], str | None], prefix: str, max_length: int) -> Callable[[str], None]:
    """A validator from one of goldenset.text's *_problem rules (the length is the CharField's own check)."""

    def validate(value: str) -> None:
        if len(value) <= max_length and (problem := problem_of(value)):
            raise serializers.ValidationError(f"{prefix} {problem}.")

    return validate


def _char_field(max_length: int, rule: Callable[[str], None], **kwargs) -> serializers.CharField:
    return serializers.CharField(max_length=max_length, validators=[rule], **kwargs)


def collection_id_field(**kwargs) -> serializers.CharField:
    """A new collection's id: one URL path segment, so no "/", "." or "..", and no control characters."""
    limit = MAX_COLLECTION_ID_CHARS
    return _char_field(limit, _rule(collection_id_problem, "A collection id", limit), **kwargs)


def document_id_field(**kwargs) -> serializers.CharField:
    """A document's id: it ends a URL path, so no "." or ".." segments, no leading or trailing "/"."""
    return _char_field(MAX_ID_CHARS, _rule(document_id_problem, "A document id", MAX_ID_CHARS), **kwargs)


def key_field(**kwargs) -> serializers.CharField:
    """A golden entry's key (its client id): no control characters."""
    return _char_field(MAX_ID_CHARS, _rule(key_problem, "A key", MAX_ID_CHARS), **kwargs)


def tag_field() -> serializers.CharField:
    """A tag: no "|" (it separates tags in the index the tag filter searches)."""
    return _char_field(MAX_TAG_CHARS, _rule(tag_problem, "A tag", MAX_TAG_CHARS))


# A golden entry's sizes: goldenset.text's limits, which the service enforces for every writer; here they are
# reported first, per field, and published in the OpenAPI schema (maxLength, maxItems).


def question_field(**kwargs) -> StrictCharField:
    """A golden question, kept as sent (the service strips it and refuses a blank one)."""
    return StrictCharField(max_length=MAX_QUESTION_CHARS, allow_blank=True, trim_whitespace=False, **kwargs)


def reference_answer_field(**kwargs) -> serializers.CharField:
    return serializers.CharField(max_length=MAX_REFERENCE_ANSWER_CHARS, allow_blank=True, **kwargs)


def expected_documents_field(**kwargs) -> StringListField:
    return StringListField(max_length=MAX_EXPECTED_DOCUMENTS, **kwargs)


def tags_field(**kwargs) -> StringListField:
    return StringListField(child=tag_field(), max_length=MAX_TAGS, **kwargs)
