"""The lmkit document endpoints: upsert, list, get, delete, file uploads and ingest jobs; the database asserted."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from django.conf import settings
from django.test import override_settings

from evalsite.jobs.models import Job, JobStatus
from evaluation.models import EvaluationJobKind
from goldenset.models import Collection, Document, GoldenJobKind, Page
from tests.support import iso, uploaded

URL = "/lmkit/v1/collections/handbook/documents"
UPLOAD_URL = "/lmkit/v1/collections/handbook/uploads"


def version(world) -> int:
    return Collection.objects.get(pk=world.collection.pk).content_version


def pages_of(world, document_id: str) -> list[str]:
    return list(
        Page.objects.filter(document__collection=world.collection, document__external_id=document_id)
        .order_by("number")
        .values_list("text", flat=True)
    )


def document_json(document: Document, *, pages: bool = False) -> dict:
    document.refresh_from_db()
    body = {
        "id": document.external_id,
        "title": document.title,
        "source": document.source,
        "metadata": document.metadata,
        "valid_from": iso(document.valid_from),
        "valid_until": iso(document.valid_until),
        "supersedes": document.supersedes,
        "last_verified": iso(document.last_verified),
        "created_at": iso(document.created_at),
        "updated_at": iso(document.updated_at),
    }
    if pages:
        body["pages"] = [{"number": p.number, "text": p.text} for p in document.pages.order_by("number")]
    else:
        body["page_count"] = document.pages.count()
    return body


def counts(
    received: int, created: int = 0, updated: int = 0, unchanged: int = 0, written: int = 0, deleted: int = 0
):
    """An ingest's answer: documents received, created, updated, unchanged; pages written and deleted."""
    return {
        "received": received,
        "created": created,
        "updated": updated,
        "unchanged": unchanged,
        "pages_written": written,
        "pages_deleted": deleted,
    }


def post(world, documents: list[dict], **extra):
    return world.client.post(
        URL, {"cluster_id": "acme", "tenant_id": "search", "documents": documents, **extra}, format="json"
    )


# --- upsert ------------------------------------------------------------------------------------------------


def test_it_creates_documents_with_every_field(world):
    assert version(world) == 1
    response = post(
        world,
        [
            {
                "id": "returns",
                "title": "Returns",
                "text": "Items can be returned within 14 days.\n\nReturns are free.",
                "source": "https://example.com/returns",
                "metadata": {"lang": "en", "owner": {"team": "support"}},
                "valid_from": "2024-01-01",
                "valid_until": "2024-12-31T12:30:00+02:00",
                "supersedes": ["refunds"],
                "last_verified": "2024-03-01T08:00:00",
            },
            {"id": "contact", "text": "Write to help@example.com."},
        ],
    )
    assert response.status_code == 200, response.json()
    assert response.json() == counts(2, created=2, written=2)
    returns = Document.objects.get(collection=world.collection, external_id="returns")
    assert returns.title == "Returns" and returns.source == "https://example.com/returns"
    assert returns.metadata == {"lang": "en", "owner": {"team": "support"}}
    assert returns.valid_from == datetime(2024, 1, 1, tzinfo=UTC)
    assert returns.valid_until == datetime(2024, 12, 31, 10, 30, tzinfo=UTC)
    assert returns.supersedes == ["refunds"]
    assert returns.last_verified == datetime(2024, 3, 1, 8, 0, tzinfo=UTC)
    assert pages_of(world, "returns") == ["Items can be returned within 14 days.\n\nReturns are free."]
    contact = Document.objects.get(collection=world.collection, external_id="contact")
    assert (contact.title, contact.source, contact.metadata, contact.supersedes) == ("", "", {}, [])
    assert (contact.valid_from, contact.valid_until, contact.last_verified) == (None, None, None)
    assert Document.objects.filter(collection=world.collection).count() == 5
    assert version(world) == 2


def test_sending_a_document_again_replaces_its_fields_and_pages(world):
    refunds = Document.objects.get(collection=world.collection, external_id="refunds")
    created_at = refunds.created_at
    assert pages_of(world, "refunds") == [
        "Customers get a full refund within 30 days of purchase.\n\nRefunds go to the original card."
    ]

    response = post(
        world,
        [
            {"id": "refunds", "title": "Refund policy", "pages": ["Refunds within 60 days.", "No cash."]},
            {"id": "gift-cards", "text": "Gift cards never expire."},
            {
                "id": "shipping",
                "title": "Shipping",
                "text": "Orders ship within two business days. Express shipping arrives the next day.",
            },
        ],
    )
    assert response.status_code == 200, response.json()
    assert response.json() == counts(3, created=1, updated=1, unchanged=1, written=3)
    refunds.refresh_from_db()
    assert refunds.title == "Refund policy" and refunds.created_at == created_at
    assert refunds.updated_at > created_at
    assert pages_of(world, "refunds") == ["Refunds within 60 days.", "No cash."]
    assert Document.objects.filter(collection=world.collection).count() == 4
    assert version(world) == 2

    # Fewer pages: the surplus pages are deleted, the content version bumped again.
    page_one = Page.objects.get(document=refunds, number=1)
    response = post(
        world, [{"id": "refunds", "title": "Refund policy", "pages": ["Refunds within 90 days."]}]
    )
    assert response.status_code == 200, response.json()
    assert response.json() == counts(1, updated=1, written=1, deleted=1)
    assert pages_of(world, "refunds") == ["Refunds within 90 days."]
    assert Page.objects.filter(document=refunds).get().pk == page_one.pk
    assert version(world) == 3

    # The same content again changes nothing, not even the content version.
    updated_at = Document.objects.get(pk=refunds.pk).updated_at
    response = post(
        world, [{"id": "refunds", "title": "Refund policy", "pages": ["Refunds within 90 days."]}]
    )
    assert response.json() == counts(1, unchanged=1)
    assert Document.objects.get(pk=refunds.pk).updated_at == updated_at
    assert version(world) == 3
    # The rival's document of the same id is untouched.
    rival = Document.objects.get(collection__tenant=world.other_tenant, external_id="refunds")
    assert [p.text for p in rival.pages.all()] == ["Rival refunds policy: no refunds."]


def test_an_id_repeated_in_one_call_keeps_the_last(world):
    response = post(world, [{"id": "faq", "text": "First."}, {"id": "faq", "text": "Second."}])
    assert response.status_code == 200, response.json()
    assert response.json() == counts(2, created=1, written=1)
    assert pages_of(world, "faq") == ["Second."]


def test_a_long_text_is_split_into_pages_at_paragraph_boundaries(world):
    limit = settings.EVALSITE_PAGE_CHARS
    paragraphs = [f"Paragraph {i} " + " ".join(f"word{i}x{n}" for n in range(limit // 20)) for i in range(6)]
    assert all(limit // 3 < len(p) < limit // 2 for p in paragraphs)
    text = "\n\n".join(paragraphs)
    assert len(text) > 2 * limit

    response = post(world, [{"id": "manual", "title": "Manual", "text": text}])
    assert response.status_code == 200, response.json()
    stored = pages_of(world, "manual")
    assert response.json() == counts(1, created=1, written=len(stored))
    assert len(stored) > 1
    assert all(len(page) <= limit for page in stored)
    # Every page is whole paragraphs, in order, and together they are the whole text.
    assert [page.split("\n\n") for page in stored] == _packed(paragraphs, limit)
    assert "\n\n".join(stored) == text


def _packed(paragraphs: list[str], limit: int) -> list[list[str]]:
    pages: list[list[str]] = [[]]
    for paragraph in paragraphs:
        if pages[-1] and len("\n\n".join([*pages[-1], paragraph])) > limit:
            pages.append([])
        pages[-1].append(paragraph)
    return pages


def test_pages_may_be_sent_as_strings_or_objects(world):
    response = post(world, [{"id": "guide", "pages": ["Page one.", {"text": "Page two."}, "Page three."]}])
    assert response.status_code == 200, response.json()
    assert response.json() == counts(1, created=1, written=3)
    assert list(
        Page.objects.filter(document__external_id="guide").order_by("number").values_list("number", "text")
    ) == [(1, "Page one."), (2, "Page two."), (3, "Page three.")]


def test_a_date_only_valid_until_covers_that_whole_day(world):
    response = post(
        world, [{"id": "promo", "text": "Promo.", "valid_from": "2024-06-01", "valid_until": "2024-06-30"}]
    )
    assert response.status_code == 200, response.json()
    promo = Document.objects.get(collection=world.collection, external_id="promo")
    assert promo.valid_from == datetime(2024, 6, 1, tzinfo=UTC)
    assert promo.valid_until == datetime(2024, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)
    body = world.client.get(f"{URL}/promo").json()
    assert (body["valid_from"], body["valid_until"]) == (
        "2024-06-01T00:00:00Z",
        "2024-06-30T23:59:59.999999Z",
    )


# --- list, get, delete -------------------------------------------------------------------------------------


def test_it_lists_documents_with_pagination(world):
    response = world.client.get(URL, {"cluster_id": "acme", "tenant_id": "search", "page_size": 2})
    assert response.status_code == 200, response.json()
    documents = {d.external_id: d for d in Document.objects.filter(collection=world.collection)}
    assert response.json() == {
        "count": 3,
        "next": "http://testserver/lmkit/v1/collections/handbook/documents?cluster_id=acme&page=2&page_size=2&tenant_id=search",
        "previous": None,
        "results": [document_json(documents["refunds"]), document_json(documents["shipping"])],
    }
    page_two = world.client.get(URL, {"page_size": 2, "page": 2}).json()
    assert page_two["results"] == [document_json(documents["warranty"])]
    assert page_two["next"] is None and page_two["previous"] is not None


def test_the_list_searches_ids_and_titles(world):
    post(world, [{"id": "hr/leave", "title": "Parental LEAVE", "text": "Sixteen weeks."}])

    def ids(text: str) -> list[str]:
        response = world.client.get(URL, {"text": text})
        assert response.status_code == 200, response.json()
        return [d["id"] for d in response.json()["results"]]

    assert ids("ship") == ["shipping"]
    assert ids("leave") == ["hr/leave"]
    assert ids("WARRANTY") == ["warranty"]
    assert ids("zzz") == []
    assert ids("") == ["hr/leave", "refunds", "shipping", "warranty"]


def test_it_gets_a_document_with_its_pages(world):
    post(world, [{"id": "guide", "title": "Guide", "pages": ["One.", "Two."], "metadata": {"n": 1}}])
    response = world.client.get(f"{URL}/guide", {"cluster_id": "acme", "tenant_id": "search"})
    assert response.status_code == 200, response.json()
    guide = Document.objects.get(collection=world.collection, external_id="guide")
    assert response.json() == document_json(guide, pages=True)
    assert response.json()["pages"] == [{"number": 1, "text": "One."}, {"number": 2, "text": "Two."}]


def test_it_answers_404_for_a_missing_document(world):
    response = world.client.get(f"{URL}/nope")
    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "code": "not-found",
            "message": "Document nope not found.",
            "details": {"resource": "Document", "id": "nope"},
        }
    }


def test_it_deletes_a_document_and_its_pages(world):
    shipping = Document.objects.get(collection=world.collection, external_id="shipping")
    response = world.client.delete(f"{URL}/shipping?cluster_id=acme&tenant_id=search")
    assert response.status_code == 204
    assert not Document.objects.filter(pk=shipping.pk).exists()
    assert not Page.objects.filter(document_id=shipping.pk).exists()
    assert sorted(
        Document.objects.filter(collection=world.collection).values_list("external_id", flat=True)
    ) == [
        "refunds",
        "warranty",
    ]
    assert version(world) == 2
    assert world.client.delete(f"{URL}/shipping").status_code == 404
    assert version(world) == 2


def test_an_id_with_slashes_is_reachable(world):
    response = post(
        world, [{"id": "guides/setup/linux.md", "title": "Linux setup", "text": "Run the installer."}]
    )
    assert response.status_code == 200, response.json()
    url = f"{URL}/guides/setup/linux.md"
    body = world.client.get(url).json()
    assert body["id"] == "guides/setup/linux.md"
    assert body["pages"] == [{"number": 1, "text": "Run the installer."}]
    assert world.client.get(f"{URL}/guides/setup").status_code == 404
    assert world.client.delete(url).status_code == 204
    assert not Document.objects.filter(external_id="guides/setup/linux.md").exists()
    assert Document.objects.filter(collection=world.collection).count() == 3


# --- uploads -----------------------------------------------------------------------------------------------


def test_it_uploads_beir_corpus_rows(world):
    rows = [
        {"_id": "d1", "title": "Doc one", "text": "First body.", "url": "https://x/1"},
        {"_id": 2, "title": "Doc two", "text": "Second body.", "metadata": {"lang": "de"}},
    ]
    content = "\n".join(json.dumps(r) for r in rows) + "\n\n"
    response = world.client.post(
        UPLOAD_URL,
        {"cluster_id": "acme", "tenant_id": "search", "file": uploaded("corpus.jsonl", content)},
        format="multipart",
    )
    assert response.status_code == 200, response.json()
    assert response.json() == counts(2, created=2, written=2)
    d1 = Document.objects.get(collection=world.collection, external_id="d1")
    d2 = Document.objects.get(collection=world.collection, external_id="2")
    assert (d1.title, d1.source, d1.metadata) == ("Doc one", "corpus.jsonl", {"url": "https://x/1"})
    assert (d2.title, d2.source, d2.metadata) == ("Doc two", "corpus.jsonl", {"lang": "de"})
    assert pages_of(world, "d1") == ["First body."] and pages_of(world, "2") == ["Second body."]
    assert version(world) == 2


def test_it_uploads_markdown_and_text_files_in_one_call(world):
    markdown = "Intro line.\n\n# Onboarding Guide\n\nWelcome aboard.\n"
    response = world.client.post(
        UPLOAD_URL,
        {
            "file": [
                uploaded("onboarding.md", markdown),
                uploaded("notes.txt", "# Not a heading\n\nPlain notes."),
            ]
        },
        format="multipart",
    )
    assert response.status_code == 200, response.json()
    assert response.json() == counts(2, created=2, written=2)
    onboarding = Document.objects.get(collection=world.collection, external_id="onboarding")
    notes = Document.objects.get(collection=world.collection, external_id="notes")
    assert (onboarding.title, onboarding.source) == ("Onboarding Guide", "onboarding.md")
    assert (notes.title, notes.source) == ("notes", "notes.txt")
    assert pages_of(world, "onboarding") == ["Intro line.\n\n# Onboarding Guide\n\nWelcome aboard."]
    assert pages_of(world, "notes") == ["# Not a heading\n\nPlain notes."]
    assert Document.objects.filter(collection=world.collection).count() == 5


def test_an_upload_replaces_a_document_of_the_same_id(world):
    response = world.client.post(
        UPLOAD_URL, {"file": uploaded("refunds.txt", "New refund rules.")}, format="multipart"
    )
    assert response.status_code == 200, response.json()
    assert response.json() == counts(1, updated=1, written=1)
    assert pages_of(world, "refunds") == ["New refund rules."]


def test_it_refuses_an_unsupported_file_type(world):
    response = world.client.post(
        UPLOAD_URL,
        {"file": [uploaded("ok.txt", "Fine."), uploaded("report.pdf", b"%PDF-1.4")]},
        format="multipart",
    )
    assert response.status_code == 415
    assert response.json() == {
        "error": {
            "code": "unsupported-file",
            "message": "report.pdf: unsupported file type .pdf; upload .jsonl (BEIR corpus rows), .md or .txt.",
            "details": {"file": "report.pdf"},
        }
    }
    assert not Document.objects.filter(external_id="ok").exists()
    assert Document.objects.filter(collection=world.collection).count() == 3 and version(world) == 1


def test_it_refuses_a_malformed_jsonl_line_naming_it(world):
    content = '{"_id": "good", "text": "Fine."}\n{"_id": "bad", "text": "oops"\n'
    response = world.client.post(UPLOAD_URL, {"file": uploaded("corpus.jsonl", content)}, format="multipart")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "beir-invalid"
    assert error["message"].startswith("corpus.jsonl line 2, column ")
    assert error["details"] == {"file": "corpus.jsonl", "line": 2, "column": error["details"]["column"]}
    assert isinstance(error["details"]["column"], int)
    assert not Document.objects.filter(external_id__in=["good", "bad"]).exists()
    assert version(world) == 1


# --- ingest jobs -------------------------------------------------------------------------------------------


@override_settings(EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS=2)
def test_a_large_ingest_runs_as_a_job(world, django_capture_on_commit_callbacks):
    documents = [
        {"id": "refunds", "text": "Refunds changed.", "valid_until": "2030-01-31"},
        {"id": "new-1", "title": "New one", "text": "Alpha.\n\nBeta."},
        {"id": "new-2", "pages": ["Gamma.", "Delta."], "metadata": {"k": "v"}},
    ]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = post(world, documents)
    assert response.status_code == 202, response.json()
    job = Job.objects.get(kind=GoldenJobKind.INGEST)
    assert response.json() == {"job_id": str(job.pk), "status": "Queued"}
    assert len(callbacks) == 2  # queueing the job; then, as it ran, the content change's hook
    # The content changed: the build of the new version's search index was queued (and ran: sync mode).
    world.collection.refresh_from_db()
    build = Job.objects.get(
        kind=EvaluationJobKind.INDEX_BUILD, input__content_version=world.collection.content_version
    )
    assert build.status == JobStatus.COMPLETED and build.result["parts"] == ["bm25:lucene"]
    assert (job.kind, job.status, job.tenant, job.collection) == (
        GoldenJobKind.INGEST,
        JobStatus.COMPLETED,
        world.tenant,
        world.collection,
    )

    poll = world.client.get(f"/lmkit/v1/jobs/{job.pk}")
    assert poll.status_code == 200, poll.json()
    assert poll.json() == {
        "job_id": str(job.pk),
        "kind": "Ingest",
        "status": "Completed",
        "progress": 1.0,
        "progress_done": 3,
        "progress_total": 3,
        "collection_id": "handbook",
        "result": counts(3, created=2, updated=1, written=4),
        "error": None,
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
        "attempts": 1,
        "history": [],
        "parent_id": None,
    }
    assert pages_of(world, "refunds") == ["Refunds changed."]
    assert pages_of(world, "new-1") == ["Alpha.\n\nBeta."]
    assert pages_of(world, "new-2") == ["Gamma.", "Delta."]
    refunds = Document.objects.get(collection=world.collection, external_id="refunds")
    assert refunds.valid_until == datetime(2030, 1, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert Document.objects.get(external_id="new-2").metadata == {"k": "v"}
    assert Document.objects.filter(collection=world.collection).count() == 5
    assert version(world) == 2


@override_settings(EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS=2)
def test_a_large_upload_runs_as_a_job(world, django_capture_on_commit_callbacks):
    content = "".join(json.dumps({"_id": f"u{i}", "text": f"Body {i}."}) + "\n" for i in range(3))
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client.post(
            UPLOAD_URL, {"file": uploaded("corpus.jsonl", content)}, format="multipart"
        )
    assert response.status_code == 202, response.json()
    job = Job.objects.get(pk=response.json()["job_id"])
    assert job.status == JobStatus.COMPLETED
    assert job.result == counts(3, created=3, written=3)
    assert sorted(
        Document.objects.filter(collection=world.collection, source="corpus.jsonl").values_list(
            "external_id", flat=True
        )
    ) == ["u0", "u1", "u2"]


@override_settings(EVALSITE_INGEST_JOB_THRESHOLD_DOCUMENTS=2)
def test_an_ingest_at_the_threshold_is_written_at_once(world):
    response = post(world, [{"id": "a", "text": "A."}, {"id": "b", "text": "B."}])
    assert response.status_code == 200, response.json()
    assert response.json() == counts(2, created=2, written=2)
    assert not Job.objects.exists()
