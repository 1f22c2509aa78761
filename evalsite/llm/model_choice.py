"""Which chat model a request gets: the one it names, the configured default, or the offline mode."""

from __future__ import annotations

from django.conf import settings

from evalsite.errors import EvalsiteError


def resolve_model(requested: str | None, *, field: str, offline: str) -> str | None:
    """The model for a request's `field`, or None for the offline mode (no endpoint configured, or the request
    named `offline`). Naming a model when no endpoint is configured is an error, never a silent switch to the
    offline mode; so is asking for the default model when none is set."""
    name = (requested or "").strip()
    if name == offline:
        return None
    if not settings.EVALSITE_LLM_BASE_URL:
        if name:
            raise EvalsiteError(
                "llm-not-configured",
                f'{field}: "{name}" needs a chat endpoint and none is configured (EVALSITE_LLM_BASE_URL); '
                f'omit it or send "{offline}" for the offline mode.',
                details={"field": field},
            )
        return None
    chosen = name or settings.EVALSITE_LLM_MODEL
    if not chosen:
        raise EvalsiteError(
            "validation-error",
            f"{field}: no model named and EVALSITE_LLM_MODEL is not set.",
            details={"field": field},
        )
    return chosen
