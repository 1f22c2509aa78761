from django.urls import path

from goldenset.api import drift, views

urlpatterns = [
    path("collections", views.CollectionListApi.as_view(), name="collections"),
    path("collections/<str:collection_id>", views.CollectionDetailApi.as_view(), name="collection"),
    path("collections/<str:collection_id>/documents", views.DocumentListApi.as_view(), name="documents"),
    path(
        "collections/<str:collection_id>/uploads", views.DocumentUploadApi.as_view(), name="document-upload"
    ),
    path(
        "collections/<str:collection_id>/documents/<path:document_id>",
        views.DocumentDetailApi.as_view(),
        name="document",
    ),
    path("search/golden-set", views.GoldenSetApi.as_view(), name="golden-set"),
    path("search/golden-set/upload", views.GoldenSetUploadApi.as_view(), name="golden-set-upload"),
    path("search/golden-set/export", views.GoldenSetExportApi.as_view(), name="golden-set-export"),
    path("search/golden-set/generate", views.GoldenSetGenerateApi.as_view(), name="golden-set-generate"),
    path("search/golden-set/drift", drift.GoldenDriftApi.as_view(), name="golden-set-drift"),
    path("search/golden-set/<str:entry_id>", views.GoldenEntryApi.as_view(), name="golden-entry"),
    path("jobs/<str:job_id>", views.JobApi.as_view(), name="job"),
    path("jobs/<str:job_id>/cancel", views.JobCancelApi.as_view(), name="job-cancel"),
]
