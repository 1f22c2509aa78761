"""The base of commands that work on one collection: --cluster/--tenant/--collection, looked up in the tenant."""

from __future__ import annotations

from evalsite.management.base import EvalsiteCommand
from goldenset.models import Collection
from goldenset.selectors import collection_get


class CollectionCommand(EvalsiteCommand):
    def collection(self, options) -> Collection:
        """The collection named by --cluster/--tenant/--collection, or exit 2 saying which is missing."""
        return collection_get(tenant=self.tenant(options), collection_id=options["collection"])
