"""`manage.py build_index`: build (or find) a collection's search index for its current content, now.

    manage.py build_index --cluster C --tenant T --collection X [--parts bm25:lucene,vectors]

What an IndexBuild job does, in this process: for operators who want an index ready before traffic (after a
bulk import), and for benchmarks. The parts default to FullText's (bm25:lucene) plus those the collection's
newest saved index had; `vectors` adds what Vector and Hybrid searches read. Prints what was built and how long
it took; an index already saved for this content version is found, not rebuilt.
"""

from __future__ import annotations

import time

from django.core.management.base import CommandError

from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.retrieval import index_files, indexes
from goldenset.management.base import CollectionCommand

PARTS = index_files.PARTS


class Command(CollectionCommand):
    help = "Build a collection's search index for its current content (what an IndexBuild job does)."
    required_permissions = needs(Perm.CURATE)

    def add_arguments(self, parser) -> None:
        self.add_scope_arguments(parser)
        parser.add_argument(
            "--parts",
            default="",
            help=f"comma-separated, of {', '.join(PARTS)} (default: bm25:lucene and what the last index had)",
        )

    def handle(self, *args, **options) -> None:
        collection = self.collection(options)
        asked = [p.strip() for p in options["parts"].split(",") if p.strip()]
        unknown = [p for p in asked if p not in PARTS]
        if unknown:
            raise CommandError(f"--parts: unknown part {unknown[0]!r}; expected some of {', '.join(PARTS)}")
        parts = sorted({index_files.DEFAULT_PART, *asked, *index_files.saved_parts(collection)})
        stats = indexes.IndexStats()
        started = time.perf_counter()
        index = indexes.get_index(collection, stats, parts, build=True)
        seconds = time.perf_counter() - started
        self.stdout.write(
            f"{collection.slug}: content version {index.content_version}, {index.corpus.size} pages, "
            f"parts {', '.join(p for p in parts if index.has_part(p))}; "
            f"{'built' if stats.built or stats.parts_built else 'found saved'} in {seconds:.1f} s"
        )
