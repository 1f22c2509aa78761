from pathlib import Path

from django.db import transaction

from goldenset import importers, services
from goldenset.management.commands._base import EvalsiteCommand


class Command(EvalsiteCommand):
    help = "Load a BEIR folder (corpus.jsonl, queries.jsonl, qrels.tsv) as documents plus golden entries."

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path)
        self.add_scope_arguments(parser)
        parser.add_argument("--name", default="", help="Collection name (default: the folder name).")

    def handle(self, *args, **options):
        # One transaction with the tenant: a folder that fails to load leaves no stray cluster or tenant behind.
        with transaction.atomic():
            tenant = services.tenant_get_or_create(
                cluster_slug=options["cluster"], tenant_slug=options["tenant"]
            )
            result = importers.beir_import(
                folder=options["folder"],
                tenant=tenant,
                collection_id=options["collection"],
                actor="command:import_beir",
                name=options["name"],
            )
        self.stdout.write(
            f"{options['collection']}: {result['documents']} documents ({result['documents_created']} created, "
            f"{result['documents_updated']} updated, {result['pages_written']} pages written), "
            f"{result['queries']} queries -> {result['entries_created']} golden entries created, "
            f"{result['entries_updated']} updated"
        )
