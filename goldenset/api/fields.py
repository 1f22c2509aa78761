from __future__ import annotations

from datetime import datetime, time, timedelta
from datetime import timezone as dt_timezone

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
            moment = parse_datetime(text)
            day = None if moment else parse_date(text)
        except ValueError:
            self.fail("invalid", value=data)
        if moment is not None:
            return moment if moment.tzinfo else moment.replace(tzinfo=dt_timezone.utc)
        if day is None:
            self.fail("invalid", value=data)
        start = datetime.combine(day, time.min, tzinfo=dt_timezone.utc)
        return start + timedelta(days=1, microseconds=-1) if self.end_of_day else start

    def to_representation(self, value: datetime) -> str:
        return value.isoformat().replace("+00:00", "Z")


@extend_schema_field(OpenApiTypes.STR)
class PageTextField(serializers.Field):
    """A page: a string, or an object {"text": ...}."""

    default_error_messages = {"invalid": 'A page must be a string or an object with a "text" string.'}

    def to_internal_value(self, data) -> str:
        if isinstance(data, dict):
            data = data.get("text")
        if not isinstance(data, str):
            self.fail("invalid")
        return data


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
