"""Configuration presets by name: a configuration `{"preset": "tuned bm25", ...}` is the preset's configuration
(a study's winner, saved) with the configuration's other fields over it, labelled with the preset's name unless
it sets a label. Expanded before a configuration is read (evaluation.configs), so a preset is checked as
strictly as a configuration sent whole; the runs store what ran, never the name alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import Tenant
from evaluation.models import ConfigPreset, EvaluationAuditObject
from evaluation.request_fields import field_error, field_path

PRESET = "preset"
NAMED = 20  # presets an unknown-preset error lists


def with_preset(tenant: Tenant, raw: Any, prefix: str) -> Any:
    """`raw` with its preset expanded (anything else as it is: the configuration's reader refuses it)."""
    if not isinstance(raw, Mapping) or PRESET not in raw:
        return raw
    field = field_path(prefix, PRESET)
    name = raw[PRESET]
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise field_error("validation-error", field, "expected a preset's name.")
    preset = ConfigPreset.objects.filter(tenant=tenant, name=name.strip()).first()
    if preset is None:
        names = list(ConfigPreset.objects.filter(tenant=tenant).values_list("name", flat=True)[:NAMED])
        known = f"; presets: {', '.join(names)}" if names else "; the tenant has none (save a study's winner)"
        raise field_error(
            "unknown-preset", field, f"no preset named {name.strip()!r}{known}.", available=names
        )
    overrides = {key: value for key, value in raw.items() if key != PRESET}
    return {**preset.config, "label": preset.name, **overrides}


def with_presets(tenant: Tenant, raw: Any, prefix: str = "configs") -> Any:
    """A list of configurations, each with its preset expanded (`configs[i].preset` named in errors)."""
    if not isinstance(raw, list):
        return raw
    return [with_preset(tenant, item, f"{prefix}[{i}]") for i, item in enumerate(raw)]


def preset_create(
    *, tenant: Tenant, name: str, config: Mapping[str, Any], actor: str, collection=None, study=None
) -> ConfigPreset:
    """A configuration saved under a name of the tenant's (a study's winner, a workbench column), audited; a
    name in use is a 409 `preset-exists`. The configuration is stored without its label: the name labels it."""
    name = name.strip()
    if not name or len(name) > 100:
        raise field_error("validation-error", "name", "a preset's name is 1 to 100 characters.")
    stored = {k: v for k, v in config.items() if k != "label"}
    try:
        with transaction.atomic():
            preset = ConfigPreset.objects.create(
                tenant=tenant, name=name, config=stored, study=study, created_by=actor
            )
            audit_record(
                tenant=tenant, collection=collection, action=AuditAction.CREATE,
                object_type=EvaluationAuditObject.PRESET, object_id=preset.pk, actor=actor,
                changes={"name": name, **({"study": str(study.pk)} if study is not None else {})},
            )  # fmt: skip
    except IntegrityError:
        raise EvalsiteError(
            "preset-exists", f"name: a preset named {name!r} exists already.", status=409,
            details={"field": "name"},
        ) from None  # fmt: skip
    return preset
