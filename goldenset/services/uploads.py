"""Files the dashboard previews and then imports: held in the database between the two requests, so that the
import finds the file whichever machine (or process) serves it; one that waits longer than UPLOAD_TTL goes."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from goldenset.models import Collection, StagedUpload

UPLOAD_TTL = timedelta(hours=1)


def upload_stage(
    *, collection: Collection, name: str, data: bytes, qrels: bytes | None, options: dict[str, Any]
) -> str:
    """Hold a previewed file for its import; returns its token. Files left longer than UPLOAD_TTL are removed."""
    StagedUpload.objects.filter(created_at__lt=timezone.now() - UPLOAD_TTL).delete()
    token = secrets.token_hex(16)
    StagedUpload.objects.create(
        token=token, collection=collection, name=name[:300], options=options, data=data, qrels=qrels
    )
    return token


def upload_take(*, collection: Collection, token: str) -> StagedUpload | None:
    """The staged file of this token and collection, removed as it is taken (None: unknown, another
    collection's, or expired)."""
    with transaction.atomic():
        staged = (
            StagedUpload.objects.select_for_update()
            .filter(token=token, collection=collection, created_at__gte=timezone.now() - UPLOAD_TTL)
            .first()
        )
        if staged is not None:
            StagedUpload.objects.filter(pk=staged.pk).delete()
    return staged
