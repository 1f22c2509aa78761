"""`manage.py calibration`: how well each judge agrees with a collection's human labels.

    manage.py calibration --cluster C --tenant T --collection X [--metric M] [--judge J] [--format json]
    manage.py calibration ... --apply faithfulness [--judge heuristic] [--value 0.55]
    manage.py calibration ... --reset faithfulness [--judge heuristic]

--apply records the report's best threshold (or --value) as the collection's pass threshold for that judge's
metric: later answer evaluations use it and say so in their config; --reset returns it to the default.
"""

import json

from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.judgments import calibration
from goldenset.management.base import CollectionCommand
from goldenset.vocabulary.metric_names import JUDGED_METRICS


def _figure(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def report_lines(report: dict) -> list[str]:
    """The report as text, one line per raters' agreement and per judge's metric."""
    lines = [
        f"Calibration of {report['collection_id']}: {report['labels']} labels of {report['items']} items; "
        f"raters: {', '.join(report['raters']) or '-'}"
    ]
    if report["agreement"]:
        lines.append("Raters' agreement (no judge can be expected to beat it):")
    for a in report["agreement"]:
        lines.append(
            f"  {a['metric']} ({a['level']}): {a['items']} items, {a['items_rated_twice']} rated by two or more; "
            f"Krippendorff's alpha {_figure(a['krippendorff_alpha'])}, Fleiss' kappa {_figure(a['fleiss_kappa'])}"
        )
    if report["judges"]:
        lines.append("Judges against the raters' majority:")
    for j in report["judges"]:
        best = j["best_threshold"]
        tail = (
            f"; best threshold {best['value']:.3g} [{best['low']:.3g}, {best['high']:.3g}] "
            f"(balanced accuracy {best['balanced_accuracy']:.2f})"
            if best
            else ""
        )
        c = j["confusion"]
        lines.append(
            f"  {j['judge']} {j['metric']} ({j['level']}): n {j['n']}, AUC {_figure(j['auc'])}; at "
            f"{j['threshold']:g} ({j['threshold_source']}): balanced accuracy {_figure(j['balanced_accuracy'])}, "
            f"precision {_figure(j['precision'])}, recall {_figure(j['recall'])}, kappa {_figure(j['cohen_kappa'])}, "
            f"tp {c['tp']} fp {c['fp']} tn {c['tn']} fn {c['fn']}{tail}"
        )
    lines.extend(f"warning: {w}" for w in report["warnings"])
    return lines


class Command(CollectionCommand):
    help = "The judges' calibration against human labels; apply or reset a calibrated threshold."
    required_permissions = needs(Perm.CURATE)

    def add_arguments(self, parser):
        self.add_scope_arguments(parser)
        parser.add_argument("--metric", choices=JUDGED_METRICS)
        parser.add_argument("--judge", help='"heuristic" or "llm-judge:<model>"')
        parser.add_argument("--format", choices=["text", "json"], default="text")
        parser.add_argument(
            "--apply", choices=JUDGED_METRICS, help="Apply the best threshold of this metric."
        )
        parser.add_argument("--value", type=float, help="--apply: this threshold instead of the best one.")
        parser.add_argument("--reset", choices=JUDGED_METRICS, help="Return this metric to its default.")

    def handle(self, *args, **options):
        collection = self.collection(options)
        actor = "command:calibration"
        judge_key = options.get("judge") or calibration.HEURISTIC
        if options.get("apply"):
            found = calibration.threshold_apply(
                collection=collection, metric=options["apply"], judge_key=judge_key, actor=actor,
                value=options.get("value"),
            )  # fmt: skip
            self.stdout.write(
                f"{collection.slug}: {found.judge} {found.metric} passes at {found.value:.4g} now"
            )
            return
        if options.get("reset"):
            if not calibration.threshold_reset(
                collection=collection, metric=options["reset"], judge_key=judge_key, actor=actor
            ):
                raise EvalsiteError(
                    "not-found", f"no calibrated {options['reset']} threshold for {judge_key}.", status=404
                )
            self.stdout.write(
                f"{collection.slug}: {judge_key} {options['reset']} back to its default threshold"
            )
            return
        report = calibration.calibration_report(
            collection=collection, metric=options.get("metric"), judge_filter=options.get("judge")
        )
        if options["format"] == "json":
            self.stdout.write(
                json.dumps({**report, "thresholds": calibration.thresholds_list(collection)}, indent=2)
            )
        else:
            self.stdout.write("\n".join(report_lines(report)))
