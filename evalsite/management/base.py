"""What every evalsite command stands on: one-line errors with exit code 2 (every problem of a file listed
below it), never a traceback, and the tenant
named by --cluster/--tenant (goldenset.management.base adds the collection)."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from evalsite.errors import EvalsiteError
from evalsite.tenancy.selectors import tenant_get


class EvalsiteCommand(BaseCommand):
    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except EvalsiteError as exc:
            self.stderr.write(f"error [{exc.code}] {exc.message}")
            listed = exc.details.get("errors") or []
            for item in listed if len(listed) > 3 else ():  # the message shows three: then each one
                self.stderr.write(f"  [{item.get('code', exc.code)}] {item['message']}")
            sys.exit(2)

    def tenant(self, options):
        """The tenant named by --cluster/--tenant, or exit 2 saying it is missing."""
        return tenant_get(cluster_id=options["cluster"], tenant_id=options["tenant"])

    @staticmethod
    def add_scope_arguments(parser, *, collection: bool = True) -> None:
        parser.add_argument("--cluster", required=True, help="cluster_id")
        parser.add_argument("--tenant", required=True, help="tenant_id")
        if collection:
            parser.add_argument("--collection", required=True, help="collection_id")
