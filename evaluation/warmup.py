"""A web server warmed before it takes requests (`manage.py serve` runs this once, in gunicorn's master, after
the application is loaded and before the web processes are forked; they inherit what it did).

Measured at 100,000 pages, four web processes: the first search of each fresh process took 1.8-4.1 s (later
ones 36-190 ms): each process read the index's description (a hundred thousand document ids and their order),
opened its arrays, loaded the compiled search kernels from numba's cache and ran Django's first request through
the database code, all while the other processes did the same on two cores. Done once in the master, all of it
is shared: the forked processes start with the indexes in memory (their arrays mapped, one copy in the page
cache for every process), the kernels loaded, the modules imported.

What is warmed: the current index, with the parts it has saved, of the EVALSITE_WARM_COLLECTIONS collections
changed most recently (fetched from the index store first where another machine built it), each then searched
once per saved part (a frequent and a rare term, so both of the kernels' paths run), through the same search
service a request uses. Nothing is built and no build is queued: a collection without a saved index is left to
its first search, as before. The calibration report of each of those collections that has human labels (an
answer run's page shows it; 0.7-2 s of CPU) is built here too, once for every process. The database connections opened here are closed before the fork.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connections
from django.template.loader import get_template
from django.urls import get_resolver

from evaluation.configs import RunConfig
from evaluation.judgments.calibration import calibration_report
from evaluation.models import HumanLabel
from evaluation.retrieval import index_files, indexes
from evaluation.retrieval.read_path import search
from evaluation.retrieval.search.engine import VECTORS
from goldenset.models import Collection

logger = logging.getLogger(__name__)


def warm_up(*, collections: int) -> dict[str, Any]:
    """Import every view, compile every template, load and search the most recently changed collections'
    saved indexes; returns what was warmed."""
    started = time.perf_counter()
    warmed: list[str] = []
    calibrated: list[str] = []
    index_files.directory_id()  # named before any build this server could be told of (indexes._built_elsewhere)
    templates = _code()
    try:
        for collection in Collection.objects.order_by("-updated_at")[:collections]:
            if HumanLabel.objects.filter(collection=collection).exists():
                calibration_report(collection=collection)  # an answer run's page shows it
                calibrated.append(f"{collection.tenant_id}/{collection.slug}")
            index = indexes.warm(collection)
            if index is None:
                continue
            for config in _configs(index):
                search(collections=[collection], query=_query(index), config=config, top_k=10)
            warmed.append(f"{collection.tenant_id}/{collection.slug}")
    finally:
        connections.close_all()  # never share a connection with the processes forked from here
    took = (time.perf_counter() - started) * 1000
    logger.info(
        "warmed %d templates, %d collection indexes and %d calibration reports in %.0f ms",
        templates,
        len(warmed),
        len(calibrated),
        took,
    )
    return {"collections": warmed, "calibrated": calibrated, "templates": templates, "ms": round(took, 1)}


def _code() -> int:
    """The URLconf imported (with it every view module, the API schema's included: 3-5 s of a first request
    when four fresh processes import at once) and every template compiled into the cached loader."""
    resolver = get_resolver()
    _compile_patterns(resolver)
    resolver.reverse_dict  # noqa: B018 (the property fills the reverse lookups {% url %} reads)
    count = 0
    dirs: Any = settings.TEMPLATES[0]["DIRS"]
    folders = [Path(folder) for folder in dirs]
    for folder in folders:
        for path in sorted(folder.rglob("*.html")):
            get_template(path.relative_to(folder).as_posix())
            count += 1
    return count


def _configs(index) -> list[RunConfig]:
    found = [
        RunConfig(label=part, search_type="FullText", bm25_variant=part.removeprefix("bm25:"))
        for part in index_files.PARTS
        if part.startswith("bm25:") and index.has_part(part)
    ]
    if index.has_part(VECTORS) and index.has_part(index_files.DEFAULT_PART):
        found.append(RunConfig(label="hybrid", search_type="Hybrid"))
    return found


def _compile_patterns(resolver: Any) -> None:
    """Every URL pattern's regular expression, compiled (Django compiles each on its first match attempt)."""
    for pattern in resolver.url_patterns:  # the property imports the URLconf, and with it every view
        pattern.pattern.regex  # noqa: B018
        if hasattr(pattern, "url_patterns"):
            _compile_patterns(pattern)


def _query(index) -> str:
    """A frequent term and a rare one of the index (both of the kernels' paths), or a word when it has none."""
    postings = index.postings
    if postings is None or postings.terms == 0:
        return "the"
    frequency = postings.document_frequency
    order = np.argsort(frequency, kind="stable")
    terms = [int(order[-1]), int(order[len(order) // 2])]
    offsets, data = postings.term_offsets, postings.term_bytes
    return " ".join(bytes(data[offsets[t] : offsets[t + 1]]).decode("utf-8", "replace") for t in terms)
