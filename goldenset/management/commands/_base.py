"""Shared plumbing of evalsite's commands: one-line errors with exit code 2, never a traceback."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from goldenset.errors import EvalsiteError, NotFound


class EvalsiteCommand(BaseCommand):
    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except EvalsiteError as exc:
            self.stderr.write(f"error [{exc.code}] {exc.message}")
            sys.exit(2)

    def collection(self, options):
        """The collection named by --cluster/--tenant/--collection, or exit 2 saying which is missing."""
        from goldenset import selectors
        from goldenset.models import Tenant

        tenant = Tenant.objects.filter(cluster__slug=options["cluster"], slug=options["tenant"]).first()
        if tenant is None:
            raise NotFound("Tenant", f"{options['cluster']}/{options['tenant']}")
        return selectors.collection_get(tenant=tenant, collection_id=options["collection"])

    @staticmethod
    def add_scope_arguments(parser, *, collection: bool = True) -> None:
        parser.add_argument("--cluster", required=True, help="cluster_id")
        parser.add_argument("--tenant", required=True, help="tenant_id")
        if collection:
            parser.add_argument("--collection", required=True, help="collection_id")
