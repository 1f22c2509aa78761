"""The admin site, with the curators' sections first: golden sets, then evaluation, then the platform's records
(tenancy, jobs, the audit trail), then the task queue and the user accounts. Django lists apps by name; the
models now live in several apps, so the order is said here."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig

ORDER = ("goldenset", "evaluation", "tenancy", "jobs", "audit", "django_q", "auth")


class EvalsiteAdminSite(admin.AdminSite):
    site_header = "evalsite admin"
    site_title = "evalsite admin"
    index_title = "Golden sets, documents and API keys"

    def get_app_list(self, request, app_label=None):
        apps = super().get_app_list(request, app_label)
        rank = {label: i for i, label in enumerate(ORDER)}
        return sorted(apps, key=lambda app: (rank.get(app["app_label"], len(ORDER)), app["name"]))


class EvalsiteAdminConfig(AdminConfig):
    default_site = "evalsite.admin_site.EvalsiteAdminSite"

    def ready(self) -> None:
        super().ready()  # every app's admin module registered
        # Every admin action declares the model permission it needs (tests/evalsite/test_permission_declarations):
        # two of the libraries' declare none, so a staff member who may only view their records could run them.
        from axes.admin import AccessAttemptAdmin  # late: the apps' admin modules, once they are loaded
        from django_q.admin import resubmit_task

        for action, needed in (
            (resubmit_task, ("change",)),  # django-q2: queue a task again
            (AccessAttemptAdmin.cleanup_expired_attempts, ("delete",)),  # django-axes: delete old attempts
        ):
            if not getattr(action, "allowed_permissions", None):
                action.allowed_permissions = needed
