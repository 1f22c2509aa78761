from pathlib import Path

from goldenset import importers
from goldenset.errors import EvalsiteError
from goldenset.management.commands._base import EvalsiteCommand


class Command(EvalsiteCommand):
    help = "Import an okfsmith golden.json into a collection (a record whose id exists replaces that entry)."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        self.add_scope_arguments(parser)

    def handle(self, *args, **options):
        collection = self.collection(options)
        try:
            data = options["file"].read_bytes()
        except OSError as exc:
            raise EvalsiteError(
                "file-unreadable",
                f"cannot read {options['file']}: {exc.strerror}",
                details={"file": str(options["file"])},
            ) from None
        result = importers.golden_file_import(collection=collection, data=data, actor="command:import_golden")
        self.stdout.write(
            f"{options['file']}: {result['records']} records -> {result['created']} created, "
            f"{result['updated']} updated, {result['unchanged']} unchanged"
        )
