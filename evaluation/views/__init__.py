"""The dashboard: server-rendered pages over the tenant a signed-in user picked. Thin: selectors and services
do the work (evaluation.dashboard, goldenset.selectors, goldenset.services).

The current tenant lives in the session and is checked against the user's memberships on every request (a
superuser sees every tenant); `?tenant=cluster/tenant` on any page switches to that tenant, or answers 404 when
the user may not see it. Every object is looked up within the current tenant, so another tenant's is a 404.

By area: `common` (the current tenant, the switcher, what every page shares), `golden` (home, a collection's
golden set, question generation and its review queue, and documents), `jobs` (the launcher and job progress),
`results` (runs, a run and its questions, downloads, compare, trends). evaluation.urls routes to the names
below, and settings name `evaluation.views.dashboard_context` as a template context processor.
"""

from evaluation.views.common import SESSION_TENANT, dashboard_context, tenant_switch
from evaluation.views.golden import (
    collection_detail,
    document_detail,
    documents,
    golden_action,
    golden_entry,
    golden_export,
    golden_generate,
    golden_new,
    golden_review,
    golden_review_action,
    home,
)
from evaluation.views.jobs import job_cancel_view, job_detail, job_progress, launch, launch_answers
from evaluation.views.results import compare, run_detail, run_download, run_question, runs, trends

__all__ = [
    "SESSION_TENANT",
    "collection_detail",
    "compare",
    "dashboard_context",
    "document_detail",
    "documents",
    "golden_action",
    "golden_entry",
    "golden_export",
    "golden_generate",
    "golden_new",
    "golden_review",
    "golden_review_action",
    "home",
    "job_cancel_view",
    "job_detail",
    "job_progress",
    "launch",
    "launch_answers",
    "run_detail",
    "run_download",
    "run_question",
    "runs",
    "tenant_switch",
    "trends",
]
