"""A search index on disk: one folder per collection, content version, engine version and embedder, holding
each array as a .npy file (mapped by every process through the page cache) and a small JSON description
(evaluation.retrieval.search.index_format) renamed into place last, so a reader sees a whole version or none.
Nothing read here can run code: JSON, and arrays read with allow_pickle=False. Locks between processes are
flock()s on files beside it. evaluation.retrieval.indexes decides what to read, build and keep in memory."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from django.conf import settings

from evaluation.retrieval import index_store
from evaluation.retrieval.embedding_store import embedder_identity, endpoint_settings
from evaluation.retrieval.index_store import DESCRIPTION
from evaluation.retrieval.search import index_format
from evaluation.retrieval.search.bm25 import BM25Index, BM25Params
from evaluation.retrieval.search.corpus import Corpus
from evaluation.retrieval.search.engine import VECTORS, SearchIndex
from evaluation.retrieval.search.postings import Postings, load_mapped
from goldenset.models import Collection

logger = logging.getLogger(__name__)


# Bump when the index layout or the indexed text changes: old files are then ignored.
# 6: postings of (tf, length) codes, no weights saved; 5: a JSON description (index.json), no pickle
ENGINE_VERSION = 6

DEFAULT_PART = "bm25:lucene"
PARTS = ("bm25:lucene", "bm25:okapi", VECTORS)  # every part an index can have


BUILDING = ".postings."  # the prefix of a folder postings are built or saved in, renamed when whole


def build_folder(path: Path):
    """A callable giving a new folder for postings beside the index `path` describes (a full build writes its
    postings there: index_updates.full_build), after removing those an earlier build left (a process that
    died: the caller holds the index's file lock). write_index renames it into place."""

    def new_folder() -> Path:
        folder = path.parent
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob(f"{BUILDING}*"):
            shutil.rmtree(stale, ignore_errors=True)
        return Path(tempfile.mkdtemp(dir=folder, prefix=BUILDING))

    return new_folder


def index_key(collection: Collection) -> tuple:
    # The embedder is part of the key: its vectors live in the index, so changing EVALSITE_EMBEDDER (or the
    # endpoint's model) must not serve the old vectors.
    embedder = hashlib.sha256(embedder_identity().encode()).hexdigest()[:12]
    return (str(collection.uid), collection.content_version, ENGINE_VERSION, embedder)


def index_path(key: tuple) -> Path:
    """The index's description (JSON, index_format), in the folder that holds its arrays."""
    return Path(settings.EVALSITE_INDEX_DIR) / f"{key[0]}-v{key[1]}-e{key[2]}-{key[3]}" / DESCRIPTION


def saved_versions(collection: Collection) -> list[tuple[int, Path]]:
    """(content version, folder) of the collection's saved indexes under this engine and embedder, newest first."""
    key = index_key(collection)
    found = []
    for folder in Path(settings.EVALSITE_INDEX_DIR).glob(f"{key[0]}-v*-e{key[2]}-{key[3]}"):
        version = folder.name.removeprefix(f"{key[0]}-v").split("-", 1)[0]
        if version.isdigit() and (folder / DESCRIPTION).is_file():
            found.append((int(version), folder))
    return sorted(found, reverse=True)


def saved_parts_of(folder: Path) -> frozenset[str]:
    try:
        return frozenset(json.loads((folder / "parts.json").read_text()))
    except (OSError, ValueError):
        return frozenset()


def saved_parts(collection: Collection) -> frozenset[str]:
    """The parts of the collection's saved indexes (what its next version should have too)."""
    return frozenset().union(*(saved_parts_of(folder) for _version, folder in saved_versions(collection)))


def read_index(path: Path) -> SearchIndex | None:
    """The index described by `path`, its arrays opened with mmap (shared by every process through the page
    cache; the folder of an older version may be removed while a process still reads it: its files live on
    until the last mapping closes). None, logged, when the folder holds no index this version can read (an
    older format's among them: it is rebuilt, never unpickled)."""
    folder = path.parent
    try:
        with path.open("rb") as handle:
            stamp = fd_stamp(handle.fileno())  # the file read, whatever is renamed over its name meanwhile
            description = index_format.parse(handle.read())
        index = index_format.restored_index(description, _mapped(folder), endpoint_settings)
        index.saved_stamp = stamp
        postings = Postings.open(folder / "postings") if description["postings"] else None
        index.postings = postings
        for variant in description["bm25"]:
            if postings is None:
                raise ValueError("BM25 weights saved without their postings")
            index.bm25_indexes[variant] = BM25Index(
                postings, BM25Params(variant), idf=load_mapped(folder / f"bm25-{variant}-idf.npy")
            )
        if description["vectors"]:
            index.page_vectors = load_mapped(folder / "vectors.npy")
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        logger.warning("index %s unreadable (%s); rebuilding", folder, exc)
        return None
    return index


def read_corpus(folder: Path) -> Corpus:
    """The corpus of the index saved in `folder` (no texts): what an update starts from. OSError or ValueError
    when there is none this version can read."""
    description = index_format.parse((folder / DESCRIPTION).read_bytes())
    try:
        return index_format.restored_corpus(description, _mapped(folder))
    except (KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"a corpus description without {exc}") from None


def _mapped(folder: Path):
    return lambda name: load_mapped(folder / f"{name}.npy")


def write_index(collection: Collection, path: Path, index: SearchIndex) -> tuple[int, int, int]:
    """Save the index where other processes find it: each array a .npy file (written once: a version's arrays
    never change), then the description, JSON written to a file of a unique name renamed over the old one (so
    a reader sees the old description or the new one, each naming only files already in place). Folders of
    older content versions of the collection are removed."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    with index._locks.state:  # a snapshot of the parts: never changed in place, only replaced
        postings, variants, vectors = index.postings, dict(index.bm25_indexes), index.page_vectors
        embedder = index.embedder if vectors is not None else None
    if postings is not None and not (folder / "postings").is_dir():
        built = postings.folder
        if built is not None and built.parent == folder and built.name.startswith(BUILDING):
            os.rename(built, folder / "postings")  # built in place (build_folder): its mappings stay valid
        else:
            staging = Path(tempfile.mkdtemp(dir=folder, prefix=BUILDING))
            postings.save(staging)
            os.rename(staging, folder / "postings")
    for variant, bm25 in variants.items():
        _save_array(folder / f"bm25-{variant}-idf.npy", bm25.idf)
    if vectors is not None:
        _save_array(folder / "vectors.npy", vectors)
    if index.corpus.stamps is not None and postings is not None:
        index.corpus.stamps.save(folder / "content.npz")  # what the next version's update compares
    description, arrays = index_format.describe(
        index, postings=postings is not None, variants=list(variants), embedder=embedder
    )
    for name, array in arrays.items():
        _save_array(folder / f"{name}.npy", array)
    parts = [part for part in sorted({*(f"bm25:{v}" for v in variants), "vectors"}) if index.has_part(part)]
    (folder / "parts.json").write_text(json.dumps(parts))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".index.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(json.dumps(description, separators=(",", ":")).encode())
            handle.flush()
            stamp = fd_stamp(handle.fileno())
        os.replace(temporary, path)  # atomic: readers see the old file or the new one, never half of one
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    for version, stale in saved_versions(collection):
        # An older version goes once this one has every part it had (until then it answers the searches that
        # read the parts this one lacks). Processes that mapped its files keep reading them: the kernel frees
        # them when the last one closes.
        if version < (index.content_version or 0) and saved_parts_of(stale) <= set(parts):
            shutil.rmtree(stale, ignore_errors=True)
    if index_store.enabled():
        index_store.publish(collection, folder, index.content_version or 0, parts)
    return stamp


def _save_array(path: Path, array: np.ndarray) -> None:
    if path.exists():
        return
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".npy")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock shared by every process that uses this index directory (flock on a lock file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def fetch_lock(path: Path) -> Iterator[None]:
    """The lock a machine's processes take to fetch a published version: not the build's lock, which a build
    holds for as long as it runs, while a request only ever waits for a copy."""
    with file_lock(path.with_name("fetch")):
        yield


def directory_id() -> str:
    """This index directory's identity: a random name kept in it (`.directory`), the same for every process and
    machine that shares the directory. The IndexBuild job records where it saved; a machine that finds a build
    done in another directory since its own was named knows it cannot read what was built
    (evaluation.retrieval.indexes)."""
    root = Path(settings.EVALSITE_INDEX_DIR)
    path = root / ".directory"
    with contextlib.suppress(FileNotFoundError):
        return path.read_text().strip()
    root.mkdir(parents=True, exist_ok=True)
    temporary = root / f".directory.{os.getpid()}.{secrets.token_hex(4)}"
    temporary.write_text(secrets.token_hex(16))
    try:
        os.link(temporary, path)  # of several processes naming it at once, one name wins and all read it
    except FileExistsError:
        pass
    finally:
        os.unlink(temporary)
    return path.read_text().strip()


def directory_named_at() -> float:
    """When this index directory got its identity (directory_id), as a POSIX time: a build that ended before
    cannot have saved into it, wherever it saved (an emptied directory is named again)."""
    directory_id()
    return (Path(settings.EVALSITE_INDEX_DIR) / ".directory").stat().st_mtime


def fd_stamp(fd: int) -> tuple[int, int, int]:
    info = os.fstat(fd)
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    """Which version of the file is there (inode, size, mtime): a save renames a new file into place."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


# --- the published copies (evaluation.retrieval.index_store): every machine serves what any machine built ----


def fetch_published(path: Path, index: SearchIndex | None) -> bool:
    """Copy the published files of this version into its folder when they hold parts the index read from it
    lacks (the caller holds a lock on the folder); True when it did. Decided on the index as read, not on the
    folder's parts list: a list written ahead of its description must not stop a copy for good."""
    if not index_store.enabled():
        return False
    manifest = index_store.published(path.parent.name)
    have = frozenset(p for p in PARTS if index is not None and index.has_part(p))
    if manifest is None or frozenset(manifest.parts) <= have:
        return False
    return index_store.fetch(manifest, path.parent)


def fetch_older(collection: Collection, wanted: frozenset[str]) -> bool:
    """The newest older published version with the wanted parts, copied here; True when one was."""
    if not index_store.enabled():
        return False
    key = index_key(collection)
    for manifest in index_store.older_published(index_path(key).parent.name, key[1]):
        if wanted <= frozenset(manifest.parts):
            folder = Path(settings.EVALSITE_INDEX_DIR) / manifest.key
            with fetch_lock(folder / DESCRIPTION):
                return index_store.fetch(manifest, folder)
    return False
