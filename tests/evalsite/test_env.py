"""Settings from the environment are parsed strictly: a bad value names its variable."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from evalsite.env import env_bool, env_int, env_list, env_str


@pytest.mark.parametrize(
    ("raw", "expected"), [("1", True), ("TRUE", True), ("on", True), ("0", False), ("no", False)]
)
def test_env_bool_reads_the_usual_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("FLAG", raw)
    assert env_bool("FLAG", not expected) is expected


def test_env_bool_rejects_anything_else(monkeypatch):
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="FLAG"):
        env_bool("FLAG", False)


def test_env_int_rejects_text_and_values_below_the_minimum(monkeypatch):
    monkeypatch.setenv("N", "ten")
    with pytest.raises(ImproperlyConfigured, match="N: expected an integer"):
        env_int("N", 1)
    monkeypatch.setenv("N", "0")
    with pytest.raises(ImproperlyConfigured, match="N: must be >= 1"):
        env_int("N", 1, minimum=1)
    monkeypatch.setenv("N", " 42 ")
    assert env_int("N", 1) == 42
    monkeypatch.delenv("N")
    assert env_int("N", 7) == 7


def test_env_list_and_secrets_from_files(monkeypatch, tmp_path):
    monkeypatch.setenv("HOSTS", "a.example, b.example,,")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("SECRET_KEY_FILE", str(secret))
    assert env_str("SECRET_KEY") == "s3cret"
    monkeypatch.setenv("SECRET_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY_FILE"):
        env_str("SECRET_KEY")


ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def manage(*args: str, env: dict[str, str]):
    """`manage.py` as the documentation prints it: DEBUG off, nothing set but what `env` adds."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_without_a_secret_key_one_is_generated_once_into_the_data_directory(tmp_path):
    import subprocess
    import sys

    env = {"PATH": "/usr/bin:/bin", "EVALSITE_DATA_DIR": str(tmp_path)}
    read = [sys.executable, "-c", "import evalsite.settings as s; print(s.SECRET_KEY, s.DEBUG)"]
    first = subprocess.run(read, env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    again = subprocess.run(read, env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    key, debug = first.stdout.split()
    assert debug == "False" and len(key) >= 50 and again.stdout == first.stdout
    stored = tmp_path / "secret_key"
    assert stored.read_text() == key and oct(stored.stat().st_mode & 0o777) == "0o600"
    assert list(tmp_path.glob(".secret_key.*")) == []  # no temporary file left behind
    given = subprocess.run(
        read, env={**env, "SECRET_KEY": "k" * 60}, capture_output=True, text=True, cwd=ROOT
    )
    assert given.stdout.split()[0] == "k" * 60


def test_a_bad_setting_is_one_line_naming_it_and_exit_2(tmp_path):
    env = {"EVALSITE_DATA_DIR": str(tmp_path)}
    for name, value, expected in [
        ("EVALSITE_WORKERS", "two", "EVALSITE_WORKERS: expected an integer, got 'two'"),
        ("DEBUG", "maybe", "DEBUG: expected one of"),
        ("DATABASE_URL", "nosuchdb://x", "DATABASE_URL"),
        ("SECRET_KEY", " ", "SECRET_KEY: empty"),
        ("LOG_LEVEL", "LOUD", "LOG_LEVEL: expected DEBUG"),
        ("EVALSITE_REDIS_URL", "http://x", "EVALSITE_REDIS_URL: expected a redis://"),
        ("EVALSITE_DATA_DIR", "/proc/nope", "EVALSITE_DATA_DIR: cannot create /proc/nope"),
    ]:
        done = manage("check", env={**env, name: value})
        assert done.returncode == 2, (name, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert (
            len(lines) == 1 and expected in lines[0] and lines[0].startswith("evalsite: configuration error:")
        )
        assert "Traceback" not in done.stderr


def test_the_readme_commands_work_with_debug_off(tmp_path):
    env = {"EVALSITE_DATA_DIR": str(tmp_path)}
    assert manage("migrate", "--noinput", env=env).returncode == 0
    created = manage("createapikey", "--cluster", "c", "--tenant", "t", "--role", "admin", env=env)
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip().splitlines()[-1].startswith("esk_")
    missing = manage("evaluate", "--cluster", "c", "--tenant", "t", "--collection", "nope", env=env)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr  # 2: a usage or data error
    assert len(missing.stderr.strip().splitlines()) == 1


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    env = {
        "EVALSITE_DATA_DIR": str(tmp_path),
        "SECRET_KEY": "a-long-random-production-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        "ALLOWED_HOSTS": "evalsite.example.com",
        "CSRF_TRUSTED_ORIGINS": "https://evalsite.example.com",
        "EVALSITE_HTTPS": "1",
        "EVALSITE_BEHIND_PROXY": "1",
        "SECURE_HSTS_PRELOAD": "1",
    }
    done = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout
    without_https = manage("check", "--deploy", "--fail-level", "WARNING", env={**env, "EVALSITE_HTTPS": "0"})
    assert without_https.returncode != 0 and "security.W008" in without_https.stderr + without_https.stdout


BLAS_THREADS = """
import ctypes, os
import evalsite.settings
import numpy
libraries = {line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line and ".so" in line}
counts = set()
for path in libraries:
    library = ctypes.CDLL(path)
    for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads"):
        if hasattr(library, name):
            counts.add(getattr(library, name)())
print(os.environ["OPENBLAS_NUM_THREADS"], sorted(counts))
"""


def test_blas_runs_one_thread_per_process_unless_the_operator_says_otherwise(tmp_path):
    import subprocess
    import sys

    def threads(**env: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", BLAS_THREADS],
            env={"PATH": "/usr/bin:/bin", "EVALSITE_DATA_DIR": str(tmp_path), **env},
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        return done.stdout.split(maxsplit=1)

    variable, loaded = threads()
    assert variable == "1"
    if loaded != "[]\n":  # an OpenBLAS whose thread count can be read (numpy's wheels): it took the setting
        assert loaded.strip() == "[1]"
    assert threads(EVALSITE_BLAS_THREADS="2")[0] == "2"
    assert threads(EVALSITE_BLAS_THREADS="2", OPENBLAS_NUM_THREADS="3")[0] == "3"  # the operator's own wins
