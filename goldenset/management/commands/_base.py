"""Shared plumbing of evalsite's commands: one-line errors with exit code 2, never a traceback."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from evalsite.errors import EvalsiteError


class EvalsiteCommand(BaseCommand):
    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except EvalsiteError as exc:
            self.stderr.write(f"error [{exc.code}] {exc.message}")
            sys.exit(2)

    def tenant(self, options):
        """The tenant named by --cluster/--tenant, or exit 2 saying it is missing."""
        from goldenset import selectors

        return selectors.tenant_get(cluster_id=options["cluster"], tenant_id=options["tenant"])

    def collection(self, options):
        """The collection named by --cluster/--tenant/--collection, or exit 2 saying which is missing."""
        from goldenset import selectors

        return selectors.collection_get(tenant=self.tenant(options), collection_id=options["collection"])

    @staticmethod
    def add_scope_arguments(parser, *, collection: bool = True) -> None:
        parser.add_argument("--cluster", required=True, help="cluster_id")
        parser.add_argument("--tenant", required=True, help="tenant_id")
        if collection:
            parser.add_argument("--collection", required=True, help="collection_id")
