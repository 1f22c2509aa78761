"""`manage.py rotate_target_secrets`: re-encrypt every target's secret headers with the first key.

    EVALSITE_TARGET_KEYS=<new>,<old> manage.py rotate_target_secrets

Rotating the key: put the new key first in EVALSITE_TARGET_KEYS (the old one after it, so stored values still
decrypt), run this, then drop the old key. Values are decrypted and sealed again in one transaction; a value
no configured key opens stops the command (exit 2) with the target named, and nothing changes.
"""

from __future__ import annotations

from django.db import transaction

from evalsite.errors import EvalsiteError
from evalsite.management.base import EvalsiteCommand
from evaluation.models import Target
from evaluation.targets.services import secret_box


class Command(EvalsiteCommand):
    help = "Re-encrypt every target's secret headers with the first key of EVALSITE_TARGET_KEYS."
    operator_only = "the operator's: re-encrypts every tenant's target secrets with the server's keys"

    def handle(self, *args, **options) -> None:
        box = secret_box()
        rotated = 0
        with transaction.atomic():
            for target in Target.objects.select_for_update().exclude(secret_headers_sealed="").order_by("pk"):
                try:
                    target.secret_headers_sealed = box.rotate(target.secret_headers_sealed)
                except EvalsiteError as exc:
                    raise EvalsiteError(
                        exc.code,
                        f"target {target.name!r} (tenant {target.tenant_id}): {exc.message}",
                        status=409,
                    ) from None
                target.save(update_fields=["secret_headers_sealed"])
                rotated += 1
        self.stdout.write(f"re-encrypted the secret headers of {rotated} targets with the first key")
