"""`manage.py pool`: a pool of the documents stored retrieval runs found that nobody judged yet
(evaluation.judgments.pools), to judge in the dashboard or over REST.

    manage.py pool --cluster C --tenant T --collection X (--runs ID [ID ...] | --batch ID) [--depth 10]
                   [--raters-per-item 1] [--tags T ...] [--origin O ...] [--reviewed-only]

Prints the pool's id, its size and where to judge it. A run of another collection or kind, or nothing left to
judge, exits 2 saying why; nothing is written.
"""

import uuid

from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.configs import parse_subset
from evaluation.judgments import pools
from evaluation.models import EvaluationRun
from goldenset.management.base import CollectionCommand


class Command(CollectionCommand):
    required_permissions = needs(Perm.CURATE)

    @staticmethod
    def batch_runs(collection, batch: str) -> list[str]:
        """The ids of the tenant's runs of one batch, oldest first; an unknown batch is not-found."""
        try:
            batch_id = uuid.UUID(batch)
        except ValueError:
            raise EvalsiteError("not-found", f"Batch {batch} not found.", status=404) from None
        runs = EvaluationRun.objects.filter(tenant=collection.tenant, batch_id=batch_id).order_by(
            "created_at"
        )
        found = [str(pk) for pk in runs.values_list("pk", flat=True)]
        if not found:
            raise EvalsiteError("not-found", f"Batch {batch} not found.", status=404)
        return found

    help = "Pool what stored retrieval runs rank within a depth that nobody judged, for raters to grade."

    def add_arguments(self, parser):
        self.add_scope_arguments(parser)
        runs = parser.add_mutually_exclusive_group(required=True)
        runs.add_argument(
            "--runs", nargs="+", metavar="RUN_ID", help="Stored retrieval runs of the collection."
        )
        runs.add_argument("--batch", metavar="BATCH_ID", help="Every run of one batch (one evaluate call).")
        parser.add_argument(
            "--depth", type=int, default=10, help="Each run's top documents pooled (default 10)."
        )
        parser.add_argument("--raters-per-item", type=int, default=1, help="Raters each document goes to.")
        parser.add_argument(
            "--order", choices=["adaptive", "fixed"], default="adaptive",
            help="adaptive (default): MaxMean, following the runs whose documents turn out relevant; fixed: priority.",
        )  # fmt: skip
        parser.add_argument("--tags", nargs="+", help="Subset: questions with any of these tags.")
        parser.add_argument("--origin", nargs="+", help="Subset: Manual, Imported and/or Generated.")
        parser.add_argument("--reviewed-only", action="store_true", help="Subset: reviewed questions only.")

    def handle(self, *args, **options):
        collection = self.collection(options)
        for name, most in (("depth", pools.MAX_DEPTH), ("raters_per_item", pools.MAX_RATERS_PER_ITEM)):
            if not 1 <= options[name] <= most:
                raise EvalsiteError(
                    "validation-error", f"--{name.replace('_', '-')}: a whole number from 1 to {most}."
                )
        run_ids = options["runs"] or self.batch_runs(collection, options["batch"])
        subset = parse_subset(
            {
                "tags": options["tags"],
                "origin": options["origin"],
                "reviewed_only": options["reviewed_only"] or None,
            }
        )
        pool = pools.pool_create(
            tenant=collection.tenant, collection=collection, run_ids=run_ids, depth=options["depth"],
            raters_per_item=options["raters_per_item"], subset=subset, actor="command:pool",
            adaptive=options["order"] == "adaptive",
        )  # fmt: skip
        progress = pools.pool_progress(pool)
        self.stdout.write(
            f"pool {pool.pk}: {progress.items} documents to judge ({pool.judged_already} judged already) from "
            f"{len(run_ids)} runs of {collection.slug} at depth {pool.depth}, {pool.raters_per_item} rater(s) each\n"
            f"judge it at /pools/{pool.pk}/judge/ or GET /lmkit/v1/search/judgments/pools/{pool.pk}/next?rater=NAME"
        )
