"""The one owner of a configuration label's colour on the dashboard: every page (Home, Runs, a run, Trends, Compare
and their charts and swatches) reads the tenant's mapping here, so a label has one colour everywhere and no two
labels of the tenant share one (charts.LabelColors: the palette, then generated colours).

The order is the labels' first run (then the label, for runs made at once): a new label takes the next colour and
never moves an older label's."""

from __future__ import annotations

from django.db.models import Min

from evalsite.tenancy.models import Tenant
from evaluation.dashboard.charts import LabelColors
from evaluation.models import EvaluationRun


def tenant_label_colors(tenant: Tenant) -> LabelColors:
    """The tenant's labels in the order they were first run, each with its colour (one query)."""
    labels = (
        EvaluationRun.objects.filter(tenant=tenant)
        .values("label")
        .annotate(first=Min("created_at"))
        .order_by("first", "label")
        .values_list("label", flat=True)
    )
    return LabelColors(labels)
