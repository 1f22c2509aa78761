from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


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
        except ValueError:
            self.fail("invalid", value=data)
        if moment is not None:
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
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
    """A list of non-empty strings; a single string is taken as a one-item list."""

    def __init__(self, **kwargs):
        kwargs.setdefault("child", serializers.CharField(max_length=300))
        kwargs.setdefault("default", list)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = [data]
        return super().to_internal_value(data)
