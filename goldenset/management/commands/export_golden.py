from pathlib import Path

from goldenset import importers
from goldenset.management.commands._base import EvalsiteCommand


class Command(EvalsiteCommand):
    help = (
        "Write a collection's golden set as an okfsmith golden.json (to stdout, or --output). "
        "With --init-sample, write a starter set from the collection's own pages instead."
    )

    def add_arguments(self, parser):
        self.add_scope_arguments(parser)
        parser.add_argument("--output", "-o", type=Path, help="File to write (default: stdout).")
        parser.add_argument("--init-sample", action="store_true", help="Write a starter set from the pages.")
        parser.add_argument(
            "--count", type=int, default=10, help="Questions in the starter set (default 10)."
        )

    def handle(self, *args, **options):
        collection = self.collection(options)
        if options["init_sample"]:
            text = importers.golden_sample(collection=collection, count=options["count"])
        else:
            text = importers.golden_file_export(collection=collection)
        if options["output"]:
            options["output"].write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {options['output']}")
        else:
            self.stdout.write(text, ending="")
