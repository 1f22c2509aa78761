"""`manage.py import_clicks`: relevance judgments from a search log by the COEC click model
(evaluation.judgments.clicks), stored as rater clicks:coec beside people's judgments.

    manage.py import_clicks --cluster C --tenant T --collection X --log clicks.csv [--format csv|jsonl]
    manage.py import_clicks --cluster C --tenant T --collection X --ubi-queries q.jsonl --ubi-events e.jsonl
                            [--max-rank 20]
    both: [--min-impressions 10]

A log's query is matched to the golden entry that has its question (case and spaces folded); the others are
counted. All or nothing: a bad row stops it (exit 2, every bad row named, up to 50) and nothing is written.
"""

from pathlib import Path

from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.judgments.click_import import clicks_import
from evaluation.judgments.clicks import MIN_IMPRESSIONS, read_log, read_ubi
from goldenset.management.base import CollectionCommand
from goldenset.management.commands.import_golden import read_file


class Command(CollectionCommand):
    help = "Judge documents from a search log by clicks over expected clicks (stored as rater clicks:coec)."
    required_permissions = needs(Perm.CURATE)

    def add_arguments(self, parser):
        self.add_scope_arguments(parser)
        parser.add_argument(
            "--log", type=Path, help="CSV or JSON Lines: query, document_id, position, clicked."
        )
        parser.add_argument("--format", choices=["csv", "jsonl"], help="Default: told by the file's name.")
        parser.add_argument("--ubi-queries", type=Path, help="OpenSearch UBI's ubi_queries, exported.")
        parser.add_argument("--ubi-events", type=Path, help="OpenSearch UBI's ubi_events, exported.")
        parser.add_argument("--max-rank", type=int, default=20, help="UBI: events at ranks above it skipped.")
        parser.add_argument(
            "--min-impressions", type=int, default=MIN_IMPRESSIONS,
            help=f"A pair shown fewer times gets no judgment (default {MIN_IMPRESSIONS}).",
        )  # fmt: skip

    def handle(self, *args, **options):
        collection = self.collection(options)
        if options["min_impressions"] < 1:
            raise EvalsiteError("validation-error", "--min-impressions: a whole number from 1.")
        skipped: dict[str, int] = {}
        if options.get("log"):
            path = options["log"]
            fmt = options.get("format") or ("csv" if path.suffix.lower() in (".csv", ".tsv") else "jsonl")
            observations = read_log(read_file(path), fmt)
            source = str(path)
        elif options.get("ubi_queries") and options.get("ubi_events"):
            observations, skipped = read_ubi(
                read_file(options["ubi_queries"]), read_file(options["ubi_events"]), options["max_rank"]
            )
            source = f"{options['ubi_queries']} + {options['ubi_events']}"
        else:
            raise EvalsiteError("validation-error", "Give --log, or both --ubi-queries and --ubi-events.")
        result = clicks_import(
            collection=collection, observations=observations, min_impressions=options["min_impressions"],
            actor="command:import_clicks", skipped=skipped,
        )  # fmt: skip
        grades = ", ".join(f"{g}: {n}" for g, n in result["grades"].items()) or "none"
        agreement = result["agreement_with_golden_set"]
        kappa = agreement["weighted_kappa"]
        self.stdout.write(
            f"{source}: {result['impressions']} impressions, {result['clicks']} clicks, "
            f"{result['pairs']} query-document pairs; "
            f"{result['judged']} judged by {result['rater']} (grades {grades}); "
            f"{result['too_few_impressions']} with fewer than {result['min_impressions']} impressions, "
            f"{result['unmatched_queries']} queries matching no golden question, "
            f"{result['unknown_documents']} unknown documents"
            + (
                f"; skipped: {', '.join(f'{k} {v}' for k, v in skipped.items() if v)}"
                if any(skipped.values())
                else ""
            )
            + f"\nagreement with the golden set's judgments: {agreement['items']} pairs both judged, weighted kappa "
            + ("—" if kappa is None else f"{kappa:.3f}")
        )
