"""The one API authentication: `Authorization: Bearer <key>`, looked up by the key's hash."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from evalsite.tenancy.models import ApiKey, hash_api_key

# last_used_at is written at most this often per key, so a busy client does not turn reads into writes.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiKeyPrincipal:
    """request.user for API calls: the key's tenant is the only thing it can see."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key
        self.tenant = api_key.tenant

    def __str__(self) -> str:
        return f"api-key:{self.api_key.prefix}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <api key>'.")
        try:
            key = ApiKey.objects.select_related("tenant__cluster", "user").get(
                key_hash=hash_api_key(secret.strip())
            )
        except ApiKey.DoesNotExist:
            raise exceptions.AuthenticationFailed("Unknown API key.") from None
        if key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This API key has been revoked.")
        now = timezone.now()
        # Looked up on every request, so a key revoked or expired is refused at once on every process and
        # machine (no cache of keys to wait out).
        if key.is_expired:
            raise exceptions.AuthenticationFailed(
                f"This API key expired at {key.expires_at:%Y-%m-%d %H:%M} UTC."
            )
        if key.last_used_at is None or now - key.last_used_at > _LAST_USED_RESOLUTION:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return ApiKeyPrincipal(key), key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="lmkit"'
