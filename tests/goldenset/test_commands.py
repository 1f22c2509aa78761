"""The management commands: createapikey, import_golden, export_golden; output, exit codes and DB state."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from evalsite.audit.models import AuditEvent
from evalsite.tenancy.models import ApiKey, Cluster, Tenant, hash_api_key
from goldenset import services
from goldenset.golden_files import GoldenRecord, parse_golden
from goldenset.models import Collection, GoldenEntry, Origin
from tests.conftest import add_documents, api_client

SCOPE = {"cluster": "acme", "tenant": "search", "collection": "handbook"}

REFUND = {
    "id": "refund-window",
    "question": "How long do customers have to request a refund?",
    "expected_answer": "Customers get a full refund within 30 days.",
    "must_cite": ["refunds"],
    "tags": ["policy"],
}
EXPRESS = {
    "id": "express",
    "question": "How fast is express shipping?",
    "expected_answer": "Express shipping arrives the next day.",
    "must_cite": ["shipping", "refunds"],
}
MARS = {"question": "Who is the CEO of Mars?", "answerable": False}


def run(command: str, *args, **options) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(command, *args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def fails(command: str, *args, **options) -> str:
    """Run a command that must fail cleanly: exit code 2 and exactly one line on stderr, which is returned."""
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as info:
        call_command(command, *args, stdout=out, stderr=err, **options)
    assert info.value.code == 2
    assert out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert len(lines) == 1, err.getvalue()
    return lines[0]


def write(tmp_path, records, name="golden.json"):
    path = tmp_path / name
    path.write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")
    return path


def entries(collection) -> list[dict]:
    return list(
        collection.golden_entries.order_by("created_at", "id").values(
            "key",
            "question",
            "expected_document_ids",
            "reference_answer",
            "tags",
            "answerable",
            "origin",
            "grades",
        )
    )


# ---------------------------------------------------------------- createapikey


@pytest.mark.django_db
def test_createapikey_creates_the_cluster_and_tenant_and_prints_the_secret_last():
    out, err = run("createapikey", cluster="eu", tenant="team", role="viewer", name="ci")
    lines = out.splitlines()
    secret = lines[-1]
    assert err == ""
    assert secret.startswith("esk_") and secret == secret.strip() and " " not in secret
    key = ApiKey.objects.get()
    assert key.key_hash == hash_api_key(secret) and secret not in (key.key_hash, key.prefix)
    assert key.prefix == secret[: ApiKey.PREFIX_LENGTH] and key.name == "ci"
    assert key.tenant.slug == "team" and key.tenant.cluster.slug == "eu"
    assert key.role == "viewer" and key.user is None and key.expires_at is None
    assert lines[:-1] == [
        f"Created viewer API key {key.prefix}… for eu/team (store it now; it is not shown again):"
    ]
    # The printed secret works against the API, for that tenant.
    response = api_client(secret).get("/lmkit/v1/collections", {"cluster_id": "eu", "tenant_id": "team"})
    assert response.status_code == 200, response.json()


@pytest.mark.django_db
def test_createapikey_again_reuses_the_tenant_with_a_new_key():
    first = run("createapikey", cluster="eu", tenant="team", role="evaluator")[0].splitlines()[-1]
    second = run("createapikey", cluster="eu", tenant="team", role="rater", name="second")[0].splitlines()[-1]
    assert first != second
    assert Cluster.objects.count() == 1 and Tenant.objects.count() == 1
    tenant = Tenant.objects.get()
    assert sorted(tenant.api_keys.values_list("key_hash", flat=True)) == sorted(
        [hash_api_key(first), hash_api_key(second)]
    )


# ---------------------------------------------------------------- import_golden


def test_import_golden_loads_the_records(world, tmp_path):
    path = write(tmp_path, [REFUND, EXPRESS, MARS])
    out, err = run("import_golden", str(path), **SCOPE)
    assert out == f"{path} (okfsmith): 3 records -> 3 created, 0 updated, 0 unchanged\n" and err == ""
    assert entries(world.collection) == [
        {
            "key": "refund-window",
            "question": "How long do customers have to request a refund?",
            "expected_document_ids": ["refunds"],
            "reference_answer": "Customers get a full refund within 30 days.",
            "tags": ["policy"],
            "answerable": True,
            "origin": Origin.IMPORTED,
            "grades": {},
        },
        {
            "key": "express",
            "question": "How fast is express shipping?",
            "expected_document_ids": ["shipping", "refunds"],
            "reference_answer": "Express shipping arrives the next day.",
            "tags": [],
            "answerable": True,
            "origin": Origin.IMPORTED,
            "grades": {},
        },
        {
            "key": "",
            "question": "Who is the CEO of Mars?",
            "expected_document_ids": [],
            "reference_answer": "",
            "tags": [],
            "answerable": False,
            "origin": Origin.IMPORTED,
            "grades": {},
        },
    ]
    events = AuditEvent.objects.filter(object_type="golden-entry").order_by("id")
    assert [(e.action, e.actor, e.collection_slug, e.tenant_id) for e in events] == [
        ("create", "command:import_golden", "handbook", world.tenant.pk)
    ] * 3
    ids = {str(pk) for pk in world.collection.golden_entries.values_list("pk", flat=True)}
    assert {e.object_id for e in events} == ids
    # The rival tenant's collection of the same name is untouched.
    assert not GoldenEntry.objects.filter(collection__tenant=world.other_tenant).exists()


def test_import_golden_again_updates_records_by_id_without_duplicates(world, tmp_path):
    run("import_golden", str(write(tmp_path, [REFUND, EXPRESS, MARS])), **SCOPE)
    before = {e.key: e.pk for e in world.collection.golden_entries.all()}
    changed = {**EXPRESS, "expected_answer": "Next day, when ordered before noon.", "tags": ["shipping"]}
    new = {"id": "warranty", "question": "How long is the warranty?", "must_cite": ["warranty"]}
    path = write(tmp_path, [REFUND, changed, new], name="again.json")
    out, _ = run("import_golden", str(path), **SCOPE)
    assert out == f"{path} (okfsmith): 3 records -> 1 created, 1 updated, 1 unchanged\n"
    assert world.collection.golden_entries.count() == 4
    after = {e.key: e for e in world.collection.golden_entries.all()}
    assert after["express"].pk == before["express"] and after["refund-window"].pk == before["refund-window"]
    assert after["express"].reference_answer == "Next day, when ordered before noon."
    assert after["express"].tags == ["shipping"]
    assert after["warranty"].expected_document_ids == ["warranty"]
    update = AuditEvent.objects.get(action="update")
    assert update.object_id == str(before["express"]) and update.actor == "command:import_golden"
    assert update.changes == {
        "reference_answer": ["Express shipping arrives the next day.", "Next day, when ordered before noon."],
        "tags": [[], ["shipping"]],
    }
    assert AuditEvent.objects.filter(object_type="golden-entry", action="create").count() == 4


def test_import_golden_of_a_malformed_file_exits_2_with_the_line_and_column(world, tmp_path):
    path = tmp_path / "golden.json"
    path.write_text('[\n  {"question": "x",}\n]\n', encoding="utf-8")
    line = fails("import_golden", str(path), **SCOPE)
    assert line == (
        "error [golden-invalid] golden.json line 2, column 20: Expecting property name enclosed in double quotes"
    )
    assert (
        GoldenEntry.objects.count() == 0
        and AuditEvent.objects.filter(object_type="golden-entry").count() == 0
    )


def test_import_golden_with_a_schema_error_names_the_record(world, tmp_path):
    broken = {"id": "typo", "question": "Which card gets the refund?", "must_site": ["refunds"]}
    path = write(tmp_path, [REFUND, broken])
    line = fails("import_golden", str(path), **SCOPE)
    assert line.startswith(
        'error [golden-schema] record 1 (id "typo"), line 13: field "must_site" is not a golden'
    )
    assert (
        GoldenEntry.objects.count() == 0
        and AuditEvent.objects.filter(object_type="golden-entry").count() == 0
    )


def test_import_golden_with_unknown_must_cite_names_the_record_and_writes_nothing(world, tmp_path):
    ghost = {"id": "ghost", "question": "Where is the ghost policy?", "must_cite": ["refunds", "ghost-doc"]}
    path = write(tmp_path, [REFUND, ghost])
    line = fails("import_golden", str(path), **SCOPE)
    assert line == (
        'error [unknown-documents] record 1 (id "ghost"): expected_document_ids: 1 unknown in collection handbook: ghost-doc'
    )
    assert (
        GoldenEntry.objects.count() == 0
        and AuditEvent.objects.filter(object_type="golden-entry").count() == 0
    )


def test_import_golden_into_a_missing_collection_or_tenant_exits_2(world, tmp_path):
    path = write(tmp_path, [REFUND])
    assert fails("import_golden", str(path), **{**SCOPE, "collection": "nope"}) == (
        "error [not-found] Collection nope not found."
    )
    assert fails("import_golden", str(path), **{**SCOPE, "tenant": "nobody"}) == (
        "error [not-found] Tenant acme/nobody not found."
    )
    assert fails("import_golden", str(path), **{**SCOPE, "cluster": "elsewhere"}) == (
        "error [not-found] Tenant elsewhere/search not found."
    )
    # A rival's collection is not reachable through a tenant that lacks it, and nothing was created.
    assert GoldenEntry.objects.count() == 0
    assert Tenant.objects.count() == 2 and Cluster.objects.count() == 1


def test_import_golden_of_a_missing_file_exits_2(world, tmp_path):
    line = fails("import_golden", str(tmp_path / "absent.json"), **SCOPE)
    assert (
        line == f"error [file-unreadable] cannot read {tmp_path / 'absent.json'}: No such file or directory"
    )
    assert GoldenEntry.objects.count() == 0


# ---------------------------------------------------------------- export_golden


def test_export_golden_round_trips_through_import_into_another_collection(world, tmp_path):
    records = [
        {**REFUND, "question": "Combien de jours pour un remboursement ? (Straße, café)"},
        EXPRESS,
        MARS,
        {
            "id": "42",
            "question": "What does the warranty cover?",
            "must_cite": ["warranty"],
            "tags": ["a", "b"],
        },
    ]
    run("import_golden", str(write(tmp_path, records)), **SCOPE)
    exported = tmp_path / "exported.json"
    out, err = run("export_golden", **SCOPE, output=exported)
    assert out == "" and err == f"wrote {exported}\n"
    text = exported.read_text(encoding="utf-8")
    assert parse_golden(text) == [
        GoldenRecord(
            id="refund-window",
            question="Combien de jours pour un remboursement ? (Straße, café)",
            expected_answer="Customers get a full refund within 30 days.",
            must_cite=("refunds",),
            tags=("policy",),
        ),
        GoldenRecord(
            id="express",
            question="How fast is express shipping?",
            expected_answer="Express shipping arrives the next day.",
            must_cite=("shipping", "refunds"),
        ),
        GoldenRecord(question="Who is the CEO of Mars?", answerable=False),
        GoldenRecord(
            id="42", question="What does the warranty cover?", must_cite=("warranty",), tags=("a", "b")
        ),
    ]
    assert run("export_golden", **SCOPE)[0] == text  # stdout gives the same file

    copy = services.collection_create(tenant=world.tenant, slug="copy", actor="test")
    add_documents(copy, {"refunds": "r", "shipping": "s", "warranty": "w"})
    out, _ = run("import_golden", str(exported), **{**SCOPE, "collection": "copy"})
    assert out == f"{exported} (okfsmith): 4 records -> 4 created, 0 updated, 0 unchanged\n"
    assert entries(copy) == entries(world.collection)
    assert run("export_golden", **{**SCOPE, "collection": "copy"})[0] == text


def test_export_golden_init_sample_writes_a_loadable_starter_set(world, tmp_path):
    add_documents(
        world.collection,
        {
            "privacy": "We store account data in Frankfurt. Account data is deleted ninety days after closing.",
            "returns": "Returned items must be unused and in their original packaging with the receipt.",
        },
    )
    path = tmp_path / "starter.json"
    out, err = run("export_golden", **SCOPE, init_sample=True, count=3, output=path)
    assert out == "" and err == f"wrote {path}\n"
    records = parse_golden(path.read_bytes())
    assert len(records) == 3
    known = set(world.collection.documents.values_list("external_id", flat=True))
    assert all(len(r.must_cite) == 1 and r.must_cite[0] in known for r in records)
    # The first pages in document-id order: privacy, refunds, returns.
    assert [r.must_cite[0] for r in records] == ["privacy", "refunds", "returns"]
    assert records[1].expected_answer == "Customers get a full refund within 30 days of purchase."
    assert GoldenEntry.objects.count() == 0  # a sample is written to the file, not the database
    # ... and it loads into the collection it came from.
    out, _ = run("import_golden", str(path), **SCOPE)
    assert out == f"{path} (okfsmith): 3 records -> 3 created, 0 updated, 0 unchanged\n"


def test_export_golden_of_a_missing_collection_exits_2(world):
    assert (
        fails("export_golden", **{**SCOPE, "collection": "nope"})
        == "error [not-found] Collection nope not found."
    )
    assert not Collection.objects.filter(slug="nope").exists()
