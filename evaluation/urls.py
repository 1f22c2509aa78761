"""The dashboard's pages (evalsite.urls mounts them at the site root, next to the API and the admin)."""

from django.urls import path

from evaluation.dashboard import (
    calibration_views,
    common_views,
    compare_views,
    generate_views,
    golden_views,
    judging_views,
    launch_views,
    runs_views,
    study_views,
    targets_views,
    trends_views,
)

app_name = "dashboard"

urlpatterns = [
    path("tenant/", common_views.tenant_switch, name="tenant-switch"),
    path("collections/<str:slug>/", golden_views.collection_detail, name="collection"),
    path("collections/<str:slug>/golden/action/", golden_views.golden_action, name="golden-action"),
    path(
        "collections/<str:slug>/golden/export.csv",
        golden_views.golden_export,
        {"fmt": "csv"},
        name="golden-csv",
    ),
    path(
        "collections/<str:slug>/golden/export.json",
        golden_views.golden_export,
        {"fmt": "json"},
        name="golden-json",
    ),
    path("collections/<str:slug>/golden/new/", golden_views.golden_new, name="golden-new"),
    path("collections/<str:slug>/golden/import/", golden_views.golden_import, name="golden-import"),
    path("collections/<str:slug>/golden/generate/", generate_views.golden_generate, name="golden-generate"),
    path("collections/<str:slug>/golden/review/", generate_views.golden_review, name="golden-review"),
    path(
        "collections/<str:slug>/golden/review/action/",
        generate_views.golden_review_action,
        name="golden-review-action",
    ),
    path("collections/<str:slug>/golden/<str:entry_id>/", golden_views.golden_entry, name="golden-entry"),
    path("collections/<str:slug>/activity/", golden_views.collection_activity, name="collection-activity"),
    path("collections/<str:slug>/documents/", golden_views.documents, name="documents"),
    path(
        "collections/<str:slug>/calibration/",
        calibration_views.collection_calibration,
        name="collection-calibration",
    ),
    path(
        "collections/<str:slug>/calibration/threshold/",
        calibration_views.calibration_threshold,
        name="calibration-threshold",
    ),
    path(
        "collections/<str:slug>/documents/<path:document_id>", golden_views.document_detail, name="document"
    ),
    path("launch/", launch_views.launch, name="launch"),
    path("launch/answers/", launch_views.launch_answers, name="launch-answers"),
    path("launch/run-file/", launch_views.launch_run_file, name="launch-run-file"),
    path("jobs/<str:job_id>/", launch_views.job_detail, name="job"),
    path("jobs/<str:job_id>/progress.json", launch_views.job_progress, name="job-progress"),
    path("jobs/<str:job_id>/cancel/", launch_views.job_cancel_view, name="job-cancel"),
    path("runs/", runs_views.runs, name="runs"),
    path("runs/<str:run_id>/", runs_views.run_detail, name="run"),
    # A question's number as its page shows it, from 1 (its stored position + 1).
    path("runs/<str:run_id>/questions/<int:number>/", runs_views.run_question, name="run-question"),
    path("runs/<str:run_id>/run.json", runs_views.run_download, {"fmt": "json"}, name="run-json"),
    path("runs/<str:run_id>/run.csv", runs_views.run_download, {"fmt": "csv"}, name="run-csv"),
    path("runs/<str:run_id>/run.trec", runs_views.run_download, {"fmt": "trec"}, name="run-trec"),
    path("runs/<str:run_id>/run.junit.xml", runs_views.run_download, {"fmt": "junit"}, name="run-junit"),
    path("runs/<str:run_id>/run.ragas.jsonl", runs_views.run_download, {"fmt": "ragas"}, name="run-ragas"),
    path("targets/", targets_views.targets, name="targets"),
    path("targets/new/", targets_views.target_new, name="target-new"),
    path("targets/<str:name>/", targets_views.target_detail, name="target"),
    path("targets/<str:name>/test/", targets_views.target_test, name="target-test"),
    path("targets/<str:name>/delete/", targets_views.target_delete, name="target-delete"),
    path("compare/", compare_views.compare, name="compare"),
    path("compare/rankings/", compare_views.compare_rankings, name="compare-rankings"),
    path("pools/new/", judging_views.pool_new, name="pool-new"),
    path("pools/<str:pool_id>/", judging_views.pool_detail, name="pool"),
    path("pools/<str:pool_id>/judge/", judging_views.pool_judge, name="pool-judge"),
    path("pools/<str:pool_id>/undo/", judging_views.pool_undo, name="pool-undo"),
    path("pools/<str:pool_id>/apply/", judging_views.pool_apply, name="pool-apply"),
    path(
        "pools/<str:pool_id>/applications/<str:application_id>/revert/",
        judging_views.pool_revert,
        name="pool-revert",
    ),
    path("trends/", trends_views.trends, name="trends"),
    path("studies/", study_views.studies, name="studies"),
    path("studies/new/", study_views.study_new, name="study-new"),
    path("studies/<str:study_id>/", study_views.study_detail, name="study"),
    path("studies/<str:study_id>/progress.json", study_views.study_progress, name="study-progress"),
    path("studies/<str:study_id>/cancel/", study_views.study_cancel, name="study-cancel"),
    path("studies/<str:study_id>/save/", study_views.study_save, name="study-save"),
]
