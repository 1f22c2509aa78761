from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from evalsite import views
from evalsite.api import schema  # noqa: F401  (registers the OpenAPI extensions)
from evalsite.sign_in import PasswordOrProviderLoginView, SignInCallbackView, SignInRequestView
from evalsite.tenancy.access import public
from evaluation.dashboard.golden_views import home

urlpatterns = [
    # The dashboard's home; its other pages are in evaluation.urls (namespace "dashboard").
    path("", home, name="home"),
    # What shows no tenant's data says so (evalsite.tenancy.access.public); every other view declares the
    # permission it needs, and tests/evalsite/test_permission_declarations.py holds every route to it.
    path("healthz", public(views.healthz, "the health check: no tenant's data"), name="healthz"),
    path("accounts/login/", public(PasswordOrProviderLoginView.as_view(), "signing in"), name="login"),
    # the identity provider's sign-in (evalsite.sign_in; 404 when none is configured)
    path(
        "oidc/authenticate/",
        public(SignInRequestView.as_view(), "signing in at the identity provider"),
        name="oidc_authentication_init",
    ),
    path(
        "oidc/callback/",
        public(SignInCallbackView.as_view(), "back from the identity provider"),
        name="oidc_authentication_callback",
    ),
    path("accounts/logout/", public(auth_views.LogoutView.as_view(), "signing out"), name="logout"),
    # The admin site is the operator's (staff only): Django's model permissions, each action's declared.
    path("admin/", admin.site.urls),
    path("lmkit/v1/", include("goldenset.api.urls")),
    path("lmkit/v1/", include("evaluation.api.urls")),
    # After both apps' routes: any other /lmkit/ path is the JSON 404, also with DEBUG on.
    re_path(
        r"^lmkit/", public(views.api_not_found, "the API's 404 for a path it has not"), name="api-not-found"
    ),
    path("api/schema", public(SpectacularAPIView.as_view(), "the API's schema"), name="api-schema"),
    path(
        "api/docs",
        # Swagger UI's start script served as a file of its own (?script): the pages allow no inline script.
        public(SpectacularSwaggerSplitView.as_view(url_name="api-schema"), "the API's documentation"),
        name="api-docs",
    ),
    path(
        "api/redoc",
        public(SpectacularRedocView.as_view(url_name="api-schema"), "the API's documentation"),
        name="api-redoc",
    ),
    path("", include("evaluation.urls")),
]

handler400 = "evalsite.views.bad_request"
handler403 = "evalsite.views.permission_denied"
handler404 = "evalsite.views.not_found"
handler500 = "evalsite.views.server_error"
