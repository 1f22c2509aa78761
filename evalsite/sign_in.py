"""Sign-in from the organisation's identity provider: OpenID Connect, authorization code with PKCE, through
mozilla-django-oidc (docs/teams.md, "Single sign-on").

Configured by the environment (evalsite.settings): the issuer (its endpoints read from its discovery document,
once per process), the client id and secret, the scopes, the claim naming the user and the one holding the
groups. At each sign-in the groups are mapped to memberships by evalsite.tenancy.roles.memberships_from_groups:
the first sign-in creates the user with theirs, a later one adds, changes or removes those the groups granted.
The state, the nonce and the PKCE verifier are the library's, kept in the session and checked at the callback.
Password sign-in stays for small installs (EVALSITE_PASSWORD_SIGN_IN=0 turns it off)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import httpx
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.views import LoginView
from django.core.exceptions import ImproperlyConfigured, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from evalsite.audit.services import actor_user
from evalsite.tenancy.roles import memberships_from_groups
from evalsite.tenancy.services import memberships_sync

logger = logging.getLogger(__name__)

_DISCOVERED: dict[str, str] = {}
_DISCOVERY_LOCK = threading.Lock()
# The endpoints the library asks for, and where the discovery document names them.
_ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


def discovery() -> dict[str, str]:
    """The issuer's discovery document (its endpoints), read once per process on first use."""
    with _DISCOVERY_LOCK:
        if not _DISCOVERED:
            issuer = settings.EVALSITE_OIDC_ISSUER.rstrip("/")
            document = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
            if document.get("issuer", "").rstrip("/") != issuer:
                raise ImproperlyConfigured(
                    f"EVALSITE_OIDC_ISSUER: the discovery document names issuer {document.get('issuer')!r}"
                )
            _DISCOVERED.update({name: document[key] for name, key in _ENDPOINTS.items()})
    return _DISCOVERED


def oidc_setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings, the provider's endpoints taken from its discovery document."""
    if attr in _ENDPOINTS:
        return discovery()[attr]
    return import_from_settings(attr, *default)


class SignInBackend(OIDCAuthenticationBackend):
    """A user is found by the username claim (EVALSITE_OIDC_USERNAME_CLAIM, else `sub`), made at the first
    sign-in, and their memberships follow the groups claim at every sign-in."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django makes a backend for every sign-in, passwords' included: the provider's endpoints (and its
        # discovery document) are read only for a callback from it (authenticate, below).
        self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        if not settings.EVALSITE_OIDC_ISSUER or request is None or "code" not in request.GET:
            return None  # not the provider's callback: a password sign-in, say
        if request.path != reverse("oidc_authentication_callback"):
            return None  # a code in another page's query (a password sign-in's, say) is not the provider's
        super().__init__()
        return super().authenticate(request, **kwargs)

    def _username(self, claims: dict) -> str:
        name = claims.get(settings.EVALSITE_OIDC_USERNAME_CLAIM) or claims.get("sub") or ""
        return str(name)[:150]

    def verify_claims(self, claims: dict) -> bool:
        return bool(self._username(claims))

    def filter_users_by_claims(self, claims: dict):
        # Only a user the provider made (no password of their own): a local account that happens to bear the
        # name the provider sends (a superuser's "admin", say) is never signed into from outside.
        return self.UserModel.objects.filter(
            username=self._username(claims), password__startswith=UNUSABLE_PASSWORD_PREFIX
        )

    def create_user(self, claims: dict):
        username = self._username(claims)
        if self.UserModel.objects.filter(username=username).exists():
            raise SuspiciousOperation(
                f"a local account is named {username!r}: not signed in from the provider"
            )
        user = self.UserModel.objects.create_user(username, email=claims.get("email") or "")
        return self.update_user(user, claims)

    def update_user(self, user, claims: dict):
        wanted = memberships_from_groups(
            claims.get(settings.EVALSITE_OIDC_GROUPS_CLAIM), settings.EVALSITE_OIDC_GROUP_PREFIX
        )
        memberships_sync(user=user, wanted=wanted, actor=actor_user(user))
        return user


def _provider_call(view: Callable[..., HttpResponse], request: HttpRequest) -> HttpResponse:
    """No provider configured: 404. A callback whose state or nonce is not the session's, or whose code the
    provider refuses (a wrong PKCE verifier, a replay): no sign-in, back to the sign-in page that says so. The
    provider out of reach: 503."""
    if not settings.EVALSITE_OIDC_ISSUER:
        raise Http404("No identity provider is configured.")
    try:
        return view(request)
    except SuspiciousOperation as exc:  # a nonce or a state that is not the session's: a forgery, or a replay
        logger.warning("sign-in refused: %s", exc)
        return redirect(settings.LOGIN_REDIRECT_URL_FAILURE)
    except requests.HTTPError as exc:
        if exc.response is not None and 400 <= exc.response.status_code < 500:
            # the provider refused the code (a wrong PKCE verifier, a code used twice): no sign-in
            logger.warning("sign-in refused by the provider: %s", exc.response.status_code)
            return redirect(settings.LOGIN_REDIRECT_URL_FAILURE)
        return _unreachable(request, exc)
    except (httpx.HTTPError, requests.RequestException, KeyError, ValueError) as exc:
        return _unreachable(request, exc)


def _unreachable(request: HttpRequest, exc: Exception) -> HttpResponse:
    """The provider out of reach (or answering what cannot be read): the sign-in page again, 503, saying so."""
    logger.warning("identity provider out of reach: %s", type(exc).__name__)
    return render(
        request,
        "registration/login.html",
        {**PasswordOrProviderLoginView.sign_in_context(), "provider_error": True},
        status=503,
    )


class SignInRequestView(OIDCAuthenticationRequestView):
    """Off to the provider, with a fresh state, nonce and PKCE challenge (the library's)."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        View.__init__(self, *args, **kwargs)  # the endpoints are read when asked, below

    def get(self, request):
        def start(request):
            OIDCAuthenticationRequestView.__init__(self)
            return super(SignInRequestView, self).get(request)

        return _provider_call(start, request)


class SignInCallbackView(OIDCAuthenticationCallbackView):
    """Back from the provider: state, nonce and PKCE verifier checked, the code exchanged (the library's)."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request):
        return _provider_call(super().get, request)


class PasswordOrProviderLoginView(LoginView):
    """The sign-in page: the identity provider's button when one is configured, the password form unless
    EVALSITE_PASSWORD_SIGN_IN is off (then a password POST is refused, 403)."""

    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        if not settings.EVALSITE_PASSWORD_SIGN_IN:
            raise PermissionDenied("Password sign-in is off: sign in with the identity provider.")
        return super().post(request, *args, **kwargs)

    @staticmethod
    def sign_in_context() -> dict[str, Any]:
        return {
            "password_sign_in": settings.EVALSITE_PASSWORD_SIGN_IN,
            "provider_name": settings.EVALSITE_OIDC_NAME if settings.EVALSITE_OIDC_ISSUER else "",
        }

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), **self.sign_in_context()}
