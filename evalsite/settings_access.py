"""Settings of who may sign in and how much a caller may ask (docs/teams.md), read from the environment as
evalsite.settings reads the rest, which imports them: password sign-in throttled, the Content-Security-Policy,
single sign-on from an OpenID Connect provider. (The API's per-key budgets are evalsite.settings's, beside the
Redis they count in.)"""

from __future__ import annotations

from datetime import timedelta

from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from evalsite.env import env_bool, env_int, env_str

# --- limits on abuse (docs/teams.md) ---------------------------------------------------------------------------
# Password sign-in (the dashboard's and the admin's) throttled by django-axes: after EVALSITE_LOGIN_FAILURES
# failed attempts for one account, or from one address, that account or address is refused (429) for
# EVALSITE_LOGIN_COOLOFF_MINUTES, the right password included. A success clears the account's count. The
# attempts are rows of the database, so every process and machine counts the same ones.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    "evalsite.sign_in.SignInBackend",  # the identity provider's callback, when one is configured
]

AXES_FAILURE_LIMIT = env_int("EVALSITE_LOGIN_FAILURES", 10, minimum=1, maximum=1000)
AXES_COOLOFF_TIME = timedelta(
    minutes=env_int("EVALSITE_LOGIN_COOLOFF_MINUTES", 15, minimum=1, maximum=7 * 24 * 60)
)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locked out alone
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
# The client's address: the connection's, or behind the proxy EVALSITE_BEHIND_PROXY names, the last address it
# appended to X-Forwarded-For (the one a client cannot forge).
AXES_IPWARE_META_PRECEDENCE_ORDER = (
    ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"] if env_bool("EVALSITE_BEHIND_PROXY", False) else ["REMOTE_ADDR"]
)
AXES_IPWARE_PROXY_COUNT = 1 if env_bool("EVALSITE_BEHIND_PROXY", False) else None

# Content-Security-Policy on every answer (django-csp): scripts only from this site (the dashboard's files,
# plotly.js, the API docs' bundles) or carrying the request's nonce; no inline event handler, no eval; styles
# from this site and inline (plotly.js styles the charts it draws); images from this site and data: URLs (the
# API docs' icons); the API docs' search runs in a worker made from a blob; nothing may frame the pages.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "worker-src": [SELF, "blob:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# --- single sign-on: OpenID Connect (evalsite.sign_in; docs/teams.md, "Single sign-on") ---------------------
# The provider's endpoints come from its discovery document; mozilla-django-oidc keeps the state, the nonce
# and the PKCE verifier in the session and checks them at the callback.
EVALSITE_OIDC_ISSUER = env_str("EVALSITE_OIDC_ISSUER") or ""
EVALSITE_OIDC_NAME = env_str("EVALSITE_OIDC_NAME") or "your organisation"
EVALSITE_OIDC_USERNAME_CLAIM = env_str("EVALSITE_OIDC_USERNAME_CLAIM") or "preferred_username"
EVALSITE_OIDC_GROUPS_CLAIM = env_str("EVALSITE_OIDC_GROUPS_CLAIM") or "groups"
EVALSITE_OIDC_GROUP_PREFIX = env_str("EVALSITE_OIDC_GROUP_PREFIX") or "evalsite:"
EVALSITE_PASSWORD_SIGN_IN = env_bool("EVALSITE_PASSWORD_SIGN_IN", True)
OIDC_RP_CLIENT_ID = env_str("EVALSITE_OIDC_CLIENT_ID") or ""
OIDC_RP_CLIENT_SECRET = env_str("EVALSITE_OIDC_CLIENT_SECRET") or ""
OIDC_RP_SCOPES = env_str("EVALSITE_OIDC_SCOPES") or "openid email profile groups"
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10
OIDC_AUTHENTICATE_CLASS = "evalsite.sign_in.SignInRequestView"
OIDC_CALLBACK_CLASS = "evalsite.sign_in.SignInCallbackView"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sign_in=failed"
if EVALSITE_OIDC_ISSUER and not (OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
    raise ImproperlyConfigured(
        "EVALSITE_OIDC_ISSUER needs EVALSITE_OIDC_CLIENT_ID and EVALSITE_OIDC_CLIENT_SECRET"
    )
