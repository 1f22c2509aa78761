"""`manage.py import_labels FILE`: human labels of answer judgements into a collection (evaluation.judgments.labels).

    manage.py import_labels labels.csv --cluster C --tenant T --collection X [--format csv|json] [--dry-run]

All or nothing: a bad row stops it (exit 2, every bad row named, up to 50) and nothing is written.
"""

from pathlib import Path

from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.judgments.label_import import labels_import
from evaluation.judgments.labels import read_labels
from goldenset.management.base import CollectionCommand
from goldenset.management.commands.import_golden import read_file


class Command(CollectionCommand):
    help = "Import human labels (a rater's new label of an item replaces their old one)."
    required_permissions = needs(Perm.CURATE)

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        self.add_scope_arguments(parser)
        parser.add_argument("--format", choices=["csv", "json"], help="Default: told by the first character.")
        parser.add_argument("--dry-run", action="store_true", help="Check and count; write nothing.")

    def handle(self, *args, **options):
        collection = self.collection(options)
        rows = read_labels(read_file(options["file"]), fmt=options.get("format"))
        result = labels_import(
            tenant=collection.tenant,
            collection=collection,
            rows=rows,
            actor="command:import_labels",
            dry_run=options.get("dry_run", False),
        )
        would = "would be " if result["dry_run"] else ""
        self.stdout.write(
            f"{options['file']}: {result['labels']} labels -> {result['created']} {would}created, "
            f"{result['updated']} {would}updated; raters: {', '.join(result['raters'])}"
        )
