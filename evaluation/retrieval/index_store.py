"""Search indexes published to the database and cached on each machine's disk (EVALSITE_INDEX_STORE=database).

The problem: an index is built by whichever worker takes the build job, and saved to that machine's index
directory. A machine that serves without a worker (or whose worker did not take the job) found no file, queued
another build, and never had the index: searches there answered 503 for ever, and every search queued a job.

The design: the builder publishes what it saved (IndexFile chunks, then an IndexManifest naming the files and
the parts) into the database every machine already shares; a machine that lacks a version, or a part of it,
fetches the files it does not have into its own index directory and maps them from there, as it maps what it
built. So:
- one build per collection version, however many machines and requests ask: a version that is published, with
  the parts asked, is fetched, never built or queued again (evaluation.retrieval.indexes.build_schedule);
- each machine fetches once: its processes share the directory, and a file lock makes the others wait for the
  one fetching, then read what it wrote;
- nothing new to run or to configure: no shared file system, no object store; the cost is the index's size in
  the database (about 1 KB a page for FullText) and one copy of it per machine;
- what is read is what was written: a file is fetched by the digest the manifest names, into a temporary file
  renamed into place, the description (index.json) last, so a reader sees a whole version or none;
- what is read was published by this deployment: a manifest is signed (HMAC-SHA256 under a key derived from
  SECRET_KEY, which every machine shares) and checked before anything of it is used; one without that
  signature (written into the table by anything else, or under another SECRET_KEY) is refused with a log line
  and treated as absent: the machine builds its own, and its publication replaces the row. Nothing fetched
  could run code anyway (evaluation.retrieval.search.index_format reads JSON and plain arrays); the signature
  keeps a forged row from being served as the index, or from naming files outside the folder.
Why not a shared directory: the documentation promised per-machine directories, and NFS's locks and renames are the
first thing to break. Why not a build on each machine: a web-only machine has no worker, and a million pages
take minutes to build where they take seconds to copy.

A single machine on SQLite needs none of this (EVALSITE_INDEX_STORE defaults to local there): its processes
share one index directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import transaction
from django.utils.crypto import constant_time_compare, salted_hmac

from evaluation.models import IndexFile, IndexManifest
from goldenset.models import Collection

logger = logging.getLogger(__name__)

CHUNK_BYTES = 8 << 20  # a row of IndexFile: large enough to stream fast, small enough for any database
DESCRIPTION = "index.json"  # written last when fetched: its presence means the version is whole
REWRITTEN = frozenset({DESCRIPTION, "parts.json"})  # rewritten when a part is added; every other file is not
SIGNING_SALT = "evaluation.retrieval.index_store.manifest"  # the key: salted_hmac(this, SECRET_KEY)
REFUSALS_LOGGED = 1000  # refused manifests remembered per process, so each is logged once


def enabled() -> bool:
    return settings.EVALSITE_INDEX_STORE == "database"


def _files(folder: Path) -> list[Path]:
    """The files of a saved index folder, its description last (temporary and lock files left out)."""
    found = [
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix != ".lock"
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    ]
    return sorted(found, key=lambda p: (p.name == DESCRIPTION, str(p)))


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def publish(collection: Collection, folder: Path, version: int, parts: list[str]) -> None:
    """Publish a saved index folder: the files not published yet, then its manifest. Older versions of the
    collection whose parts this one has are removed, as the index directory removes their folders."""
    started = time.perf_counter()
    written = 0
    key = folder.name
    family = _family(key)
    known = set(IndexFile.objects.filter(key=key, chunk=0).values_list("name", "digest"))
    digest_of = dict(known)
    listed: list[list] = []
    for path in _files(folder):
        name = path.relative_to(folder).as_posix()
        size = path.stat().st_size
        if name in digest_of and name not in REWRITTEN:  # published with an earlier part: not hashed again
            listed.append([name, digest_of[name], size])
            continue
        digest = _digest(path)
        listed.append([name, digest, size])
        if (name, digest) in known:
            continue
        written += size
        with transaction.atomic(), path.open("rb") as handle:
            number = 0
            while True:
                block = handle.read(CHUNK_BYTES)
                if number and not block:
                    break
                IndexFile.objects.create(  # an empty file is one empty chunk
                    collection=collection, key=key, name=name, digest=digest, chunk=number, data=block
                )
                number += 1
    with transaction.atomic():
        IndexManifest.objects.update_or_create(
            key=key,
            defaults={
                "collection": collection,
                "family": family,
                "content_version": version,
                "parts": sorted(parts),
                "files": listed,
                "signature": signature(key, family, version, sorted(parts), listed),
            },
        )
        # Revisions of the description and parts list that the manifest no longer names.
        current = {(name, digest) for name, digest, _size in listed}
        stale = [
            pk
            for pk, name, digest in IndexFile.objects.filter(key=key).values_list("pk", "name", "digest")
            if (name, digest) not in current
        ]
        IndexFile.objects.filter(pk__in=stale).delete()
    for older in IndexManifest.objects.filter(family=family, content_version__lt=version):
        if not _verified(older) or set(older.parts) <= set(parts):  # unsigned: never read, so never kept
            with transaction.atomic():
                IndexFile.objects.filter(key=older.key).delete()
                older.delete()
    for outdated in IndexManifest.objects.filter(collection=collection).exclude(family=family):
        if _engine(outdated.key) < _engine(key):  # an older engine's files: no process reads them again
            with transaction.atomic():
                IndexFile.objects.filter(key=outdated.key).delete()
                outdated.delete()
    logger.info(
        "index %s: published %.1f MB of %d files in %.1f s",
        key,
        written / 1e6,
        len(listed),
        time.perf_counter() - started,
    )


def published(key: str) -> IndexManifest | None:
    """The manifest published under `key`, if this deployment signed it (else None: see _verified)."""
    manifest = IndexManifest.objects.filter(key=key).first()
    return manifest if manifest is not None and _verified(manifest) else None


def published_parts(key: str) -> frozenset[str]:
    manifest = published(key)
    return frozenset(manifest.parts) if manifest is not None else frozenset()


def older_published(key: str, version: int) -> list[IndexManifest]:
    """The collection's published versions older than `version` (same engine and embedder) that this
    deployment signed, newest first."""
    found = IndexManifest.objects.filter(family=_family(key), content_version__lt=version)
    return [manifest for manifest in found.order_by("-content_version") if _verified(manifest)]


def signature(key: str, family: str, version: int, parts: list[str], files: list[list]) -> str:
    """The HMAC of what a manifest says, under a key derived from SECRET_KEY (django's salted_hmac): only a
    process holding this deployment's SECRET_KEY can make it."""
    message = json.dumps([key, family, version, parts, files], separators=(",", ":"), ensure_ascii=True)
    return salted_hmac(SIGNING_SALT, message, algorithm="sha256").hexdigest()


_refusals: set[tuple[str, str]] = set()


def _verified(manifest: IndexManifest) -> bool:
    """Whether this deployment published the manifest: its signature is this SECRET_KEY's over what it says,
    and every file it names stays inside the index folder. Checked before anything of it is used; a refusal is
    logged (once per process and row) and the caller treats the manifest as absent."""
    try:
        expected = signature(
            manifest.key,
            manifest.family,
            manifest.content_version,
            list(manifest.parts),
            list(manifest.files),
        )
        good = constant_time_compare(manifest.signature or "", expected) and all(
            _inside(name) for name, _digest, _size in manifest.files
        )
    except (TypeError, ValueError):  # not even the shape of a manifest
        good = False
    if not good and (manifest.key, manifest.signature) not in _refusals:
        if len(_refusals) >= REFUSALS_LOGGED:
            _refusals.clear()
        _refusals.add((manifest.key, manifest.signature))
        logger.error(
            "index %s: refused a published index (%s): only what evalsite publishes under this deployment's "
            "SECRET_KEY is read; this one is never fetched or read, and this machine builds its own",
            manifest.key,
            "no signature" if not manifest.signature else "its signature is not this SECRET_KEY's",
        )
    return good


def _inside(name: object) -> bool:
    """A file name that stays inside the folder it is fetched into."""
    path = PurePosixPath(name) if isinstance(name, str) else None
    return path is not None and bool(name) and not path.is_absolute() and ".." not in path.parts


def fetch(manifest: IndexManifest, folder: Path) -> bool:
    """Bring a published version into `folder` (the caller holds its file lock): each file the folder lacks or
    holds in another revision, then the description. False when the publication changed under the fetch (a
    chunk gone): the caller serves what it has and tries again later."""
    started = time.perf_counter()
    copied = 0
    folder.mkdir(parents=True, exist_ok=True)
    for name, digest, size in manifest.files:
        path = folder / name
        if (
            path.is_file()
            and path.stat().st_size == size
            and (name not in REWRITTEN or _digest(path) == digest)
        ):
            continue  # a version's arrays never change: the same name and size is the same file
        fetched = _fetch_file(manifest.key, name, digest, size, path)
        copied += size
        if fetched is None:
            logger.info("index %s: %s changed while it was fetched; later", manifest.key, name)
            return False
        if (
            not fetched
        ):  # every chunk there, and not the bytes published: withdrawn, so that it is built again
            logger.error("index %s: %s does not match its digest; publication withdrawn", manifest.key, name)
            with transaction.atomic():
                IndexFile.objects.filter(key=manifest.key).delete()
                IndexManifest.objects.filter(pk=manifest.pk).delete()
            return False
    logger.info(
        "index %s: fetched %.1f MB in %.1f s", manifest.key, copied / 1e6, time.perf_counter() - started
    )
    return True


def _fetch_file(key: str, name: str, digest: str, size: int, path: Path) -> bool | None:
    """One file, into a temporary file renamed into place once its bytes match the digest. None when its
    chunks are gone (republished meanwhile); False when they are there but are not what was published."""
    path.parent.mkdir(parents=True, exist_ok=True)
    chunks = IndexFile.objects.filter(key=key, name=name, digest=digest).order_by("chunk")
    written, check = 0, hashlib.sha256()
    with _temporary(path) as (handle, temporary):
        for block in _blocks(chunks):
            if block is None:
                return None
            handle.write(block)
            check.update(block)
            written += len(block)
        if written != size or check.hexdigest() != digest:
            return False
        handle.flush()
        os.fsync(handle.fileno())
        os.replace(temporary, path)
    return True


def _blocks(chunks) -> Iterator[bytes | None]:
    """Each chunk's bytes, one row at a time (a million-page index is hundreds of MB: never all in memory)."""
    pks = list(chunks.values_list("pk", flat=True))
    if not pks:
        yield None
        return
    for pk in pks:
        found = IndexFile.objects.filter(pk=pk).values_list("data", flat=True)
        if not found:
            yield None
            return
        yield bytes(found[0])


@contextlib.contextmanager
def _temporary(path: Path):
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".fetch")
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle, temporary
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _engine(key: str) -> int:
    """The engine version in an index folder's name ('<uid>-v<version>-e<engine>-<embedder>'); 0 if none."""
    part = key.partition("-v")[2].split("-")
    return int(part[1][1:]) if len(part) > 1 and part[1][1:].isdigit() else 0


def _family(key: str) -> str:
    """An index folder's name without its version: '<uid>-v<version>-e<engine>-<embedder>' -> '<uid>-e...'."""
    uid, _, rest = key.partition("-v")
    return f"{uid}-{rest.split('-', 1)[1]}" if "-" in rest else key
