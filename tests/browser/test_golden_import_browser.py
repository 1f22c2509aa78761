"""Importing a golden set in a real browser: pick a file, read the preview (nothing written yet), import it."""

from __future__ import annotations

import pytest

from goldenset.models import GoldenEntry
from tests.browser.conftest import HANDBOOK, HANDBOOK_PASSWORD, HANDBOOK_USER
from tests.browser.pages import assert_clean, log_in, watch_requests

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_user_previews_then_imports_a_promptfoo_file(
    live_server, page, screenshot, handbook_member, tmp_path
):
    path = tmp_path / "tests.yaml"
    path.write_text(
        "- description: refund-window\n  vars:\n    question: How long do customers have to get a refund?\n"
        "  assert:\n    - type: factuality\n      value: 30 days.\n  metadata:\n    expected_document_ids: [refunds]\n"
        "- vars:\n    question: When does express shipping arrive?\n  metadata:\n    expected_document_ids: [shipping]\n"
    )
    urls = watch_requests(page)
    log_in(page, live_server.url, HANDBOOK_USER, HANDBOOK_PASSWORD)
    page.goto(f"{live_server.url}/collections/{HANDBOOK}/")
    page.click("a.button:has-text('Import')")
    page.set_input_files("input[name=file]", str(path))
    page.click("button:has-text('Preview')")
    page.wait_for_selector("section.preview")
    screenshot(page, "golden-import-01-preview")
    assert page.inner_text("section.preview dd.created") == "2"
    assert "(promptfoo)" in page.inner_text("#preview-heading")
    assert not GoldenEntry.objects.exists()  # a preview writes nothing
    page.click("button:has-text('Import 2 entries')")
    page.wait_for_url(f"**/collections/{HANDBOOK}/")
    screenshot(page, "golden-import-02-imported")
    assert "Imported tests.yaml: 2 created" in page.inner_text("body")
    entry = GoldenEntry.objects.get(key="refund-window")
    assert entry.reference_answer == "30 days." and entry.expected_document_ids == ["refunds"]
    assert_clean(page, urls, "golden import")
