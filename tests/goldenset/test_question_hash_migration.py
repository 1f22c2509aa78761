"""Migration 0004: existing golden entries get the hash of their folded question, and it reverses."""

from __future__ import annotations

import hashlib

import pytest

from tests.support import migrate, migration_leaves

BEFORE = [("goldenset", "0003_llm_call")]
AFTER = [("goldenset", "0004_golden_question_hash")]
QUESTIONS = ["How long is the refund window?", "  Où est la  GARANTIE ?", "Who founded the company?"]


@pytest.mark.django_db(transaction=True)
def test_existing_entries_get_their_question_hash_and_the_migration_reverses():
    leaves = migration_leaves()
    try:
        apps = migrate(BEFORE)
        cluster = apps.get_model("goldenset", "Cluster").objects.create(slug="acme")
        tenant = apps.get_model("goldenset", "Tenant").objects.create(cluster=cluster, slug="search")
        collection = apps.get_model("goldenset", "Collection").objects.create(tenant=tenant, slug="handbook")
        old_entry = apps.get_model("goldenset", "GoldenEntry")
        for question in QUESTIONS:
            norm = " ".join(question.casefold().split())
            old_entry.objects.create(collection=collection, question=question, question_norm=norm)

        apps = migrate(AFTER)
        entries = apps.get_model("goldenset", "GoldenEntry").objects.order_by("created_at")
        expected = [
            hashlib.sha256(n.encode()).hexdigest()
            for n in ["how long is the refund window?", "où est la garantie ?", "who founded the company?"]
        ]
        assert [e.question_hash for e in entries] == expected
        assert not hasattr(entries[0], "question_norm")

        apps = migrate(BEFORE)
        entries = apps.get_model("goldenset", "GoldenEntry").objects.order_by("created_at")
        assert [e.question_norm for e in entries] == [
            "how long is the refund window?",
            "où est la garantie ?",
            "who founded the company?",
        ]
    finally:
        migrate(leaves)
