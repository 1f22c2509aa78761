"""The lmkit API paths of the world's "handbook" collection and its two upload calls.

Several files here hold regressions of the fuzzing run against the API (numbered as in its report): every bad
input answers a 4xx in the one envelope naming the offending field, record or line, never a 500, and changes
nothing; they run on SQLite and (with DATABASE_URL=postgres://...) on PostgreSQL, where several of them were
database errors.
"""

from __future__ import annotations

from tests.support import uploaded

API = "/lmkit/v1"
DOCS = f"{API}/collections/handbook/documents"
UPLOADS = f"{API}/collections/handbook/uploads"
GS = f"{API}/search/golden-set"
GOLDEN_UPLOAD = f"{GS}/upload"


def upload(world, name: str, content: str | bytes):
    """A document upload of one file to the handbook."""
    return world.client.post(UPLOADS, {"file": uploaded(name, content)}, format="multipart")


def golden_upload(world, content: str | bytes, collection_id: str = "handbook"):
    """A golden.json upload to the collection."""
    return world.client.post(
        GOLDEN_UPLOAD,
        {"collection_id": collection_id, "file": uploaded("golden.json", content)},
        format="multipart",
    )
