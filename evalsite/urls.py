from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from evalsite import views
from evalsite.api import schema  # noqa: F401  (registers the OpenAPI extensions)
from evaluation.dashboard.golden_views import home

urlpatterns = [
    # The dashboard's home; its other pages are in evaluation.urls (namespace "dashboard").
    path("", home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("lmkit/v1/", include("goldenset.api.urls")),
    path("lmkit/v1/", include("evaluation.api.urls")),
    # After both apps' routes: any other /lmkit/ path is the JSON 404, also with DEBUG on.
    re_path(r"^lmkit/", views.api_not_found, name="api-not-found"),
    path("api/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("", include("evaluation.urls")),
]

handler400 = "evalsite.views.bad_request"
handler403 = "evalsite.views.permission_denied"
handler404 = "evalsite.views.not_found"
handler500 = "evalsite.views.server_error"
