"""The dashboard's pages (evalsite.urls mounts them at the site root, next to the API and the admin)."""

from django.urls import path

from evaluation import views

app_name = "dashboard"

urlpatterns = [
    path("tenant/", views.tenant_switch, name="tenant-switch"),
    path("collections/<str:slug>/", views.collection_detail, name="collection"),
    path("collections/<str:slug>/golden/action/", views.golden_action, name="golden-action"),
    path("collections/<str:slug>/golden/export.csv", views.golden_export, {"fmt": "csv"}, name="golden-csv"),
    path(
        "collections/<str:slug>/golden/export.json", views.golden_export, {"fmt": "json"}, name="golden-json"
    ),
    path("collections/<str:slug>/golden/new/", views.golden_new, name="golden-new"),
    path("collections/<str:slug>/golden/generate/", views.golden_generate, name="golden-generate"),
    path("collections/<str:slug>/golden/review/", views.golden_review, name="golden-review"),
    path(
        "collections/<str:slug>/golden/review/action/",
        views.golden_review_action,
        name="golden-review-action",
    ),
    path("collections/<str:slug>/golden/<str:entry_id>/", views.golden_entry, name="golden-entry"),
    path("collections/<str:slug>/documents/", views.documents, name="documents"),
    path("collections/<str:slug>/documents/<path:document_id>", views.document_detail, name="document"),
    path("launch/", views.launch, name="launch"),
    path("launch/answers/", views.launch_answers, name="launch-answers"),
    path("jobs/<str:job_id>/", views.job_detail, name="job"),
    path("jobs/<str:job_id>/progress.json", views.job_progress, name="job-progress"),
    path("jobs/<str:job_id>/cancel/", views.job_cancel_view, name="job-cancel"),
    path("runs/", views.runs, name="runs"),
    path("runs/<str:run_id>/", views.run_detail, name="run"),
    # A question's number as its page shows it, from 1 (its stored position + 1).
    path("runs/<str:run_id>/questions/<int:number>/", views.run_question, name="run-question"),
    path("runs/<str:run_id>/run.json", views.run_download, {"fmt": "json"}, name="run-json"),
    path("runs/<str:run_id>/run.csv", views.run_download, {"fmt": "csv"}, name="run-csv"),
    path("runs/<str:run_id>/run.trec", views.run_download, {"fmt": "trec"}, name="run-trec"),
    path("compare/", views.compare, name="compare"),
    path("trends/", views.trends, name="trends"),
]
