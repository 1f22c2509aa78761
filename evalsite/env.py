"""Strict parsing of settings from the environment.

Every helper raises ImproperlyConfigured naming the variable when its value cannot be read, so a typo in a
deployment fails at start-up instead of silently falling back to a default.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    """A string from NAME, or from the file named by NAME_FILE (for secrets mounted as files)."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {file_name}: {exc}") from exc
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}: expected one of 1/0, true/false, yes/no, on/off; got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}: expected an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}: must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}: must be <= {maximum}, got {value}")
    return value


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def env_bytes(name: str, default: int, *, minimum: int | None = None) -> int:
    """A size in bytes: a whole number, or one followed by K, M or G (KiB, MiB, GiB), e.g. 2G or 512M."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    number = text[: len(text) - len(unit)].strip()
    if not number.isdigit():
        raise ImproperlyConfigured(f"{name}: expected a size such as 2G, 512M or 1073741824, got {raw!r}")
    value = int(number) * _UNITS[unit]
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}: must be at least {minimum} bytes, got {raw!r}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def limit_blas_threads(threads: int) -> None:
    """Give the BLAS libraries (OpenBLAS in numpy's and scipy's wheels, MKL, BLIS) `threads` threads each,
    unless the operator set their own variable. Read when the library loads, so this must run before numpy is
    first imported: settings.py calls it, and nothing imports numpy before the settings.

    Why: every web and worker process would otherwise start a BLAS thread per core, and on a shared machine
    those threads fight each other (multi-threaded BLAS measured 4-7x slower than one thread per process on a
    busy host). Search parallelises over processes and threads of its own; the BLAS calls (the LSI fit, the
    vector matvec) are memory-bound at these sizes. An environment variable, not threadpoolctl: no dependency,
    and it also covers processes that never call into evalsite's code before their first BLAS call."""
    for name in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))
