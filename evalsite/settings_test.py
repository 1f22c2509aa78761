"""Test settings: the production settings, with tasks run inline (django-q2 sync mode).

django-q2 reads Q_CLUSTER when it is first imported, so override_settings cannot switch it; the one
end-to-end test against a real qcluster process flips django_q.conf.Conf.SYNC itself.
"""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("DEBUG", "1")
# The tests call the API far faster than a client would: the per-key limits stay out of their way (the limits'
# own tests set theirs). In the environment, so the servers the tests start have it too.
os.environ.setdefault("EVALSITE_API_RATE", "1000000")
os.environ.setdefault("EVALSITE_API_COSTLY_RATE", "1000000")
# One collection of the static files for the whole run, whatever data directory a test's servers use (the tests
# start dozens of `manage.py serve`; each collecting into a fresh directory of its own took seconds). Set in the
# environment, so the servers and commands the tests start use it too.
os.environ.setdefault(
    "EVALSITE_STATIC_ROOT", str(Path(__file__).resolve().parent.parent / "var" / "test-static")
)

# Parallel test processes (pytest-xdist: PYTEST_XDIST_WORKER gw0, gw1, ...) share nothing a test writes: each
# its own data directory (the demo's key file, collected static files, the SQLite test database) and its own
# Redis database, the worker number below the one given (CI: 15 for gw0, 14 for gw1). Set in the environment,
# so that the servers and workers the tests start as subprocesses (tests.conftest.manage_env) use the same.
_xdist = os.environ.get("PYTEST_XDIST_WORKER", "")
if _xdist.startswith("gw") and _xdist[2:].isdigit() and os.environ.get("EVALSITE_TEST_WORKER") != _xdist:
    os.environ["EVALSITE_TEST_WORKER"] = _xdist  # once: a process started from this one inherits the result
    _number = int(_xdist[2:])
    _base = Path(os.environ.get("EVALSITE_DATA_DIR") or Path(__file__).resolve().parent.parent / "var")
    os.environ["EVALSITE_DATA_DIR"] = str(_base / f"xdist-{_xdist}")
    _redis = os.environ.get("EVALSITE_REDIS_URL", "")
    _head, _, _db = _redis.rpartition("/")
    if _redis.startswith("redis://") and _db.isdigit() and _head.count("/") == 2:
        os.environ["EVALSITE_REDIS_URL"] = f"{_head}/{int(_db) - _number}"

from evalsite.settings import *  # noqa: E402,F403
from evalsite.settings import Q_CLUSTER  # noqa: E402

Q_CLUSTER = {**Q_CLUSTER, "sync": True}

# The tests' scripted servers listen on loopback: allowed here, as an operator would allow an internal network.
# Tests of the refusal turn it off (override_settings, or the variable unset for a server subprocess).
EVALSITE_OUTBOUND_ALLOW = ["127.0.0.0/8", "::1"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Index files of this test process only (the tests' databases reuse primary keys and content versions).
EVALSITE_INDEX_DIR = Path(tempfile.mkdtemp(prefix="evalsite-test-indexes-"))
atexit.register(shutil.rmtree, EVALSITE_INDEX_DIR, True)

# Inline jobs finish long before a beat: the heartbeat thread stays idle instead of writing beside the test's
# own transaction. The real-worker tests set EVALSITE_JOB_HEARTBEAT_SECONDS in the worker's environment.
EVALSITE_JOB_HEARTBEAT_SECONDS = 3600
EVALSITE_JOB_STALE_SECONDS = 7200

# pytest-django renders pages with DEBUG off, and the tests collect no static files: pages name them plainly and the
# finders serve them. The hashed, compressed files of production are tested through `manage.py serve`, which runs
# on evalsite.settings (tests/browser/test_production_server_browser.py).
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
WHITENOISE_USE_FINDERS = True
