"""The admin reads JSON and ids by the same rules as the API: what the database cannot hold or a URL cannot reach
is a form error, never a 500."""

from __future__ import annotations

import pytest
from django.urls import reverse

from goldenset.models import Collection, Document
from tests.goldenset.conftest import document_form
from tests.support import db_state

# --- the admin reads JSON and ids by the same rules -----------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ('{"k": "\\ud800"}', "Line 1, column 8: lone surrogates are not valid Unicode."),
        ('{"k": "\\u0000"}', "Line 1, column 8: NUL characters are not allowed."),
        ('{"k": NaN}', "Line 1, column 7: NaN is not valid JSON."),
        ('{"k": 1e400}', "Line 1, column 7: the number 1e400 is out of range."),
        ('{"k": ' + "1" * 5000 + "}", "Line 1, column 7: an integer of 5000 digits is too long."),
        (
            '{"k": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "Line 1, column 106: arrays and objects nested more than 100 deep.",
        ),
    ],
    ids=["surrogate", "nul", "nan", "overflow", "long-int", "deep"],
)
def test_the_admin_refuses_json_the_database_cannot_hold(admin_client, world, metadata, error):
    document = Document.objects.get(collection=world.collection, external_id="refunds")
    url = reverse("admin:goldenset_document_change", args=[document.pk])
    before = db_state()
    response = admin_client.post(url, document_form(document) | {"metadata": metadata})
    assert response.status_code == 200  # the form again, with the error
    assert response.context["adminform"].form.errors == {"metadata": [error]}
    assert db_state() == before


def test_the_admin_refuses_unusable_document_ids(admin_client, world):
    document = Document.objects.get(collection=world.collection, external_id="refunds")
    url = reverse("admin:goldenset_document_change", args=[document.pk])
    before = db_state()
    response = admin_client.post(url, document_form(document) | {"external_id": "a/../b"})
    assert response.context["adminform"].form.errors == {
        "external_id": ['A document id may not have "." or ".." as a path segment.']
    }
    assert db_state() == before


@pytest.mark.parametrize(("slug", "problem"), [("..", 'may not be ".."'), ("a/b", 'may not contain "/"')])
def test_the_admin_refuses_unusable_collection_ids(admin_client, world, slug, problem):
    before = db_state()
    response = admin_client.post(
        reverse("admin:goldenset_collection_add"), {"tenant": world.tenant.pk, "slug": slug, "name": "N"}
    )
    assert response.context["adminform"].form.errors == {"slug": [f"A collection id {problem}."]}
    assert db_state() == before
    response = admin_client.post(
        reverse("admin:goldenset_collection_add"), {"tenant": world.tenant.pk, "slug": "fine", "name": "N"}
    )
    assert response.status_code == 302
    assert Collection.objects.filter(tenant=world.tenant, slug="fine").exists()
