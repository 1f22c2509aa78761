from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from evalsite.tenancy.roles import Role

ROLE_CHOICES = [(role.value, role.value) for role in Role]


def role_field(help_text: str) -> models.CharField:
    """A key's or a membership's role in its tenant; the least one unless said otherwise."""
    return models.CharField(
        max_length=20, choices=ROLE_CHOICES, default=Role.VIEWER.value, help_text=help_text
    )


# The tables keep the names they had when these models lived in goldenset (goldenset migration 0009 moved
# them without touching a row).


class Cluster(models.Model):
    slug = models.CharField(max_length=100, unique=True, help_text="The cluster_id clients send.")
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "goldenset_cluster"
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Tenant(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="tenants")
    slug = models.CharField(max_length=100, help_text="The tenant_id clients send.")
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "goldenset_tenant"
        ordering = ["cluster__slug", "slug"]
        constraints = [models.UniqueConstraint(fields=["cluster", "slug"], name="tenant_unique_per_cluster")]

    def __str__(self) -> str:
        return f"{self.cluster.slug}/{self.slug}"


def hash_api_key(secret: str) -> str:
    # The secret is 256 random bits, so a plain SHA-256 is safe and keeps per-request lookup O(1).
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKey(models.Model):
    PREFIX_LENGTH = 12

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(
        max_length=PREFIX_LENGTH, editable=False, help_text="Shown to identify the key."
    )
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    role = role_field(
        "What the key may do in its tenant (docs/teams.md). Keys made before roles are admin keys."
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="api_keys",
        help_text="The person behind the key: the audit trail names them, and only a key with a person "
        "judges live. Blank for a machine's key (a CI job).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Refused from then on; blank: never.")
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "goldenset_apikey"
        verbose_name = "API key"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'})"

    @staticmethod
    def new_secret() -> str:
        return "esk_" + secrets.token_urlsafe(32)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def state(self) -> str:
        return "revoked" if self.revoked_at is not None else "expired" if self.is_expired else "active"


class Membership(models.Model):
    """A dashboard user's access to a tenant, with its role there (superusers are admins of every tenant)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = role_field("What the user may do in this tenant (docs/teams.md).")
    from_sign_in = models.BooleanField(
        default=False,
        help_text="Granted by the identity provider's groups at sign-in (and taken back at a sign-in without "
        "them); False: added by hand.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "goldenset_membership"
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant}"
