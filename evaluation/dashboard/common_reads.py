"""What every dashboard page shares: the tenants a user may see, the order metrics are shown in, whole-day
date bounds, and a small cache of results computed from finished runs."""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from datetime import date, datetime, time
from typing import Any

from django.db.models import F
from django.utils import timezone

from evalsite.tenancy.access import remember_roles
from evalsite.tenancy.models import Tenant
from evaluation.models import RunKind
from goldenset.models import Collection
from goldenset.vocabulary.metric_names import ANSWER_METRICS, ANSWER_SCORE, RETRIEVAL_METRICS

# Settings that are off when empty: a run without a reranker stores None, False or "" (by age and kind).
OFF_WHEN_EMPTY = ("rerank",)


def config_value(key: str, value: Any) -> str:
    """A run's configuration value as a reader says it, the same on a retrieval and an answer run's page: a flag
    "on" or "off" (never True / False), a list joined by commas, an object as JSON, nothing as "—"."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if key in OFF_WHEN_EMPTY and value in (None, ""):
        return "off"
    if value is None or value == "":
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(config_value("", v) for v in value) or "—"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


# --- tenancy -----------------------------------------------------------------------------------------------


def tenants_for_user(user) -> list[Tenant]:
    """The tenants a dashboard user may see: their memberships', or every tenant for a superuser."""
    if not user.is_authenticated:
        return []
    tenants = Tenant.objects.select_related("cluster").order_by("cluster__slug", "slug")
    if user.is_superuser:
        return list(tenants)
    # The role of each membership comes along (the permission checks of the request then ask no query).
    found = list(tenants.filter(memberships__user=user).annotate(member_role=F("memberships__role")))
    remember_roles(user, {tenant.pk: tenant.member_role for tenant in found})
    return list[Tenant](found)


def collection_slugs(*, tenant: Tenant) -> list[str]:
    """The tenant's collections by name (the pages' collection pickers)."""
    return list(Collection.objects.filter(tenant=tenant).order_by("slug").values_list("slug", flat=True))


def tenant_key(tenant: Tenant) -> str:
    """How the dashboard names a tenant in a URL or a form: cluster/tenant."""
    return f"{tenant.cluster.slug}/{tenant.slug}"


# --- metrics -----------------------------------------------------------------------------------------------

_METRIC = re.compile(r"^(?P<name>[a-z_]+)@(?P<k>\d+)$")

# The display order (names: goldenset.vocabulary.metric_names): recall, ndcg, mrr, then an answer run's
# metrics: its overall score (0-100, the mean of per-question means), the judged metrics (each a per-question
# value, 0-1) and the run-level refusal metrics (counts, no per-question value).
_METRIC_ORDER = {name: i for i, name in enumerate((*RETRIEVAL_METRICS, *ANSWER_METRICS))}


def metric_sort_key(name: str) -> tuple[int, str, int]:
    """recall@k (by k), then ndcg@k, then mrr, then the answer metrics (score first), then anything else
    alphabetically."""
    match = _METRIC.match(name)
    base, k = (match["name"], int(match["k"])) if match else (name, 0)
    return (_METRIC_ORDER.get(base, len(_METRIC_ORDER)), base, k)


def ordered_metrics(names: Iterable[str]) -> list[str]:
    return sorted(set(names), key=metric_sort_key)


def headline_metric_names(ks: Sequence[int], available: Iterable[str], kind: str = "retrieval") -> list[str]:
    """The few metrics a run's row shows: nDCG and recall at 10 (or the largest k), and MRR; for an answer run
    its score, faithfulness and answer relevancy (whichever it has: a metric no question could be scored on is
    absent, never a 0)."""
    available = list(available)
    if kind == RunKind.ANSWERS:
        return [name for name in (ANSWER_SCORE, "faithfulness", "answer_relevancy") if name in available]
    k = 10 if 10 in ks else max(ks, default=10)
    wanted = [name for name in (f"ndcg@{k}", f"recall@{k}", "mrr") if name in available]
    return wanted or ordered_metrics(available)[:3]


def headline_metrics(
    kind: str, ks: Sequence[int], metrics: dict[str, float]
) -> list[tuple[str, float | None]]:
    """(name, value) of a run's headline metrics; an answer run always shows its score, as None (shown "—")
    when no question could be scored."""
    names = headline_metric_names(ks, metrics, kind)
    if kind == RunKind.ANSWERS and ANSWER_SCORE not in names:
        return [(ANSWER_SCORE, None), *((name, metrics[name]) for name in names)]
    return [(name, metrics[name]) for name in names]


def metric_scale(name: str) -> float:
    """The top of a metric's scale: 100 for an answer run's score, 1 for every other metric."""
    return 100.0 if name == ANSWER_SCORE else 1.0


def default_metric(names: Sequence[str]) -> str | None:
    for preferred in ("ndcg@10", "recall@10", "mrr", ANSWER_SCORE):
        if preferred in names:
            return preferred
    return names[0] if names else None


# --- dates and caching -------------------------------------------------------------------------------------


def day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


class Memo:
    """A small in-process LRU of results computed from immutable inputs (finished runs): an optimisation
    only, so nothing depends on it being shared or kept."""

    def __init__(self, size: int):
        self.size = size
        self.items: OrderedDict[str, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def put(self, key: str, value: Any) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
