"""The lmkit API paths of the world's "handbook" collection, its two upload calls, the admin's document form and the
admin's URLs of an object and of a model's list.

Several files here hold regressions of the fuzzing run against the API (numbered as in its report): every bad
input answers a 4xx in the one envelope naming the offending field, record or line, never a 500, and changes
nothing; they run on SQLite and (with DATABASE_URL=postgres://...) on PostgreSQL, where several of them were
database errors.
"""

from __future__ import annotations

from django.urls import reverse

from goldenset.models import Document
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


def new_document_form(collection) -> dict[str, str]:
    """The document add form's POST data: document "returns" of the collection, with one page."""
    return {
        "collection": str(collection.pk),
        "external_id": "returns",
        "title": "Returns",
        "metadata": "{}",
        "pages-TOTAL_FORMS": "1",
        "pages-INITIAL_FORMS": "0",
        "pages-0-number": "1",
        "pages-0-text": "Return items unopened.",
        "_save": "Save",
    }


def document_form(document: Document, *, title: str | None = None, page_suffix: str = "", new_page: str = ""):
    """The document change form's POST data as stored, optionally editing the title and pages."""
    pages = list(document.pages.order_by("number"))
    data = {
        "external_id": document.external_id,
        "title": document.title if title is None else title,
        "source": document.source,
        "metadata": "{}",
        # A field with a callable default posts its initial value too, as the browser's form does.
        "initial-metadata": "{}",
        "supersedes": "",
        "pages-TOTAL_FORMS": str(len(pages) + bool(new_page)),
        "pages-INITIAL_FORMS": str(len(pages)),
        "pages-MIN_NUM_FORMS": "0",
        "pages-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    for i, page in enumerate(pages):
        data |= {
            f"pages-{i}-id": str(page.pk),
            f"pages-{i}-document": str(document.pk),
            f"pages-{i}-number": str(page.number),
            f"pages-{i}-text": page.text + page_suffix,
        }
    if new_page:
        n = len(pages)
        data |= {
            f"pages-{n}-document": str(document.pk),
            f"pages-{n}-number": str(n + 1),
            f"pages-{n}-text": new_page,
        }
    return data


def change_url(obj) -> str:
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])


def changelist_url(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
