"""The dashboard's golden-set import: a preview that writes nothing (counts, or the bad line), then the import,
all or nothing; another tenant's collection is a 404 and a preview cannot be imported into another collection."""

from __future__ import annotations

import re
from datetime import timedelta

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from goldenset.models import GoldenEntry, StagedUpload
from tests.dashboard.conftest import text_of
from tests.support import EVERY_KIND_OF_PROBLEM

CSV = (
    "key,question,expected_document_ids,reference_answer\n"
    "q1,How long is the refund window?,refunds,30 days.\n"
    "q2,When does express shipping arrive?,shipping,Next day.\n"
)


def test_a_file_is_previewed_then_imported_whole(alice, world):
    url = reverse("dashboard:golden-import", args=["handbook"])
    assert "Import a golden set" in text_of(alice.get(url))
    bad = alice.post(url, {"file": SimpleUploadedFile("g.csv", (CSV + "q3\n").encode())})
    assert bad.status_code == 400 and "Line 4: expected 4 cells, found 1." in text_of(bad)
    preview = alice.post(url, {"file": SimpleUploadedFile("g.csv", CSV.encode())})
    text = text_of(preview)
    assert (
        "Preview of g.csv (csv)" in text and "would be created 2" in text and not GoldenEntry.objects.exists()
    )
    token = re.search(r'name="token" value="([0-9a-f]+)"', preview.content.decode()).group(1)
    imported = alice.post(url, {"token": token})
    assert imported.status_code == 302
    assert sorted(GoldenEntry.objects.values_list("key", flat=True)) == ["q1", "q2"]
    again = alice.post(url, {"token": token})  # a preview imports once
    assert again.status_code == 302 and GoldenEntry.objects.count() == 2
    assert "That preview has expired" in text_of(alice.get(again["Location"]))


def test_a_previewed_file_waits_in_the_database_so_any_machine_imports_it(alice, world, settings, tmp_path):
    """Not on the local disk of the machine that parsed it: the import is served here with another data
    directory, as a second machine would serve it. A preview left longer than an hour is gone."""
    url = reverse("dashboard:golden-import", args=["handbook"])
    preview = alice.post(url, {"file": SimpleUploadedFile("g.csv", CSV.encode())})
    token = re.search(r'name="token" value="([0-9a-f]+)"', preview.content.decode()).group(1)
    staged = StagedUpload.objects.get(token=token)
    assert bytes(staged.data) == CSV.encode() and staged.options == {
        "format": "csv",
        "create_documents": False,
    }
    settings.DATA_DIR = tmp_path / "another-machine"
    assert alice.post(url, {"token": token}).status_code == 302
    assert GoldenEntry.objects.count() == 2 and not StagedUpload.objects.exists()

    late = alice.post(url, {"file": SimpleUploadedFile("g.csv", CSV.replace("30 days", "31 days").encode())})
    token = re.search(r'name="token" value="([0-9a-f]+)"', late.content.decode()).group(1)
    StagedUpload.objects.update(created_at=timezone.now() - timedelta(hours=2))
    expired = alice.post(url, {"token": token})
    assert "That preview has expired" in text_of(alice.get(expired["Location"]))
    alice.post(url, {"file": SimpleUploadedFile("g.csv", CSV.encode())})  # staging sweeps the expired one
    assert StagedUpload.objects.count() == 1


def test_another_tenants_collection_is_404_and_a_token_is_bound_to_its_collection(
    alice, world, other_collection
):
    url = reverse("dashboard:golden-import", args=["handbook"])
    preview = alice.post(url, {"file": SimpleUploadedFile("g.csv", CSV.encode())})
    token = re.search(r'name="token" value="([0-9a-f]+)"', preview.content.decode()).group(1)
    before = GoldenEntry.objects.count()
    elsewhere = alice.post(reverse("dashboard:golden-import", args=[other_collection.slug]), {"token": token})
    assert elsewhere.status_code == 302 and GoldenEntry.objects.count() == before
    rival = world.other_tenant.collections.get().slug
    assert (
        alice.get(reverse("dashboard:golden-import", args=[rival]) + "?tenant=acme/rival").status_code == 404
    )


def test_the_preview_lists_every_bad_line_and_every_unknown_document(alice, world):
    url = reverse("dashboard:golden-import", args=["handbook"])
    bad = "key,question,answerable\nq1,Q1,maybe\nq2,Q2,true\nq3,Q3,perhaps\n"
    text = text_of(alice.post(url, {"file": SimpleUploadedFile("g.csv", bad.encode())}))
    assert "Line 2: answerable" in text and "Line 4: answerable" in text
    unknown = "key,question,expected_document_ids\nq1,Q1,ghost-1\nq2,Q2,refunds\nq3,Q3,ghost-3\n"
    text = text_of(alice.post(url, {"file": SimpleUploadedFile("g.csv", unknown.encode())}))
    assert "Line 2: expected_document_ids: 1 unknown in collection handbook: ghost-1" in text
    assert "Line 4: expected_document_ids: 1 unknown in collection handbook: ghost-3" in text
    assert not GoldenEntry.objects.exists()


def test_the_dashboard_preview_lists_every_problem_and_shows_the_first_rows(alice, world):
    url = reverse("dashboard:golden-import", args=["handbook"])
    text = text_of(alice.post(url, {"file": SimpleUploadedFile("g.csv", EVERY_KIND_OF_PROBLEM.encode())}))
    for where in (
        "Line 3: the question repeats line 2.",
        "Line 5: key 'a' repeats line 2.",
        "Line 4: expected_document_ids: 1 unknown",
        "Line 6: expected_document_ids: 1 unknown",
    ):
        assert where in text, text
    good = "key,question,expected_document_ids,reference_answer\nq1,Refund window?,refunds,Thirty days.\n"
    text = text_of(alice.post(url, {"file": SimpleUploadedFile("g.csv", good.encode())}))
    assert "The first entries as they will be stored" in text
    assert "line 2 create q1 Refund window? refunds Thirty days." in " ".join(text.split())
    assert not GoldenEntry.objects.exists()
