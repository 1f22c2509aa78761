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


def test_settings_refuse_to_start_without_a_secret_key_when_debug_is_off(tmp_path):
    import subprocess
    import sys

    env = {"PATH": "/usr/bin:/bin", "DEBUG": "0", "EVALSITE_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", "import evalsite.settings"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "SECRET_KEY is required when DEBUG is off" in done.stderr
    done = subprocess.run(
        [sys.executable, "-c", "import evalsite.settings as s; print(s.DATABASES['default']['OPTIONS'])"],
        env={**env, "DEBUG": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "transaction_mode': 'IMMEDIATE'" in done.stdout and "journal_mode=WAL" in done.stdout
    bad = subprocess.run(
        [sys.executable, "-c", "import evalsite.settings"],
        env={**env, "DEBUG": "1", "DATABASE_URL": "nosuchdb://x"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode != 0 and "DATABASE_URL" in bad.stderr
