from django.urls import path

from evaluation.api import calibration, clicks, judgments, pool_apply, studies, views, watch, workbench

urlpatterns = [
    path("search", views.SearchApi.as_view(), name="search"),
    path("search/answer", views.AnswerApi.as_view(), name="answer"),
    path("search/evaluate", views.EvaluateApi.as_view(), name="evaluate"),
    path("search/evaluate/answers", views.EvaluateAnswersApi.as_view(), name="evaluate-answers"),
    path("search/evaluate/question", workbench.EvaluateQuestionApi.as_view(), name="evaluate-question"),
    path("search/evaluate/run-file", views.EvaluateRunFileApi.as_view(), name="evaluate-run-file"),
    path("search/evaluate/labels", calibration.LabelsApi.as_view(), name="labels"),
    path("search/evaluate/calibration", calibration.CalibrationApi.as_view(), name="calibration"),
    path(
        "search/evaluate/calibration/thresholds",
        calibration.ThresholdApi.as_view(),
        name="calibration-thresholds",
    ),
    path("search/judgments", judgments.JudgmentsApi.as_view(), name="judgments"),
    path("search/judgments/pools", judgments.PoolsApi.as_view(), name="pools"),
    path("search/judgments/clicks", clicks.ClicksApi.as_view(), name="judgment-clicks"),
    path("search/judgments/pools/<str:pool_id>", judgments.PoolDetailApi.as_view(), name="pool"),
    path("search/judgments/pools/<str:pool_id>/next", judgments.PoolNextApi.as_view(), name="pool-next"),
    path("search/judgments/pools/<str:pool_id>/apply", pool_apply.PoolApplyApi.as_view(), name="pool-apply"),
    path(
        "search/judgments/pools/<str:pool_id>/applications/<str:application_id>/revert",
        pool_apply.ApplicationRevertApi.as_view(),
        name="pool-application-revert",
    ),
    path(
        "search/judgments/pools/<str:pool_id>/assess", judgments.PoolAssessApi.as_view(), name="pool-assess"
    ),
    path("search/evaluate/studies", studies.StudiesApi.as_view(), name="studies"),
    path("search/evaluate/studies/<str:study_id>", studies.StudyDetailApi.as_view(), name="study"),
    path("search/evaluate/studies/<str:study_id>/save", studies.StudySaveApi.as_view(), name="study-save"),
    path("search/evaluate/schedules", watch.SchedulesApi.as_view(), name="schedules"),
    path("search/evaluate/schedules/<str:schedule_id>", watch.ScheduleDetailApi.as_view(), name="schedule"),
    path(
        "search/evaluate/schedules/<str:schedule_id>/run", watch.ScheduleRunApi.as_view(), name="schedule-run"
    ),
    path("alerts", watch.AlertsApi.as_view(), name="alerts"),
    path("alerts/<str:alert_id>/acknowledge", watch.AlertAcknowledgeApi.as_view(), name="alert-acknowledge"),
    path("search/evaluate/runs", views.RunListApi.as_view(), name="runs"),
    path("search/evaluate/runs/<str:run_id>", views.RunDetailApi.as_view(), name="run"),
    path("targets", views.TargetListApi.as_view(), name="targets"),
    path("targets/<str:name>", views.TargetDetailApi.as_view(), name="target"),
    path("targets/<str:name>/test", views.TargetTestApi.as_view(), name="target-test"),
]
