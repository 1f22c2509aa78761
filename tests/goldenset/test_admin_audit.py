"""Writes made in the admin are audited as "user:<username>", and the audit trail is readable there, read-only."""

from __future__ import annotations

from django.urls import reverse

from evalsite.audit.models import AuditEvent
from evalsite.tenancy.models import ApiKey
from goldenset.models import Collection, Document
from tests.goldenset.conftest import change_url, changelist_url, document_form, new_document_form

ACTOR = "user:admin"  # pytest-django's admin_user


def last_id() -> int:
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def events_since(since: int) -> list[tuple]:
    return list(
        AuditEvent.objects.filter(pk__gt=since)
        .order_by("pk")
        .values_list("object_type", "object_id", "action", "actor", "changes")
    )


# --- collections -------------------------------------------------------------------------------------------


def test_adding_renaming_and_deleting_a_collection_in_the_admin_is_audited(admin_client, world):
    since = last_id()
    response = admin_client.post(
        reverse("admin:goldenset_collection_add"),
        {"tenant": str(world.tenant.pk), "slug": "faq", "name": "FAQ", "_save": "Save"},
    )
    assert response.status_code == 302
    collection = Collection.objects.get(tenant=world.tenant, slug="faq")
    response = admin_client.post(
        change_url(collection),
        {"tenant": str(world.tenant.pk), "slug": "faq", "name": "Questions", "_save": "Save"},
    )
    assert response.status_code == 302
    response = admin_client.post(
        reverse("admin:goldenset_collection_delete", args=[collection.pk]), {"post": "yes"}
    )
    assert response.status_code == 302
    assert events_since(since) == [
        ("collection", "faq", "create", ACTOR, {"name": "FAQ"}),
        ("collection", "faq", "update", ACTOR, {"name": ["FAQ", "Questions"]}),
        ("collection", "faq", "delete", ACTOR, {"name": "Questions", "documents": 0, "golden_entries": 0}),
    ]
    assert set(AuditEvent.objects.filter(pk__gt=since).values_list("collection_uid", flat=True)) == {
        collection.uid
    }


def test_a_refused_collection_form_writes_nothing(admin_client, world):
    since = last_id()
    response = admin_client.post(
        reverse("admin:goldenset_collection_add"),
        {"tenant": str(world.tenant.pk), "slug": "handbook", "name": "Again", "_save": "Save"},
    )
    assert response.status_code == 200  # the form again, with its error
    assert events_since(since) == []


# --- documents ---------------------------------------------------------------------------------------------


def test_document_writes_in_the_admin_are_audited(admin_client, world):
    since = last_id()
    response = admin_client.post(reverse("admin:goldenset_document_add"), new_document_form(world.collection))
    assert response.status_code == 302
    document = Document.objects.get(collection=world.collection, external_id="returns")
    response = admin_client.post(change_url(document), document_form(document, title="Returns policy"))
    assert response.status_code == 302
    document.refresh_from_db()
    unchanged = admin_client.post(change_url(document), document_form(document))  # writes nothing: no event
    assert unchanged.status_code == 302
    response = admin_client.post(
        reverse("admin:goldenset_document_delete", args=[document.pk]), {"post": "yes"}
    )
    assert response.status_code == 302
    assert events_since(since) == [
        ("document", "returns", "create", ACTOR, {"title": "Returns", "pages": 1}),
        ("document", "returns", "update", ACTOR, {"fields": ["title"], "pages_changed": False}),
        ("document", "returns", "delete", ACTOR, {"title": "Returns policy", "source": "", "pages": 1}),
    ]


def test_deleting_documents_in_bulk_audits_each(admin_client, world):
    since = last_id()
    doomed = Document.objects.filter(collection=world.collection, external_id__in=["refunds", "shipping"])
    response = admin_client.post(
        changelist_url(Document),
        {"action": "delete_selected", "_selected_action": [str(d.pk) for d in doomed], "post": "yes"},
    )
    assert response.status_code == 302
    assert sorted((t, i, a, who) for t, i, a, who, _ in events_since(since)) == [
        ("document", "refunds", "delete", ACTOR),
        ("document", "shipping", "delete", ACTOR),
    ]


# --- API keys ----------------------------------------------------------------------------------------------


def test_api_key_writes_in_the_admin_are_audited(admin_client, world):
    since = last_id()
    response = admin_client.post(
        reverse("admin:tenancy_apikey_add"),
        {"tenant": str(world.tenant.pk), "role": "rater", "name": "ci", "_save": "Save"},
    )
    assert response.status_code == 302
    key = ApiKey.objects.get(name="ci")
    response = admin_client.post(change_url(key), {"name": "ci-nightly", "_save": "Save"})
    assert response.status_code == 302
    response = admin_client.post(
        changelist_url(ApiKey), {"action": "revoke_selected", "_selected_action": [str(key.pk)]}
    )
    assert response.status_code == 302
    response = admin_client.post(reverse("admin:tenancy_apikey_delete", args=[key.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert not ApiKey.objects.filter(pk=key.pk).exists()
    assert events_since(since) == [
        ("api-key", key.prefix, "create", ACTOR, {"name": "ci", "role": "rater"}),
        ("api-key", key.prefix, "update", ACTOR, {"name": ["ci", "ci-nightly"]}),
        ("api-key", key.prefix, "revoke", ACTOR, {"name": "ci-nightly"}),
        ("api-key", key.prefix, "delete", ACTOR, {"name": "ci-nightly", "revoked": True}),
    ]
    assert set(AuditEvent.objects.filter(pk__gt=since).values_list("tenant", flat=True)) == {world.tenant.pk}


# --- the trail in the admin --------------------------------------------------------------------------------


def test_the_audit_list_renders_with_its_filters_and_is_read_only(admin_client, world):
    world.client.delete("/lmkit/v1/collections/handbook/documents/refunds")
    url = changelist_url(AuditEvent)
    page = admin_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    for choice in (
        "object_type__exact=document",
        "object_type__exact=api-key",
        "action__exact=ingest",
        f"tenant={world.tenant.pk}",
    ):
        assert choice in html
    filtered = admin_client.get(url, {"object_type__exact": "document", "action__exact": "delete"})
    assert [(e.object_id, e.actor) for e in filtered.context["cl"].result_list] == [
        ("refunds", f"api-key:{world.key[:12]}")
    ]
    assert admin_client.get(url, {"q": "refunds"}).context["cl"].result_count == 1
    event = AuditEvent.objects.get(object_type="document", action="delete")
    detail = admin_client.get(change_url(event))
    assert detail.status_code == 200
    assert "Refunds" in detail.content.decode() and 'name="_save"' not in detail.content.decode()
    assert admin_client.get(reverse("admin:audit_auditevent_add")).status_code == 403
    assert admin_client.post(change_url(event), {"actor": "nobody"}).status_code == 403
    response = admin_client.post(reverse("admin:audit_auditevent_delete", args=[event.pk]), {"post": "yes"})
    assert response.status_code == 403
    assert AuditEvent.objects.filter(pk=event.pk).exists()
