"""The curators' admin: pages render, lists cost a fixed number of queries, and every write is audited."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evalsite.audit.models import AuditEvent
from evalsite.jobs.models import Job
from evalsite.tenancy.models import ApiKey, Cluster, Membership, Tenant, hash_api_key
from evalsite.tenancy.services import api_key_create, tenant_get_or_create
from goldenset import services
from goldenset.golden_files import GoldenRecord, parse_golden
from goldenset.models import (
    Collection,
    Document,
    GoldenEntry,
    GoldenJobKind,
    Origin,
    Page,
    RejectedQuestion,
)
from goldenset.services import EntryInput
from tests.goldenset.conftest import change_url, changelist_url, document_form, new_document_form
from tests.support import add_entries, member_of

ACTOR = "user:admin"  # pytest-django's admin_user


def refund_entry(collection: Collection, **kwargs) -> GoldenEntry:
    values = {
        "question": "How long is the refund window?",
        "expected_document_ids": ["refunds"],
        "reference_answer": "30 days.",
        "key": "q-refund",
        "tags": ["policy", "money"],
    }
    values.update(kwargs)
    return add_entries(collection, EntryInput(**values))[0]


def entry_form(entry: GoldenEntry, **overrides) -> dict:
    """The change form's POST data for entry as stored, with overrides (booleans: True / False)."""
    values = {
        "key": entry.key,
        "question": entry.question,
        "reference_answer": entry.reference_answer,
        "expected_document_ids": "\n".join(entry.expected_document_ids),
        "grades": "{}",
        "tags": ", ".join(entry.tags),
        "answerable": entry.answerable,
        "reviewed": entry.reviewed,
        "_save": "Save",
    }
    values.update(overrides)
    return {k: ("on" if v is True else v) for k, v in values.items() if v is not False}


def entry_events(entry: GoldenEntry, action: str | None = None):
    events = AuditEvent.objects.filter(object_id=str(entry.pk))
    return events.filter(action=action) if action else events


# ---------------------------------------------------------------- every page renders


@pytest.fixture
def full_world(world, admin_user):
    """The world plus one row of every admin'd model, so every change page has something to show."""
    entry = refund_entry(world.collection)
    job = Job.objects.create(tenant=world.tenant, collection=world.collection, kind=GoldenJobKind.GENERATE)
    Membership.objects.create(user=admin_user, tenant=world.tenant, role="admin")
    services.golden_entry_update(entry=entry, changes={"reviewed": True}, actor="test")
    rejected, _ = services.golden_entries_add(
        collection=world.collection,
        entries=[EntryInput(question="Which question did a curator reject?")],
        actor="job",
        origin=Origin.GENERATED,
    )
    services.golden_entries_delete(entries=rejected, actor="test")  # remembered: a RejectedQuestion
    return {"entry": entry, "job": job}


@pytest.mark.parametrize(
    "model",
    [
        GoldenEntry,
        Document,
        Collection,
        Cluster,
        Tenant,
        Membership,
        ApiKey,
        AuditEvent,
        Job,
        RejectedQuestion,
    ],
)
def test_changelist_and_change_page_render(admin_client, full_world, model):
    """Each changelist and the change page of its first row answer 200 for a superuser."""
    response = admin_client.get(changelist_url(model))
    assert response.status_code == 200
    obj = model.objects.first()
    assert obj is not None
    response = admin_client.get(change_url(obj))
    assert response.status_code == 200


@pytest.mark.parametrize("model", [GoldenEntry, Document, Collection, Cluster, Tenant, Membership, ApiKey])
def test_add_page_renders(admin_client, world, model):
    response = admin_client.get(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add"))
    assert response.status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        {"q": "refund"},
        {"collection": "1"},
        {"collection": "not-a-number"},
        {"tag": "policy"},
        {"origin__exact": "Manual", "reviewed__exact": "1", "answerable__exact": "1"},
    ],
)
def test_entry_changelist_filters_render(admin_client, full_world, query):
    response = admin_client.get(changelist_url(GoldenEntry), query)
    assert response.status_code == 200


def test_entry_change_page_shows_audit_trail(admin_client, full_world):
    """The change page lists the entry's events, newest first, with who did what."""
    entry = full_world["entry"]
    response = admin_client.get(change_url(entry))
    content = response.content.decode()
    assert "Audit trail" in content
    assert content.count("<td>test</td>") == 2  # the create and the update
    assert "reviewed: false → true" in content
    assert content.index("<td>update</td>") < content.index("<td>create</td>")


def test_job_and_audit_search_accept_any_text(admin_client, full_world):
    for model in (Job, AuditEvent):
        response = admin_client.get(changelist_url(model), {"q": "not a uuid"})
        assert response.status_code == 200


# ---------------------------------------------------------------- query counts


def _changelist_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(changelist_url(GoldenEntry))
    assert response.status_code == 200
    return len(queries)


def test_entry_changelist_queries_do_not_grow_with_entries(
    admin_client, world, django_assert_max_num_queries
):
    """A page of 30 entries costs the same queries as a page of 1: related rows come in the same query."""
    refund_entry(world.collection)
    with_one = _changelist_queries(admin_client)
    add_entries(
        world.collection,
        *(
            EntryInput(
                question=f"Question number {i}?", expected_document_ids=["shipping"], tags=[f"t{i % 3}"]
            )
            for i in range(29)
        ),
    )
    assert GoldenEntry.objects.count() == 30
    with django_assert_max_num_queries(15):
        response = admin_client.get(changelist_url(GoldenEntry))
    assert response.content.decode().count('name="_selected_action"') == 30
    assert _changelist_queries(admin_client) == with_one


@pytest.mark.parametrize("model", [Document, Collection, ApiKey, AuditEvent, Job, Membership, Tenant])
def test_other_changelists_do_not_grow_with_rows(admin_client, world, model):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(changelist_url(model)).status_code == 200
        return len(captured)

    refund_entry(world.collection)
    before = queries()
    # More of everything: tenants, collections, documents, keys, jobs, events, memberships.
    for n in range(5):
        tenant = tenant_get_or_create(cluster_slug=f"c{n}", tenant_slug=f"t{n}")
        collection = services.collection_create(tenant=tenant, slug=f"col{n}", actor="test")
        services.documents_upsert(
            collection=collection,
            documents=[services.DocumentInput(id=f"d{n}", pages=["one", "two"])],
            actor="test",
        )
        refund_entry(collection, expected_document_ids=[f"d{n}"])
        api_key_create(tenant=tenant, role="admin", actor="test")
        Job.objects.create(tenant=tenant, collection=collection, kind=GoldenJobKind.INGEST)
        member_of(tenant, f"user{n}")
    assert queries() == before


# ---------------------------------------------------------------- golden entry writes


def test_editing_an_entry_writes_one_update_event(admin_client, world):
    entry = refund_entry(world.collection)
    response = admin_client.post(
        change_url(entry),
        entry_form(
            entry,
            question="How many days is the refund window?",
            expected_document_ids="refunds\nwarranty",
            tags="policy",
            reviewed=True,
        ),
    )
    assert response.status_code == 302
    entry.refresh_from_db()
    assert entry.question == "How many days is the refund window?"
    assert entry.question_hash == hashlib.sha256(b"how many days is the refund window?").hexdigest()
    assert entry.expected_document_ids == ["refunds", "warranty"]
    assert entry.tags == ["policy"]
    assert entry.tags_index == "|policy|"
    assert entry.reviewed is True
    event = entry_events(entry, "update").get()
    assert event.actor == ACTOR
    assert event.tenant == world.tenant
    assert event.collection_slug == "handbook"
    assert event.changes == {
        "question": ["How long is the refund window?", "How many days is the refund window?"],
        "expected_document_ids": [["refunds"], ["refunds", "warranty"]],
        "tags": [["policy", "money"], ["policy"]],
        "reviewed": [False, True],
    }


def test_saving_an_unchanged_entry_writes_no_event(admin_client, world):
    entry = refund_entry(world.collection)
    response = admin_client.post(change_url(entry), entry_form(entry))
    assert response.status_code == 302
    assert not entry_events(entry, "update").exists()


def test_list_editable_reviewed_is_audited(admin_client, world):
    entry = refund_entry(world.collection)
    response = admin_client.post(
        changelist_url(GoldenEntry),
        {
            "form-TOTAL_FORMS": "1",
            "form-INITIAL_FORMS": "1",
            "form-MIN_NUM_FORMS": "0",
            "form-MAX_NUM_FORMS": "1000",
            "form-0-id": str(entry.pk),
            "form-0-reviewed": "on",
            "form-0-answerable": "on",
            "_save": "Save",
        },
    )
    assert response.status_code == 302
    entry.refresh_from_db()
    assert entry.reviewed is True
    event = entry_events(entry, "update").get()
    assert (event.actor, event.changes) == (ACTOR, {"reviewed": [False, True]})


def test_adding_an_entry_writes_a_create_event(admin_client, world):
    response = admin_client.post(
        reverse("admin:goldenset_goldenentry_add"),
        {
            "collection": str(world.collection.pk),
            "key": "ship-1",
            "question": "  How fast is express shipping?  ",
            "reference_answer": "Next day.",
            "expected_document_ids": "shipping\n\nshipping",
            "grades": '{"shipping": 2}',
            "tags": "shipping, speed,",
            "answerable": "on",
            "_save": "Save",
        },
    )
    assert response.status_code == 302
    entry = GoldenEntry.objects.get(key="ship-1")
    assert entry.collection == world.collection
    assert entry.question == "How fast is express shipping?"
    assert entry.expected_document_ids == ["shipping"]
    assert entry.grades == {"shipping": 2}
    assert entry.tags == ["shipping", "speed"]
    assert entry.tags_index == "|shipping|speed|"
    assert entry.origin == Origin.MANUAL
    event = entry_events(entry).get()
    assert (event.action, event.actor, event.tenant) == ("create", ACTOR, world.tenant)
    assert event.changes == services.entry_snapshot(entry)


def test_deleting_through_the_delete_view_writes_a_delete_event(admin_client, world):
    entry = refund_entry(world.collection)
    url = reverse("admin:goldenset_goldenentry_delete", args=[entry.pk])
    assert admin_client.get(url).status_code == 200  # the confirmation page
    response = admin_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert not GoldenEntry.objects.filter(pk=entry.pk).exists()
    event = entry_events(entry, "delete").get()
    assert event.actor == ACTOR
    assert event.changes["question"] == "How long is the refund window?"


def test_bulk_delete_asks_first_then_deletes_through_the_service(admin_client, world):
    kept = refund_entry(world.collection)
    doomed = add_entries(
        world.collection, EntryInput(question="First doomed?"), EntryInput(question="Second doomed?")
    )
    data = {"action": "delete_selected", "_selected_action": [str(e.pk) for e in doomed]}
    response = admin_client.post(changelist_url(GoldenEntry), data)
    assert response.status_code == 200
    assert "Are you sure you want to delete the selected golden entries?" in response.content.decode()
    assert GoldenEntry.objects.count() == 3

    response = admin_client.post(changelist_url(GoldenEntry), {**data, "post": "yes"})
    assert response.status_code == 302
    assert list(GoldenEntry.objects.all()) == [kept]
    events = AuditEvent.objects.filter(action="delete")
    assert sorted(e.object_id for e in events) == sorted(str(e.pk) for e in doomed)
    assert {e.actor for e in events} == {ACTOR}


@pytest.mark.parametrize(("action", "reviewed"), [("mark_reviewed", True), ("mark_unreviewed", False)])
def test_mark_actions_are_audited(admin_client, world, action, reviewed):
    entries = add_entries(world.collection, EntryInput(question="One?"), EntryInput(question="Two?"))
    services.golden_entries_mark_reviewed(entries=entries[:1], reviewed=True, actor="test")
    response = admin_client.post(
        changelist_url(GoldenEntry), {"action": action, "_selected_action": [str(e.pk) for e in entries]}
    )
    assert response.status_code == 302
    assert set(GoldenEntry.objects.values_list("reviewed", flat=True)) == {reviewed}
    events = AuditEvent.objects.filter(action="update", actor=ACTOR)
    # Only the entries whose flag actually changed get an event.
    changed = entries[1:] if reviewed else entries[:1]
    assert sorted(e.object_id for e in events) == sorted(str(e.pk) for e in changed)
    assert {tuple(e.changes["reviewed"]) for e in events} == {(not reviewed, reviewed)}


def test_export_action_downloads_a_golden_file(admin_client, world):
    refund_entry(world.collection)
    add_entries(world.collection, EntryInput(question="Who is the CEO of Mars?", answerable=False))
    selected = GoldenEntry.objects.all()
    response = admin_client.post(
        changelist_url(GoldenEntry),
        {"action": "export_golden", "_selected_action": [str(e.pk) for e in selected]},
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="handbook-golden.json"'
    assert parse_golden(response.content) == [
        GoldenRecord(
            id="q-refund",
            question="How long is the refund window?",
            expected_answer="30 days.",
            must_cite=("refunds",),
            tags=("policy", "money"),
        ),
        GoldenRecord(question="Who is the CEO of Mars?", answerable=False),
    ]


def test_export_action_refuses_entries_of_two_collections(admin_client, world):
    other = services.collection_create(tenant=world.tenant, slug="faq", actor="test")
    entries = [refund_entry(world.collection), refund_entry(other, expected_document_ids=[])]
    response = admin_client.post(
        changelist_url(GoldenEntry),
        {"action": "export_golden", "_selected_action": [str(e.pk) for e in entries]},
        follow=True,
    )
    assert response.status_code == 200
    assert "Select entries of one collection" in response.content.decode()
    assert "Content-Disposition" not in response


def test_duplicate_question_is_a_form_error(admin_client, world):
    entry = refund_entry(world.collection)
    other = add_entries(world.collection, EntryInput(question="Where do refunds go?"))[0]
    response = admin_client.post(
        change_url(other), entry_form(other, question="HOW long is the  refund window?")
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["question"] == [f"The question already exists in collection handbook (entry {entry.pk})."]
    other.refresh_from_db()
    assert other.question == "Where do refunds go?"
    assert not entry_events(other, "update").exists()


def test_duplicate_key_is_a_form_error(admin_client, world):
    refund_entry(world.collection)
    other = add_entries(world.collection, EntryInput(question="Where do refunds go?"))[0]
    response = admin_client.post(change_url(other), entry_form(other, key="q-refund"))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["key"] == ["Key 'q-refund' already exists in collection handbook."]
    other.refresh_from_db()
    assert other.key == ""


def test_adding_a_duplicate_question_is_a_form_error(admin_client, world):
    refund_entry(world.collection)
    response = admin_client.post(
        reverse("admin:goldenset_goldenentry_add"),
        {
            "collection": str(world.collection.pk),
            "question": "how long is the refund window?",
            "grades": "{}",
            "answerable": "on",
        },
    )
    assert response.status_code == 200
    assert "question" in response.context["adminform"].form.errors
    assert GoldenEntry.objects.count() == 1


def test_unknown_expected_document_is_a_form_error(admin_client, world):
    entry = refund_entry(world.collection)
    response = admin_client.post(
        change_url(entry), entry_form(entry, expected_document_ids="refunds\nnope\nmissing")
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["expected_document_ids"] == ["2 unknown in collection handbook: nope, missing"]
    entry.refresh_from_db()
    assert entry.expected_document_ids == ["refunds"]
    assert not entry_events(entry, "update").exists()


def test_documents_of_another_collection_are_unknown(admin_client, world):
    """The rival tenant's collection is also called handbook: its documents still do not count."""
    rival = Collection.objects.get(tenant=world.other_tenant)
    services.documents_upsert(
        collection=rival,
        documents=[services.DocumentInput(id="rival-only", pages=["Rival text."])],
        actor="test",
    )
    entry = refund_entry(world.collection)
    response = admin_client.post(
        change_url(entry), entry_form(entry, expected_document_ids="refunds\nrival-only")
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["expected_document_ids"] == ["1 unknown in collection handbook: rival-only"]
    entry.refresh_from_db()
    assert entry.expected_document_ids == ["refunds"]


def test_grades_must_name_expected_documents(admin_client, world):
    entry = refund_entry(world.collection)
    response = admin_client.post(change_url(entry), entry_form(entry, grades='{"warranty": 2}'))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["grades"] == [
        "Graded documents not in expected_document_ids: warranty "
        "(a document that is not expected takes only grade 0, judged not relevant)."
    ]
    entry.refresh_from_db()
    assert entry.grades == {}


def test_tags_may_not_contain_the_index_separator(admin_client, world):
    entry = refund_entry(world.collection)
    response = admin_client.post(change_url(entry), entry_form(entry, tags="a|b"))
    assert response.status_code == 200
    assert "tags" in response.context["adminform"].form.errors
    entry.refresh_from_db()
    assert entry.tags == ["policy", "money"]


def test_tag_filter_offers_present_tags_and_filters(admin_client, world):
    refund_entry(world.collection)
    add_entries(
        world.collection, EntryInput(question="Untagged?"), EntryInput(question="Tagged?", tags=["pol"])
    )
    response = admin_client.get(changelist_url(GoldenEntry))
    choices = [
        c["display"]
        for spec in response.context["cl"].filter_specs
        if spec.title == "tag"
        for c in spec.choices(response.context["cl"])
    ]
    assert choices == ["All", "money", "pol", "policy"]
    response = admin_client.get(changelist_url(GoldenEntry), {"tag": "pol"})
    assert [e.question for e in response.context["cl"].result_list] == ["Tagged?"]


# ---------------------------------------------------------------- documents


def content_version(collection: Collection) -> int:
    return Collection.objects.get(pk=collection.pk).content_version


def test_saving_a_document_and_its_pages_bumps_the_content_version(admin_client, world):
    document = Document.objects.get(collection=world.collection, external_id="refunds")
    texts = list(document.pages.order_by("number").values_list("text", flat=True))
    version = content_version(world.collection)
    data = document_form(document, title="Refunds, revised", page_suffix=" (edited)", new_page="New.")
    response = admin_client.post(change_url(document), data)
    assert response.status_code == 302
    document.refresh_from_db()
    assert document.title == "Refunds, revised"
    pages = document.pages.order_by("number").values_list("text", flat=True)
    assert list(pages) == [t + " (edited)" for t in texts] + ["New."]
    assert content_version(world.collection) == version + 1


def test_editing_only_pages_bumps_the_content_version(admin_client, world):
    document = Document.objects.get(collection=world.collection, external_id="warranty")
    version = content_version(world.collection)
    response = admin_client.post(
        change_url(document), document_form(document, page_suffix=" Void if opened.")
    )
    assert response.status_code == 302
    assert document.pages.get().text.endswith("Void if opened.")
    assert content_version(world.collection) == version + 1


def test_saving_an_unchanged_document_keeps_the_content_version(admin_client, world):
    """Nothing changed, so the cached search indexes stay valid."""
    document = Document.objects.get(collection=world.collection, external_id="warranty")
    version = content_version(world.collection)
    response = admin_client.post(change_url(document), document_form(document))
    assert response.status_code == 302
    assert content_version(world.collection) == version


def test_adding_a_document_bumps_the_content_version(admin_client, world):
    version = content_version(world.collection)
    response = admin_client.post(reverse("admin:goldenset_document_add"), new_document_form(world.collection))
    assert response.status_code == 302
    document = Document.objects.get(collection=world.collection, external_id="returns")
    assert list(document.pages.values_list("number", "text")) == [(1, "Return items unopened.")]
    assert content_version(world.collection) == version + 1


def test_duplicate_document_id_is_a_form_error(admin_client, world):
    document = Document.objects.get(collection=world.collection, external_id="refunds")
    response = admin_client.post(
        change_url(document),
        {
            "external_id": "shipping",
            "metadata": "{}",
            "pages-TOTAL_FORMS": "0",
            "pages-INITIAL_FORMS": "0",
            "_save": "Save",
        },
    )
    assert response.status_code == 200
    assert "external_id" in response.context["adminform"].form.errors
    document.refresh_from_db()
    assert document.external_id == "refunds"


def test_deleting_documents_bumps_the_content_version(admin_client, world):
    version = content_version(world.collection)
    doomed = Document.objects.filter(collection=world.collection, external_id__in=["refunds", "shipping"])
    response = admin_client.post(
        changelist_url(Document),
        {"action": "delete_selected", "_selected_action": [str(d.pk) for d in doomed], "post": "yes"},
    )
    assert response.status_code == 302
    assert sorted(world.collection.documents.values_list("external_id", flat=True)) == ["warranty"]
    assert not Page.objects.filter(document__external_id="shipping").exists()
    assert content_version(world.collection) == version + 1


def test_collection_counts(admin_client, world):
    refund_entry(world.collection)
    response = admin_client.get(changelist_url(Collection))
    rows = {
        (c.tenant.slug, c.slug): (c.document_count, c.golden_entry_count)
        for c in response.context["cl"].result_list
    }
    assert rows == {("search", "handbook"): (3, 1), ("rival", "handbook"): (1, 0)}


def test_deleting_a_collection_audits_its_entries(admin_client, world):
    entry = refund_entry(world.collection)
    url = reverse("admin:goldenset_collection_delete", args=[world.collection.pk])
    response = admin_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert not Collection.objects.filter(pk=world.collection.pk).exists()
    event = entry_events(entry, "delete").get()
    assert (event.actor, event.collection_slug) == (ACTOR, "handbook")


# ---------------------------------------------------------------- API keys


def test_adding_an_api_key_shows_the_secret_once_and_stores_its_hash(admin_client, world):
    response = admin_client.post(
        reverse("admin:tenancy_apikey_add"),
        {"tenant": str(world.tenant.pk), "role": "evaluator", "name": "ci", "_save": "Save"},
        follow=True,
    )
    assert response.status_code == 200
    key = ApiKey.objects.get(name="ci")
    shown = [str(m) for m in response.context["messages"] if "secret" in str(m)]
    assert len(shown) == 1
    secret = shown[0].split(" is ", 1)[1].split(" ", 1)[0]
    assert secret.startswith("esk_")
    assert secret.startswith(key.prefix)
    assert key.key_hash == hash_api_key(secret)
    assert key.tenant == world.tenant and key.role == "evaluator" and key.user is None
    assert key.revoked_at is None
    # The secret is not stored and not shown again.
    assert secret not in key.key_hash
    assert secret not in admin_client.get(changelist_url(ApiKey)).content.decode()
    assert secret not in admin_client.get(change_url(key)).content.decode()
    assert key.key_hash not in admin_client.get(change_url(key)).content.decode()


def test_revoke_action_revokes_selected_keys(admin_client, world):
    keys = list(ApiKey.objects.filter(tenant=world.tenant))
    kept = ApiKey.objects.get(tenant=world.other_tenant)
    response = admin_client.post(
        changelist_url(ApiKey),
        {"action": "revoke_selected", "_selected_action": [str(k.pk) for k in keys]},
    )
    assert response.status_code == 302
    revoked = ApiKey.objects.filter(tenant=world.tenant, revoked_at__isnull=False)
    assert keys and sorted(revoked.values_list("pk", flat=True)) == sorted(k.pk for k in keys)
    kept.refresh_from_db()
    assert kept.revoked_at is None


# ---------------------------------------------------------------- read-only records


@pytest.mark.parametrize("model", [AuditEvent, Job])
def test_system_records_are_read_only(admin_client, full_world, model):
    obj = model.objects.first()
    assert (
        admin_client.get(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add")).status_code
        == 403
    )
    assert admin_client.post(change_url(obj), {}).status_code == 403
    delete = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_delete", args=[obj.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert model.objects.filter(pk=obj.pk).exists()
    response = admin_client.get(changelist_url(model))
    assert "delete_selected" not in response.content.decode()


def test_audit_events_filter_and_search(admin_client, full_world):
    entry = full_world["entry"]
    refund_entry(full_world["entry"].collection, question="Other?", key="other")
    response = admin_client.get(changelist_url(AuditEvent), {"q": str(entry.pk)})
    assert {e.object_id for e in response.context["cl"].result_list} == {str(entry.pk)}
    response = admin_client.get(changelist_url(AuditEvent), {"action__exact": "update", "actor": "test"})
    assert [e.object_id for e in response.context["cl"].result_list] == [str(entry.pk)]


def test_the_admin_index_lists_the_curators_sections_first(admin_client):
    """Golden sets, evaluation, then the platform's records (tenancy, jobs, the audit trail), the task queue and
    the user accounts: the order evalsite.admin_site says, not the apps' alphabetical one."""
    html = admin_client.get(reverse("admin:index")).content.decode()
    sections = [
        "Golden sets",
        "Evaluation",
        "Tenancy and API keys",
        "Jobs and workers",
        "Audit trail",
        "Task queue",
    ]
    positions = [html.index(f">{name}<") for name in sections]
    assert positions == sorted(positions)
    assert "Golden sets, documents and API keys" in html
