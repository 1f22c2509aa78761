"""Migration 0012: stored grades take their one form (an expected document's grade 1 left out); grade 0 and every
other grade are kept, and no entry's relevance changes."""

from __future__ import annotations

import pytest

from tests.support import migrate, migration_leaves

BEFORE = [("goldenset", "0011_rejected_questions")]
AFTER = [("goldenset", "0012_canonical_grades")]


@pytest.mark.django_db(transaction=True)
def test_explicit_default_grades_are_left_out_and_every_other_grade_is_kept():
    leaves = migration_leaves()
    try:
        apps = migrate(BEFORE)
        cluster = apps.get_model("tenancy", "Cluster").objects.create(slug="acme")
        tenant = apps.get_model("tenancy", "Tenant").objects.create(cluster=cluster, slug="search")
        collection = apps.get_model("goldenset", "Collection").objects.create(tenant=tenant, slug="handbook")
        entry = apps.get_model("goldenset", "GoldenEntry")
        rows = {
            "beir": (["d1", "d2"], {"d1": 1, "d2": 2, "d9": 0}),
            "trec": (["d1"], {"d9": 0}),
            "none": (["d1"], {}),
            "judged-only": ([], {"d1": 0}),
        }
        for key, (expected, grades) in rows.items():
            entry.objects.create(
                collection=collection, key=key, question=f"Q {key}?", question_hash=key,
                expected_document_ids=expected, grades=grades,
            )  # fmt: skip

        apps = migrate(AFTER)
        stored = {e.key: e.grades for e in apps.get_model("goldenset", "GoldenEntry").objects.order_by("key")}
        assert stored == {
            "beir": {"d2": 2, "d9": 0},
            "judged-only": {"d1": 0},
            "none": {},
            "trec": {"d9": 0},
        }
    finally:
        migrate(leaves)
