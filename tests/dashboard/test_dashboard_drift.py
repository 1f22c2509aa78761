"""The drift page of a collection (/collections/<slug>/drift/): viewers read the drifted entries with their
reasons and a link to each; a curator marks one reviewed again, which clears its `changed`."""

from __future__ import annotations

from django.test import Client

from goldenset import services
from goldenset.services.drift import drifted_entries
from tests.support import member_of


def _rewrite_refunds(world):
    services.documents_upsert(
        collection=world.collection,
        documents=[
            services.DocumentInput(id="refunds", title="Refunds", pages=["Refunds within 60 days now."])
        ],
        actor="t",
    )


def _client(world, name, role):
    client = Client()
    client.force_login(member_of(world.tenant, name, role=role))
    return client


def test_a_viewer_reads_the_drifted_entries_and_may_not_mark_them(world, golden):
    url = f"/collections/{world.collection.slug}/drift/"
    viewer = _client(world, "vera", "viewer")
    html = viewer.get(url).content.decode()
    assert "No drift" in html
    _rewrite_refunds(world)
    html = viewer.get(url).content.decode()
    entry = golden[0]
    assert f"/collections/handbook/golden/{entry.pk}/" in html
    assert "<strong>changed</strong>: refunds" in html
    assert 'href="/collections/handbook/drift/" aria-current="page"' in html
    assert viewer.post(url, {"entry": str(entry.pk)}).status_code == 403
    # The entries that expect refunds (the first and the third), unchanged by the refused POST.
    assert [e.entry_id for e in drifted_entries(world.collection)] == [str(golden[0].pk), str(golden[2].pk)]


def test_a_curator_marks_a_drifted_entry_reviewed_from_the_page(world, golden):
    url = f"/collections/{world.collection.slug}/drift/"
    _rewrite_refunds(world)
    curator = _client(world, "cora", "curator")
    response = curator.post(url, {"entry": str(golden[0].pk)})
    assert response.status_code == 302 and response["Location"] == url
    assert [e.entry_id for e in drifted_entries(world.collection)] == [str(golden[2].pk)]
    curator.post(url, {"entry": str(golden[2].pk)})
    assert "No drift" in curator.get(url).content.decode()


def test_another_tenants_collection_is_a_404(world, outsider):
    services.collection_create(tenant=world.tenant, slug="private", actor="t")
    client = Client()
    client.force_login(outsider)
    assert client.get("/collections/private/drift/").status_code == 404
