"""gunicorn's server hooks for `manage.py serve` (passed as --config python:evalsite.gunicorn_hooks)."""

from __future__ import annotations

import os


def when_ready(server) -> None:
    """In the master, with the application loaded (--preload) and before any web process is forked: warm the
    search indexes and kernels once, for every process (evaluation.warmup)."""
    # Late: gunicorn reads this file before Django is set up; the hook runs after.
    from django.conf import settings

    from evaluation.warmup import warm_up

    if settings.EVALSITE_WARM_COLLECTIONS:
        try:
            found = warm_up(collections=settings.EVALSITE_WARM_COLLECTIONS)
        except Exception as exc:  # the database down, say: the server starts cold and answers what it can
            server.log.warning("evalsite: not warmed (%s: %s)", type(exc).__name__, exc)
            return
        server.log.info(
            "evalsite: warmed %d collection index(es) in %.0f ms (pid %d)",
            len(found["collections"]),
            found["ms"],
            os.getpid(),
        )
