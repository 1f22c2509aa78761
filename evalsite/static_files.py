"""Static files: plotly.js from the installed plotly package, and the production server's collection step (once
per change of the files, not at every start).

plotly.js is served as /static/plotly/plotly.min.js straight from the plotly package (no copy in the repository,
no CDN, always the version the Python side renders figures for). The package's data holds much else (a widget
bundle as large again, data sets, templates) that no page loads: ``PlotlyFinder`` finds plotly.min.js alone, so
collectstatic neither copies nor compresses the rest.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path
from typing import Any, Literal, overload

import plotly
from django.conf import settings
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage
from django.core.management import call_command
from whitenoise.storage import CompressedManifestStaticFilesStorage

PLOTLY_JS = "plotly.min.js"
PLOTLY_PREFIX = "plotly"
IGNORE_PATTERNS = ["CVS", ".*", "*~"]  # collectstatic's own defaults


class PlotlyFinder(BaseFinder):
    """Finds plotly/plotly.min.js in the installed plotly package, and nothing else there."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=Path(plotly.__file__).resolve().parent / "package_data")
        self.storage.prefix = PLOTLY_PREFIX  # type: ignore[attr-defined]  # collectstatic reads it

    def check(self, **kwargs: Any) -> list:
        return []

    @overload
    def find(self, path: str, find_all: Literal[False] = False) -> str | None: ...
    @overload
    def find(self, path: str, find_all: Literal[True]) -> list[str]: ...
    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str] | None:
        found = self.storage.path(PLOTLY_JS) if path == f"{PLOTLY_PREFIX}/{PLOTLY_JS}" else None
        if find_all:
            return [found] if found else []
        return found

    def list(self, ignore_patterns: Any) -> Any:
        yield PLOTLY_JS, self.storage


def sources_digest() -> str:
    """A digest of every file the finders list (its name, size and modification time): it changes when a static
    file is edited, added or removed, or a package that ships some is upgraded."""
    digest = hashlib.sha256()
    for finder in finders.get_finders():
        for path, storage in finder.list(IGNORE_PATTERNS):
            stat = os.stat(storage.path(path))
            prefix = getattr(storage, "prefix", None) or ""
            digest.update(f"{prefix}/{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def collect_static() -> bool:
    """collectstatic, unless the collection in STATIC_ROOT is that of the files the finders list now (a digest of
    them is kept beside it): True when it collected. Servers starting at once on one data directory take turns."""
    root = Path(settings.STATIC_ROOT)
    stamp, manifest = root / ".sources", root / "staticfiles.json"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        digest = sources_digest()
        if manifest.exists() and stamp.exists() and stamp.read_text() == digest:
            return False
        call_command("collectstatic", interactive=False, verbosity=0)
        stamp.write_text(digest)
        return True


class StaticStorage(CompressedManifestStaticFilesStorage):
    """whitenoise's storage: each file under a name holding its content's hash, gzipped, cached for years. Until
    something is collected (``manage.py serve`` collects as it starts; ``runserver`` with DEBUG off does not),
    there is no manifest to name files by: pages name them plainly, as ``runserver --insecure`` serves them, and
    render instead of failing on every ``{% static %}``."""

    def stored_name(self, name: str) -> str:
        if not self.hashed_files:
            return name
        return super().stored_name(name)
