"""`manage.py import_golden FILE`: load a golden set into a collection, in any format goldenset.formats reads.

    manage.py import_golden golden.json --cluster C --tenant T --collection X
    manage.py import_golden tests.csv --format csv ... [--dry-run]
    manage.py import_golden topics.txt --format trec --qrels qrels.txt ...
    manage.py import_golden ragas.jsonl --format ragas --create-documents ...

The format defaults to the one detected from the file's name and content. All or nothing: a bad line or record
stops it (exit 2, the line or record named) and nothing is written.
"""

from pathlib import Path

from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from goldenset import importers
from goldenset.formats import FORMATS, detect_format
from goldenset.management.base import CollectionCommand


def read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise EvalsiteError(
            "file-unreadable", f"cannot read {path}: {exc.strerror}", details={"file": str(path)}
        ) from None


class Command(CollectionCommand):
    help = "Import a golden set into a collection (an entry whose key exists replaces that entry)."
    required_permissions = needs(Perm.CURATE)

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        self.add_scope_arguments(parser)
        parser.add_argument(
            "--format", choices=FORMATS, help="Default: detected from the file's name and content."
        )
        parser.add_argument("--qrels", type=Path, help="--format trec: the qrels file beside the topics.")
        parser.add_argument(
            "--create-documents", action="store_true", help="Create reference passages matching no page."
        )
        parser.add_argument("--dry-run", action="store_true", help="Count what would change; write nothing.")

    def handle(self, *args, **options):
        collection = self.collection(options)
        data = read_file(options["file"])
        fmt = options.get("format") or detect_format(options["file"].name, data)
        result = importers.golden_import(
            collection=collection,
            fmt=fmt,
            data=data,
            qrels=read_file(options["qrels"]) if options.get("qrels") else None,
            create_documents=options.get("create_documents", False),
            dry_run=options.get("dry_run", False),
            actor="command:import_golden",
        )
        would = "would be " if result.get("dry_run") else ""
        line = (
            f"{options['file']} ({fmt}): {result['records']} records -> {result['created']} {would}created, "
            f"{result['updated']} {would}updated, {result['unchanged']} unchanged"
        )
        if result["documents_created"]:
            line += f"; {result['documents_created']} documents {would}created"
        self.stdout.write(line)
        for warning in result["warnings"]:
            self.stdout.write(f"warning: {warning}")
        for row in result.get("rows", []):  # a dry run's first entries, as they will be stored
            documents = ", ".join(row["expected_document_ids"]) or "no expected documents"
            self.stdout.write(
                f"  {row['where']}: {row['action']} {row['key'] or '(no key)'}: {row['question']!r} -> {documents}"
            )
