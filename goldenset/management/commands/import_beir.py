import time
from pathlib import Path

from django.db import transaction

from evalsite.management.base import EvalsiteCommand
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evalsite.tenancy.services import tenant_get_or_create
from goldenset.beir_import import beir_import


class Command(EvalsiteCommand):
    help = (
        "Load a BEIR folder (corpus.jsonl, queries.jsonl, qrels.tsv) as documents plus golden entries, in one "
        "transaction; corpus.jsonl is streamed in batches (bounded memory). --verbosity 2 prints progress."
    )
    required_permissions = needs(Perm.CURATE)

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path)
        self.add_scope_arguments(parser)
        parser.add_argument("--name", default="", help="Collection name (default: the folder name).")

    def handle(self, *args, **options):
        started = time.monotonic()

        def progress(documents: int, read: int, size: int) -> None:
            share = read / size if size else 1.0
            self.stdout.write(
                f"  {documents} documents written ({share:.0%} of corpus.jsonl), "
                f"{time.monotonic() - started:.0f} s"
            )

        # One transaction with the tenant: a folder that fails to load leaves no stray cluster or tenant behind.
        with transaction.atomic():
            tenant = tenant_get_or_create(cluster_slug=options["cluster"], tenant_slug=options["tenant"])
            result = beir_import(
                folder=options["folder"],
                tenant=tenant,
                collection_id=options["collection"],
                actor="command:import_beir",
                name=options["name"],
                progress=progress if options["verbosity"] >= 2 else None,
            )
        self.stdout.write(
            f"{options['collection']}: {result['documents']} documents ({result['documents_created']} created, "
            f"{result['documents_updated']} updated, {result['pages_written']} pages written), "
            f"{result['queries']} queries -> {result['entries_created']} golden entries created, "
            f"{result['entries_updated']} updated"
        )
