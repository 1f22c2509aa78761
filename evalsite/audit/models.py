from __future__ import annotations

import json

from django.db import models


class AuditAction(models.TextChoices):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    INGEST = "ingest", "ingest (documents added or replaced)"
    REVOKE = "revoke"
    LAUNCH = "launch", "launch (a job queued)"


class PlatformAuditObject(models.TextChoices):
    """The platform's own objects; each domain app registers its own set (register_audit_objects)."""

    API_KEY = "api-key", "API key"
    JOB = "job"
    MEMBERSHIP = "membership"


_OBJECT_LABELS: dict[str, str] = {}


def register_audit_objects(objects: type[models.TextChoices]) -> None:
    """Make an app's kinds of object known to the trail (AppConfig.ready); an event naming a kind nobody
    registered is refused (evalsite.audit.services), so every object_type stored has one owner."""
    for value, label in objects.choices:
        owner = _OBJECT_LABELS.setdefault(value, label)
        if owner != label:
            raise ValueError(f"audit object {value!r} registered twice ({owner!r}, {label!r})")


def audit_object_registered(value: str) -> bool:
    return value in _OBJECT_LABELS


def audit_objects() -> list[tuple[str, str]]:
    """(value, label) of every registered kind of object, by value (the admin's filter lists them)."""
    return sorted(_OBJECT_LABELS.items())


class AuditEvent(models.Model):
    """Who changed what, when: one row per write, written by the service that makes the write, in its
    transaction (evalsite.audit.services), so a write that fails leaves no event and no write goes unrecorded.
    """

    tenant = models.ForeignKey("tenancy.Tenant", on_delete=models.CASCADE, related_name="audit_events")
    # The collection by slug (kept after it is deleted) and by uid (a collection renamed, or deleted and
    # created again under the same slug, is told apart); empty for writes outside a collection (API keys).
    collection_slug = models.CharField(max_length=200, blank=True, default="")
    collection_uid = models.UUIDField(null=True, blank=True)
    # One of the registered kinds of object (register_audit_objects).
    object_type = models.CharField(max_length=50)
    object_id = models.CharField(
        max_length=300,
        db_index=True,
        help_text="The entry or job id, the collection slug, the document id, the API key's prefix.",
    )
    action = models.CharField(max_length=20, choices=AuditAction.choices)
    actor = models.CharField(
        max_length=300,
        help_text='"user:<username>" (dashboard, admin), "api-key:<prefix>" (API; "user:<username> api-key:<prefix>" '
        'for a key with a person), "command:<name>" '
        '(management commands), "job" (a job that recorded no actor).',
    )
    changes = models.JSONField(
        default=dict,
        blank=True,
        help_text="Field -> [before, after] on update; a snapshot on create and delete; counts on ingest.",
    )
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "goldenset_auditevent"
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "collection_uid", "-at"], name="audit_collection_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.object_type} {self.object_id}"

    @property
    def object_label(self) -> str:
        return _OBJECT_LABELS.get(self.object_type, self.object_type)

    def summary(self, length: int = 120) -> str:
        """One line for tables: the fields an update changed, else what the snapshot or counts say."""
        changes = self.changes if isinstance(self.changes, dict) else {}
        if self.action == AuditAction.UPDATE:
            return "; ".join(
                f"{name}: {_short(pair[0], 60)} → {_short(pair[1], 60)}"
                if isinstance(pair, list) and len(pair) == 2
                else f"{name}: {_short(pair, 60)}"
                for name, pair in changes.items()
            )
        if self.action == AuditAction.INGEST:
            counts = ("received", "created", "updated", "unchanged")
            text = ", ".join(f"{changes[k]} {k}" for k in counts if k in changes)
            return _short(f"{text} ({changes['source']})" if changes.get("source") else text, length)
        for name in ("question", "title", "name", "kind"):
            if changes.get(name):
                return _short(changes[name], length)
        return ""


def _short(value: object, length: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= length else text[: length - 1] + "…"
