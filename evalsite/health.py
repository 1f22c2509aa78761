"""The service's health: the database, the broker and the workers' heartbeats, for /healthz and the dashboard.

Each part is "ok" or "down" with a message naming what failed (and, when a check raised, the exception's text
as "error"); the whole is "ok" only when every part is. Exception text names hosts, ports, database names and
file paths, so `public()` keeps only the status names and timings, for callers who are not staff.
Workers are alive when one beat within 3 heartbeats (evalsite.jobs.worker beats every
EVALSITE_JOB_HEARTBEAT_SECONDS). With django-q2's sync mode (tests) jobs run inline: no worker is needed.
The dashboard reads a copy at most STATUS_TTL seconds old, so a page view costs no broker round trip.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

STATUS_TTL = 5.0
BROKER_TIMEOUT = 2.0  # seconds: a broker that does not answer within this is down


def _timed(check) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        part = check()
    except Exception as exc:  # every failure is a "down" with its reason, never a 500
        part = {"status": "down", "error": f"{type(exc).__name__}: {exc}".strip()}
    part["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return part


def _database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {"status": "ok", "engine": connection.vendor}


def _broker() -> dict[str, Any]:
    from django_q.brokers import get_broker  # late: django_q reads Q_CLUSTER when it is imported

    redis_url = str(settings.Q_CLUSTER.get("redis") or "")
    if not redis_url:
        broker = get_broker()
        return {"status": "ok", "kind": "database", "queued": broker.queue_size()}
    import redis  # only with the Redis broker

    client = redis.Redis.from_url(
        redis_url, socket_connect_timeout=BROKER_TIMEOUT, socket_timeout=BROKER_TIMEOUT
    )
    try:
        client.ping()
        queued = client.llen(get_broker().list_key)
    finally:
        client.close()
    return {"status": "ok", "kind": "redis", "queued": queued}


def _workers() -> dict[str, Any]:
    # Late: django_q reads Q_CLUSTER when it is imported; /healthz is routed before the apps are ready.
    from django_q.conf import Conf

    from evalsite.jobs.models import Worker

    if Conf.SYNC:
        return {"status": "ok", "alive": 0, "message": "jobs run inline (sync mode)"}
    window = 3 * settings.EVALSITE_JOB_HEARTBEAT_SECONDS
    now = timezone.now()
    beats = list(
        Worker.objects.filter(beat_at__gte=now - timedelta(seconds=window)).values_list("beat_at", flat=True)
    )
    if not beats:
        last = Worker.objects.order_by("-beat_at").values_list("beat_at", flat=True).first()
        since = f"; the last beat was {(now - last).total_seconds():.0f} s ago" if last else ""
        return {
            "status": "down",
            "alive": 0,
            "message": f"no worker beat in the last {window} s{since}: is `manage.py worker` running?",
        }
    return {
        "status": "ok",
        "alive": len(beats),
        "last_beat_age_s": round((now - max(beats)).total_seconds(), 1),
    }


def system_health() -> dict[str, Any]:
    parts = {"database": _timed(_database)}
    if parts["database"]["status"] == "ok":
        parts["broker"] = _timed(_broker)
        parts["workers"] = _timed(_workers)
    else:
        for name in ("broker", "workers"):  # both are read through the database (or need it to mean anything)
            parts[name] = {"status": "unknown", "message": "not checked: the database is down"}
    failing = [name for name, part in parts.items() if part["status"] != "ok"]
    return {"status": "ok" if not failing else "down", "failing": failing, "checks": parts}


def public(report: dict[str, Any]) -> dict[str, Any]:
    """The report without its details: the overall status, the failing parts, each part's status and timing.
    No engine, counts, messages or exception text (a connection error names the host, port and database)."""
    return {
        "status": report["status"],
        "failing": list(report["failing"]),
        "checks": {
            name: {key: part[key] for key in ("status", "ms") if key in part}
            for name, part in report["checks"].items()
        },
    }


_cache: dict[str, Any] = {}
_cache_lock = threading.Lock()


def cached_health() -> dict[str, Any]:
    """system_health(), at most STATUS_TTL seconds old (per process)."""
    with _cache_lock:
        if _cache and time.monotonic() - _cache["at"] < STATUS_TTL:
            return _cache["value"]
    value = system_health()
    with _cache_lock:
        _cache.update(at=time.monotonic(), value=value)
    return value


def status_line(health: dict[str, Any], *, detail: bool = False) -> list[dict[str, str]]:
    """The dashboard's status line: one short phrase per part; exception text only with `detail` (staff)."""
    checks = health["checks"]
    items = []
    database = checks["database"]
    items.append(
        {"name": "database", "status": database["status"], "text": "Database " + _word(database, detail)}
    )
    broker = checks["broker"]
    kind = f" ({broker['kind']})" if "kind" in broker else ""
    items.append(
        {"name": "broker", "status": broker["status"], "text": f"Broker{kind} " + _word(broker, detail)}
    )
    workers = checks["workers"]
    if workers["status"] == "ok" and workers.get("alive"):
        text = f"Workers: {workers['alive']} alive, last beat {workers['last_beat_age_s']:.0f} s ago"
    elif workers["status"] == "ok":
        text = "Workers: jobs run inline"
    else:
        text = "Workers " + _word(workers, detail)
    items.append({"name": "workers", "status": workers["status"], "text": text})
    return items


def _word(part: dict[str, Any], detail: bool) -> str:
    if part["status"] == "ok":
        return "ok"
    said = [part.get("message", ""), part.get("error", "") if detail else ""]
    return ": ".join([part["status"], *(text for text in said if text)])
