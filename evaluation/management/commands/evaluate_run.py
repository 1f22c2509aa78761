"""`manage.py evaluate_run FILE`: score a TREC or JSONL run file on a collection's golden set, one run per tag.

    manage.py evaluate_run run.trec --cluster C --tenant T --collection X [--ks 1,5,10]
        [--metric ndcg@10] [--fail-under 0.5] [--format text|json]

What POST /lmkit/v1/search/evaluate/run-file does, from the command line: each tag is stored as a run of one
new batch, scored as a configuration is (trec_eval's order and measures), comparable with live runs. Exit codes
as `manage.py evaluate`: 0 every run clears the bar (or no bar), 1 one is below it, 2 a usage or data error (a
malformed line: `error [run-file-invalid] line N: ...`, nothing stored).
"""

from __future__ import annotations

from pathlib import Path

from evalsite.audit.services import actor_command
from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.management.commands.evaluate import (
    OUTPUTS,
    parse_fail_under,
    parse_metric,
)
from evaluation.management.commands.evaluate import Command as EvaluateCommand
from evaluation.request_fields import DEFAULT_KS_TEXT, parse_ks
from evaluation.retrieval.evaluate import evaluate_run_file
from evaluation.retrieval.run_files import parse_run_file


class Command(EvaluateCommand):
    help = (
        "Score a TREC or JSONL run file on a collection's golden set (one run per tag) and gate on a metric."
    )
    required_permissions = needs(Perm.EVALUATE)

    def add_arguments(self, parser):
        parser.add_argument("file", help="The run file: TREC (qid Q0 docid rank score tag) or JSONL.")
        self.add_scope_arguments(parser)
        parser.add_argument(
            "--ks", default=DEFAULT_KS_TEXT, help=f"Cutoffs, comma-separated (default {DEFAULT_KS_TEXT})."
        )
        parser.add_argument("--metric", default="ndcg@10", help="The gated metric (default ndcg@10).")
        parser.add_argument(
            "--fail-under", help="The bar from 0 to 1: exit 1 when a run's metric is below it."
        )
        parser.add_argument(
            "--format", choices=OUTPUTS, default="text", help="Output: text (default), json, junit, markdown."
        )

    def handle(self, *args, **options):
        collection = self.collection(options)
        path = Path(options["file"])
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise EvalsiteError(
                "file-unreadable", f"{path}: {exc.strerror}.", details={"path": str(path)}
            ) from None
        ks = parse_ks(options["ks"])
        metric = parse_metric(options["metric"], ks)
        bar = parse_fail_under(options["fail_under"])
        parsed = parse_run_file(data)
        batch_id, runs = evaluate_run_file(
            tenant=collection.tenant,
            collection=collection,
            ks=ks,
            run_file=parsed,
            filename=path.name,
            actor=actor_command("evaluate_run"),
        )
        self.gate(batch_id, runs, metric, bar, options["format"])
