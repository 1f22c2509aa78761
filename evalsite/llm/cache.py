"""The chat client's call cache in the database, shared by every process (web, workers, machines)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from django.db import connection

from evalsite.llm.models import LLMCall


class DbCallCache:
    """evalsite.llm.client.CallCache over the LLMCall table, for clients called from worker threads.

    Reads go to the database from whichever thread asks (a thread other than the one that made the cache
    closes its connection after each read, so a thread pool leaves none open). Writes are buffered and
    written by `flush()`, which the owner calls from its own thread (between pages, at the end): the worker
    threads never write, so they never wait on the owner's transaction or on SQLite's write lock. A flush that
    loses a race to another process is a no-op: both stored the answer to the same call."""

    def __init__(self) -> None:
        self._owner = threading.get_ident()
        self._pending: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Mapping[str, Any] | None:
        with self._lock:
            pending = self._pending.get(key)
        if pending is not None:
            return pending
        try:
            row = (
                LLMCall.objects.filter(key=key)
                .values("text", "model", "prompt_tokens", "completion_tokens", "finish_reason")
                .first()
            )
        finally:
            if threading.get_ident() != self._owner:
                connection.close()
        if row is None:
            return None
        return {**row, "finish_reason": row["finish_reason"] or None}

    def put(self, key: str, record: Mapping[str, Any]) -> None:
        with self._lock:
            self._pending[key] = dict(record)

    def flush(self) -> int:
        """Write the buffered answers; returns how many were buffered."""
        with self._lock:
            pending, self._pending = self._pending, {}
        LLMCall.objects.bulk_create(
            [
                LLMCall(
                    key=key,
                    model=str(record.get("model") or "")[:300],
                    text=str(record.get("text") or ""),
                    prompt_tokens=_count(record.get("prompt_tokens")),
                    completion_tokens=_count(record.get("completion_tokens")),
                    finish_reason=str(record.get("finish_reason") or "")[:50],
                )
                for key, record in pending.items()
            ],
            ignore_conflicts=True,
        )
        return len(pending)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
