"""The upgrade to signed, JSON indexes (evaluation 0017): every index published before it (a pickle, unsigned)
is removed from the database, so that no machine is left holding or fetching one; the builds publish them again."""

from __future__ import annotations

import pytest

from tests.support import migrate, migration_leaves

BEFORE = [("evaluation", "0016_studies")]
AFTER = [("evaluation", "0017_signed_index_manifests")]


@pytest.mark.django_db(transaction=True)
def test_the_upgrade_removes_every_pickled_publication():
    leaves = migration_leaves()
    try:
        apps = migrate(BEFORE)
        cluster = apps.get_model("tenancy", "Cluster").objects.create(slug="acme")
        tenant = apps.get_model("tenancy", "Tenant").objects.create(cluster=cluster, slug="search")
        collection = apps.get_model("goldenset", "Collection").objects.create(tenant=tenant, slug="handbook")
        key = f"{collection.uid}-v3-e4-abcdef123456"
        apps.get_model("evaluation", "IndexFile").objects.create(
            collection=collection, key=key, name="index.pickle", digest="d" * 64, chunk=0, data=b"\x80\x04N."
        )
        apps.get_model("evaluation", "IndexManifest").objects.create(
            collection=collection,
            key=key,
            family=f"{collection.uid}-e4-abcdef123456",
            content_version=3,
            parts=["bm25:lucene"],
            files=[["index.pickle", "d" * 64, 5]],
        )

        apps = migrate(AFTER)
        assert not apps.get_model("evaluation", "IndexFile").objects.exists()
        assert not apps.get_model("evaluation", "IndexManifest").objects.exists()
        assert apps.get_model("goldenset", "Collection").objects.filter(pk=collection.pk).exists()
    finally:
        migrate(leaves)
