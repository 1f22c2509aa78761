"""`manage.py export_golden`: write a collection's golden set in any format goldenset.formats writes.

    manage.py export_golden --cluster C --tenant T --collection X [--format csv] [-o golden.csv]
    manage.py export_golden ... --format trec -o out/     # writes out/<collection>-golden.topics.tsv and .qrels
    manage.py export_golden ... --init-sample [--count 10]  # a starter golden.json from the collection's pages

What the format cannot carry is named on stderr as `warning: ...`, never dropped silently.
"""

from pathlib import Path

from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from goldenset import exporters
from goldenset.formats import FORMATS
from goldenset.management.base import CollectionCommand


class Command(CollectionCommand):
    help = (
        "Write a collection's golden set (okfsmith golden.json by default; --format for others) to stdout or "
        "--output. With --init-sample, write a starter set from the collection's own pages instead."
    )
    required_permissions = needs(Perm.VIEW)

    def add_arguments(self, parser):
        self.add_scope_arguments(parser)
        parser.add_argument(
            "--output", "-o", type=Path, help="File to write (a folder for --format trec; default: stdout)."
        )
        parser.add_argument("--format", choices=FORMATS, default="okfsmith", help="Default okfsmith.")
        parser.add_argument("--init-sample", action="store_true", help="Write a starter set from the pages.")
        parser.add_argument(
            "--count", type=int, default=10, help="Questions in the starter set (default 10)."
        )

    def handle(self, *args, **options):
        collection = self.collection(options)
        output: Path | None = options["output"]
        if options["init_sample"]:
            files, warnings = (
                {"golden.json": exporters.golden_sample(collection=collection, count=options["count"])},
                [],
            )
        else:
            written = exporters.golden_export(collection=collection, fmt=options.get("format") or "okfsmith")
            files, warnings = written.files, written.warnings
        for warning in warnings:
            self.stderr.write(f"warning: {warning}")
        if len(files) > 1:  # TREC: topics and qrels, into a folder
            folder = output or Path(".")
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                (folder / name).write_text(text, encoding="utf-8")
                self.stderr.write(f"wrote {folder / name}")
            return
        (text,) = files.values()
        if output:
            output.write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {output}")
        else:
            self.stdout.write(text, ending="")
