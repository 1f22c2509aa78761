"""API calls rate-limited per key (docs/teams.md, "Limits"): EVALSITE_API_RATE calls a minute for every key, and
the costly operations (evaluations, studies, generation, imports; a view lists its costly methods in `costly`)
on a tighter budget of their own, EVALSITE_API_COSTLY_RATE a minute. Past it: 429 `throttled` in the error
envelope, with Retry-After (the seconds to the next minute) in the header and in `details`.

The counts are fixed one-minute windows. With Redis (EVALSITE_REDIS_URL) they are Redis counters (INCR and an
expiry; plain integers, nothing that runs code when read), shared by every process and machine. Without Redis
(one machine, SQLite), each web process counts alone, on its share of the budget (the budget divided by the
web processes, rounded up), so the whole is never more than the budget. Redis out of reach does not refuse
the API: the call is let through and the failure logged (the broker's own health says Redis is down)."""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Any

from django.conf import settings
from rest_framework.throttling import BaseThrottle

from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import ApiKey

logger = logging.getLogger(__name__)

WINDOW = 60  # seconds
_local: dict[str, int] = {}
_local_lock = threading.Lock()
_redis: Any = None


def _redis_client() -> Any:
    global _redis
    if _redis is None:
        import redis  # only with Redis configured

        _redis = redis.Redis.from_url(
            settings.EVALSITE_REDIS_URL, socket_connect_timeout=0.5, socket_timeout=0.5
        )
    return _redis


def hit(name: str, budget: int, now: float | None = None) -> tuple[bool, int]:
    """Count one call under `name` in the current minute: (allowed, seconds until the next minute)."""
    now = time.time() if now is None else now
    window = int(now // WINDOW)
    wait = max(1, math.ceil((window + 1) * WINDOW - now))
    counter = f"evalsite:rate:{name}:{window}"
    if settings.EVALSITE_REDIS_URL:
        try:
            client = _redis_client()
            with client.pipeline() as pipe:
                pipe.incr(counter)
                pipe.expire(counter, WINDOW * 2)
                count = int(pipe.execute()[0])
        except Exception:  # Redis away: the API stays up (see the module's docstring)
            logger.warning("rate limit not counted: Redis is out of reach", exc_info=True)
            return True, wait
        return count <= budget, wait
    share = math.ceil(budget / max(1, settings.EVALSITE_WEB_PROCESSES))
    with _local_lock:
        for stale in [k for k in _local if not k.endswith(f":{window}")]:
            del _local[stale]
        _local[counter] = count = _local.get(counter, 0) + 1
    return count <= share, wait


class KeyRateThrottle(BaseThrottle):
    def allow_request(self, request, view) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return True  # no key: refused as unauthenticated, not counted
        checks = [("all", settings.EVALSITE_API_RATE)]
        if (request.method or "").upper() in getattr(view, "costly", ()):
            checks.append(("costly", settings.EVALSITE_API_COSTLY_RATE))
        for scope, budget in checks:
            allowed, wait = hit(f"{key.prefix}:{scope}", budget)
            if not allowed:
                what = (
                    "costly calls (evaluations, studies, generation, imports)"
                    if scope == "costly"
                    else "calls"
                )
                raise EvalsiteError(
                    "throttled",
                    f"This key made more than {budget} {what} this minute; retry after {wait} s.",
                    details={"scope": scope, "limit_per_minute": budget, "retry_after": wait},
                    status=429,
                    retry_after=wait,
                )
        return True
