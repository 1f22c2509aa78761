"""Secret values at rest (targets' secret headers): Fernet tokens from the `cryptography` package. Plain Python.

Keys are urlsafe base64 of 32 bytes (`Fernet.generate_key()`). The first key encrypts; every key decrypts, so
a key is rotated by putting the new one first, running `manage.py rotate_target_secrets` (which re-encrypts
every stored value with the first key), then dropping the old one. Without configured keys, one key is derived
from SECRET_KEY (so rotating SECRET_KEY without keys configured makes stored secrets unreadable: they must be
entered again).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from evalsite.errors import EvalsiteError


def derived_key(secret_key: str) -> bytes:
    """A Fernet key derived from a secret (SECRET_KEY) with a purpose of its own."""
    digest = hashlib.sha256(b"evalsite target secrets\x00" + secret_key.encode()).digest()
    return base64.urlsafe_b64encode(digest)


class SecretBox:
    def __init__(self, keys: Sequence[bytes | str]):
        if not keys:
            raise ValueError("at least one key")
        try:
            self._fernet = MultiFernet([Fernet(key) for key in keys])
        except (ValueError, TypeError) as exc:
            raise ValueError(f"a target secret key is not a Fernet key ({exc})") from None

    def seal(self, values: Mapping[str, str]) -> str:
        """An encrypted token of the values ("" for none)."""
        if not values:
            return ""
        return self._fernet.encrypt(json.dumps(dict(values), sort_keys=True).encode()).decode()

    def open(self, token: str) -> dict[str, str]:
        if not token:
            return {}
        try:
            return json.loads(self._fernet.decrypt(token.encode()))
        except InvalidToken:
            raise _unreadable() from None

    def rotate(self, token: str) -> str:
        """The same values encrypted with the first key."""
        if not token:
            return ""
        try:
            return self._fernet.rotate(token.encode()).decode()
        except InvalidToken:
            raise _unreadable() from None


def _unreadable() -> EvalsiteError:
    return EvalsiteError(
        "target-secrets-unreadable",
        "The target's secret headers cannot be decrypted with the configured keys "
        "(EVALSITE_TARGET_KEYS, or SECRET_KEY when none is set): enter them again.",
        status=409,
    )
