"""`manage.py evaluate`: the CI gate. Scores retrieval configurations on the golden set, exits 1 below a bar.

    manage.py evaluate --cluster C --tenant T --collection X [--collection Y]
        [--config FullText] [--config 'Hybrid:fusion=Weighted,rerank=true,label=hybrid-w']
        [--config '{"search_type": "Hybrid", "rerank": true}']
        [--target prod-es] [--ks 1,5,10] [--metric ndcg@10] [--fail-under 0.7] [--format text|json]
        [--tag T ...] [--origin Manual ...] [--reviewed-only] [--skip-unreviewed-generated]

    manage.py evaluate --answers --cluster C --tenant T --collection X
        [--config 'Hybrid:groundedness=Medium,top_k=5'] [--judge-model M] [--no-llm]
        [--judge-samples 3 [--judge-temperature 0.7]]
        [--unanswerable questions.txt] [--max-questions N] [--metric-threshold 0.5]
        [--fail-under 70] [--format text|json]

The HTTP twins are POST /lmkit/v1/search/evaluate and /search/evaluate/answers: they read configurations with
evaluation.configs and run the same services, so they accept and reject the same requests and persist the same
runs (listed by GET /lmkit/v1/search/evaluate/runs). --tag, --origin, --reviewed-only and
--skip-unreviewed-generated restrict the golden entries asked (the body's tags, origin, ...); text and markdown
show every metric per tag, origin (and answerable) slice. --format json writes the runs through the serializers the
API answers them with (RetrievalGateOut, AnswerGateOut), so both are one shape. With --answers the bar is the overall score (0-100, the
mean of per-question means) and --no-llm forces the extractive answer and the heuristic judge.

Exit codes: 0 every configuration clears the bar (or no bar was given), 1 some configuration is below it,
2 a usage or data error, reported as one line `error [code] message` on stderr. Whatever the format, the
verdict is one line on stderr (`gate failed: ndcg@10 >= 0.7: hybrid 0.6512 < 0.7`, `gate passed: ...`), and
--format junit has a case per configuration's gate, the only cases that fail (evaluation.reports.gate decides
the verdict; evaluation.reports.report_formats the JUnit rule).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence

from django.core.management.base import CommandError, CommandParser

from evalsite.audit.services import actor_command
from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation import configs as config_parser
from evaluation.answers.configs import parse_answer_configs, parse_thresholds
from evaluation.answers.evaluate import evaluate_answers
from evaluation.answers.judge_votes import parse_judge_sampling
from evaluation.models import EvaluationRun
from evaluation.presets import with_presets
from evaluation.reports.gate import Gate
from evaluation.reports.presenter import AnswerGateOut, RetrievalGateOut, run_summary
from evaluation.reports.report_formats import slice_table, text_table
from evaluation.reports.run_reports import (
    answer_cells,
    answer_gate,
    answer_markdown,
    retrieval_gate,
    retrieval_markdown,
    runs_junit,
)
from evaluation.request_fields import DEFAULT_KS_TEXT, parse_ks, parse_positive_int
from evaluation.retrieval import metrics
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from evaluation.runs import selectors
from evaluation.runs.slices import Subset
from goldenset.management.base import CollectionCommand
from goldenset.vocabulary.metric_names import JUDGED_METRICS

USAGE_CODE = "usage"


class _OneLineParser(CommandParser):
    """argparse errors as one line and exit code 2 (Django exits 1 on a CommandError by default)."""

    def error(self, message):
        if self.called_from_command_line:
            sys.stderr.write(f"error [{USAGE_CODE}] {message} (see {self.prog} --help)\n")
            sys.exit(2)
        raise CommandError(f"Error: {message}", returncode=2)


OUTPUTS = ("text", "json", "junit", "markdown")


def config_from_cli(text: str, position: int) -> object:
    """One --config value as the API's configuration object (not yet validated: parse_configs does that).

    `FullText` (a search type, any case), `TYPE:key=value,key=value` (values stay strings, as the API
    accepts them: "true", "5", "0.3"), or a JSON object.
    """
    field = f"configs[{position}]"
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise EvalsiteError(
                "invalid-json",
                f"{field}: --config is not valid JSON: {exc.msg} at column {exc.colno}.",
                details={"field": field, "line": exc.lineno, "column": exc.colno},
            ) from None
    search_type, colon, rest = stripped.partition(":")
    if "=" in search_type:
        raise EvalsiteError(
            "validation-error",
            f"{field}: expected TYPE, TYPE:key=value,... or a JSON object, got {text!r}.",
            details={"field": field},
        )
    raw: dict[str, str] = {"search_type": search_type.strip()}
    if not colon:
        return raw
    for part in rest.split(","):
        if not part.strip():
            continue
        key, equals, value = part.partition("=")
        key = key.strip()
        if not equals or not key:
            raise EvalsiteError(
                "validation-error",
                f"{field}: expected key=value after '{search_type.strip()}:', got {part.strip()!r}.",
                details={"field": field},
            )
        if key in raw:
            raise EvalsiteError(
                "validation-error", f"{field}.{key}: given twice.", details={"field": f"{field}.{key}"}
            )
        raw[key] = value.strip()
    return raw


def parse_fail_under(value, top: float = 1) -> float | None:
    """The bar: a number from 0 to `top` (1 for retrieval metrics, 100 for an answer score); None: no gate."""
    if value is None:
        return None
    try:
        bar = float(value)
    except (TypeError, ValueError):
        bar = math.nan
    if isinstance(value, bool) or not 0 <= bar <= top:
        raise EvalsiteError(
            "invalid-number",
            f"fail_under: expected a number from 0 to {top:g}, got {value!r}.",
            details={"field": "fail_under"},
        )
    return bar


def parse_metric(value, ks: Sequence[int]) -> str:
    """The gated metric: one of the run's metric keys for these ks."""
    available = list(metrics.evaluate_query([], {}, ks))  # the names a run of these ks carries
    name = str(value).strip().lower()
    if name not in available:
        raise EvalsiteError(
            "unknown-metric",
            f"metric: {value!r} is not computed for ks {','.join(map(str, ks))}; "
            f"available: {', '.join(available)}.",
            details={"field": "metric", "available": available},
        )
    return name


class Command(CollectionCommand):
    help = (
        "Evaluate retrieval configurations on the golden set of one or more collections and gate on a metric: "
        "exit 0 when every configuration's metric is >= --fail-under, 1 when one is below, 2 on a usage "
        "or data error. The runs are stored like the API's (GET /lmkit/v1/search/evaluate/runs)."
    )
    required_permissions = needs(Perm.EVALUATE)

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.__class__ = _OneLineParser
        return parser

    def add_arguments(self, parser):
        self.add_scope_arguments(parser, collection=False)
        parser.add_argument(
            "--collection",
            action="append",
            help="collection_id (required); repeat to evaluate several collections as one.",
        )
        parser.add_argument(
            "--config",
            action="append",
            help=(
                "A configuration; repeat for several. A search type (FullText, Vector, Hybrid), "
                "TYPE:key=value,... (keys: label, fusion, rerank, bm25_variant, top_k, as_of, "
                "include_superseded, fulltext_weight, bm25_k1, bm25_b, rrf_k), or a JSON object as in the API. Default: FullText."
            ),
        )
        parser.add_argument(
            "--preset",
            action="append",
            help="A configuration preset's name (a study's winner, saved), evaluated beside the --config ones; "
            'repeat for several. In a JSON --config, {"preset": NAME, ...} sets fields over it.',
        )
        parser.add_argument(
            "--target",
            action="append",
            help="An external target's name (POST /lmkit/v1/targets), evaluated beside the --config ones; repeat "
            "for several. A target's run that failed (more failed questions than max_error_rate) fails the gate.",
        )
        parser.add_argument(
            "--ks", default=DEFAULT_KS_TEXT, help=f"Cutoffs, comma-separated (default {DEFAULT_KS_TEXT})."
        )
        parser.add_argument(
            "--metric", default="ndcg@10", help="The gated metric: recall@K, ndcg@K or mrr (default ndcg@10)."
        )
        parser.add_argument(
            "--fail-under",
            help="The bar from 0 to 1: exit 1 when a configuration's metric is below it. Without it, just report.",
        )
        parser.add_argument(
            "--format",
            choices=OUTPUTS,
            default="text",
            help="Output (default text): json, junit (for CI test reporters: a case per configuration's gate, "
            "which alone fails, and per question, skipped unless it passed) or "
            "markdown (a summary table to post as a comment or a job summary).",
        )
        self._add_subset_arguments(parser)
        self._add_answer_arguments(parser)

    @staticmethod
    def _add_subset_arguments(parser) -> None:
        subset = parser.add_argument_group("subset (both kinds): which golden entries to ask")
        subset.add_argument(
            "--tag",
            action="append",
            help="Ask only entries carrying this tag; repeat: entries with any of them.",
        )
        subset.add_argument(
            "--origin",
            action="append",
            help="Ask only entries of this origin (Manual, Imported, Generated); repeat.",
        )
        subset.add_argument("--reviewed-only", action="store_true", help="Ask only entries marked reviewed.")
        subset.add_argument(
            "--skip-unreviewed-generated",
            action="store_true",
            help="Leave out generated entries nobody reviewed yet (manual and imported ones stay).",
        )

    @staticmethod
    def _add_answer_arguments(parser) -> None:
        answers = parser.add_argument_group("answer evaluation (--answers)")
        answers.add_argument(
            "--answers",
            action="store_true",
            help="Evaluate grounded answers instead of retrieval: --config also takes model and groundedness "
            "(Off, Low, Medium, High); --fail-under is the overall score from 0 to 100.",
        )
        answers.add_argument(
            "--judge-model", help='The judge model (default EVALSITE_LLM_MODEL; "heuristic").'
        )
        answers.add_argument(
            "--judge-samples",
            help="Judgements per metric, odd, 1-9 (default 1, at temperature 0): above 1, the majority verdict "
            "per item and the share that agreed as the judge's confidence.",
        )
        answers.add_argument(
            "--judge-temperature", help="The sampling temperature of --judge-samples above 1 (default 0.7)."
        )
        answers.add_argument(
            "--no-llm", action="store_true", help="Offline: extractive answers and the heuristic judge."
        )
        answers.add_argument(
            "--unanswerable", help="A file of questions the collection cannot answer, one per line."
        )
        answers.add_argument("--max-questions", help="Evaluate at most this many golden entries.")
        answers.add_argument(
            "--metric-threshold",
            help="One pass threshold (0-1) for context relevancy, faithfulness and answer relevancy "
            "(defaults 0.6, 0.6, 0.4).",
        )

    def handle(self, *args, **options):
        if options["format"] not in OUTPUTS:
            raise EvalsiteError(
                USAGE_CODE, f"format: expected one of {', '.join(OUTPUTS)}, got {options['format']!r}."
            )
        collection_ids = options["collection"]
        if not collection_ids:  # not required by argparse: Django's call_command cannot pass a required list
            raise EvalsiteError(USAGE_CODE, "the following arguments are required: --collection")
        tenant = self.tenant(options)
        collections = selectors.collections_named(
            tenant=tenant,
            collection_id=None,
            collection_ids=[collection_ids] if isinstance(collection_ids, str) else collection_ids,
        )
        raw_configs = options["config"]
        if isinstance(raw_configs, str):
            raw_configs = [raw_configs]
        subset = subset_from_cli(options)
        if options.get("answers"):
            return self.handle_answers(tenant, collections, raw_configs, options, subset)
        ks = parse_ks(options["ks"])
        targets = options.get("target") or []
        targets = [targets] if isinstance(targets, str) else targets
        raw = [config_from_cli(c, i) for i, c in enumerate(raw_configs or [])]
        raw += [{"target": name} for name in targets]
        presets = options.get("preset") or []
        raw += [{"preset": name} for name in ([presets] if isinstance(presets, str) else presets)]
        raw = with_presets(tenant, raw)
        configs = config_parser.parse_configs(raw or None, available_rerankers(), subset)
        metric = parse_metric(options["metric"], ks)
        bar = parse_fail_under(options["fail_under"])

        batch_id, runs = evaluate_retrieval(
            tenant=tenant, collections=collections, ks=ks, configs=configs, actor=actor_command("evaluate")
        )
        self.gate(batch_id, runs, metric, bar, options["format"])

    def gate(self, batch_id, runs: Sequence[EvaluationRun], metric: str, bar: float | None, fmt: str) -> None:
        """Write the retrieval runs in the output format asked for, the verdict on stderr, and exit 1 when one
        fails the gate (evaluate and evaluate_run share it)."""
        verdict = retrieval_gate(runs, metric, bar)
        if fmt == "json":
            document = RetrievalGateOut(
                {
                    "batch_id": batch_id,
                    "metric": metric,
                    "fail_under": bar,
                    "passed": verdict.passed,
                    "runs": [run_summary(run) for run in runs],
                }
            )
            self.stdout.write(json.dumps(document.data, indent=2))
        elif fmt == "junit":
            self.stdout.write(runs_junit(runs, verdict), ending="")
        elif fmt == "markdown":
            self.stdout.write(retrieval_markdown(runs, verdict))
        else:
            self.write_report(runs, verdict)
        self.finish(verdict)

    def finish(self, verdict: Gate) -> None:
        """The verdict as one line on stderr, whatever the format; exit 1 when the gate failed."""
        self.stderr.write(verdict.verdict_line())
        if not verdict.passed:
            sys.exit(1)

    def write_report(self, runs: Sequence[EvaluationRun], verdict: Gate) -> None:
        names = list(dict.fromkeys(name for run in runs for name in run.metrics))
        gated = verdict.bar is not None or any(check.run_failed for check in verdict.checks)
        header = ["label", *names, "questions", "ms"] + (["gate"] if gated else [])
        rows = []
        for run, check in zip(runs, verdict.checks, strict=True):
            values = [f"{run.metrics[n]:.4f}" if n in run.metrics else "-" for n in names]
            row = [run.label, *values, str(run.question_count)]
            row.append(f"{run.duration_ms:.1f}" if run.duration_ms is not None else "-")
            if gated:
                row.append("PASS" if verdict.passes(check) else "FAIL")
            rows.append(row)
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            cells = [
                cell.ljust(width) if i == 0 or header[i] == "gate" else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            self.stdout.write("  ".join(cells).rstrip())
        self.write_slices([(run.label, run.slices) for run in runs], 4)
        for warning in dict.fromkeys(w for run in runs for w in run.warnings):
            self.stdout.write(f"warning: {warning}")
        self.stdout.write(verdict.report_line())

    def write_slices(self, runs, places: int) -> None:
        """Every metric per slice (tag, origin, answerable) of each run, after the runs' table."""
        header, rows = slice_table(runs, places)
        if rows:
            self.stdout.write("per slice:")
            for line in text_table(header, rows):
                self.stdout.write(line)

    # --- --answers ------------------------------------------------------------------------------------------

    def handle_answers(self, tenant, collections, raw_configs, options, subset) -> None:
        configs = parse_answer_configs(
            None if raw_configs is None else [config_from_cli(c, i) for i, c in enumerate(raw_configs)],
            available_rerankers(),
            subset,
        )
        bar = parse_fail_under(options["fail_under"], top=100)
        thresholds: dict[str, float] = {}
        if options.get("metric_threshold") is not None:
            value = options["metric_threshold"]
            thresholds = parse_thresholds(
                dict.fromkeys(("context_relevancy", "faithfulness", "answer_relevancy"), value),
                field="metric_threshold",
            )
        max_questions = None
        if options.get("max_questions") is not None:
            max_questions = parse_positive_int(options["max_questions"], "max_questions", maximum=10**9)
        unanswerable = read_questions(options["unanswerable"]) if options.get("unanswerable") else []
        sampling = parse_judge_sampling(options.get("judge_samples"), options.get("judge_temperature"))
        batch_id, runs = evaluate_answers(
            tenant=tenant,
            collections=collections,
            configs=configs,
            judge_model=options.get("judge_model"),
            judge_sampling=sampling,
            unanswerable_questions=unanswerable,
            max_questions=max_questions,
            actor=actor_command("evaluate"),
            thresholds=thresholds,
            offline=bool(options.get("no_llm")),
        )
        summaries = [run_summary(run) for run in runs]
        verdict = answer_gate(summaries, bar)
        if options["format"] == "json":
            document = AnswerGateOut(
                {"batch_id": batch_id, "fail_under": bar, "passed": verdict.passed, "runs": summaries}
            )
            self.stdout.write(json.dumps(document.data, indent=2))
        elif options["format"] == "junit":
            self.stdout.write(runs_junit(runs, verdict), ending="")
        elif options["format"] == "markdown":
            self.stdout.write(answer_markdown(summaries, verdict))
        else:
            self.write_answer_report(summaries, verdict)
        self.finish(verdict)

    def write_answer_report(self, summaries: list[dict], verdict: Gate) -> None:
        names = list(JUDGED_METRICS)
        header = ["label", "score", *names, "refusal_recall", "false_refusal", "mode"]
        rows = [[*answer_cells(s), s["mode"]] for s in summaries]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            self.stdout.write("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                                        enumerate(zip(row, widths, strict=True))).rstrip())  # fmt: skip
        for s in summaries:
            diagnosis = ", ".join(f"{k} {v}" for k, v in sorted((s["diagnosis"] or {}).items()))
            self.stdout.write(f"{s['label']}: {s['passed']} passed, {s['failed']} failed ({diagnosis})")
        self.write_slices([(s["label"], s["slices"]) for s in summaries], 3)
        for warning in dict.fromkeys(w for s in summaries for w in s["warnings"]):
            self.stdout.write(f"warning: {warning}")
        self.stdout.write(verdict.report_line())


def subset_from_cli(options) -> Subset:
    """--tag, --origin, --reviewed-only, --skip-unreviewed-generated as the API's subset fields, read by the
    same parser (errors name tags, origin, ...). A single string (call_command) counts as one value."""

    def listed(value) -> list | None:
        return [value] if isinstance(value, str) else value

    return config_parser.parse_subset(
        {
            "tags": listed(options.get("tag")),
            "origin": listed(options.get("origin")),
            "reviewed_only": options.get("reviewed_only") or None,
            "skip_unreviewed_generated": options.get("skip_unreviewed_generated") or None,
        }
    )


def read_questions(path: str) -> list[str]:
    """One question per non-blank line of a UTF-8 text file."""
    try:
        with open(path, encoding="utf-8") as handle:
            return [line.strip() for line in handle if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalsiteError(
            "file-unreadable", f"unanswerable: cannot read {path}: {exc}", details={"field": "unanswerable"}
        ) from None
