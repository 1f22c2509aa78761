"""`manage.py study`: a study run in place, from the command line; prints what GET studies/{id} gives.

    manage.py study --cluster C --tenant T --collection X --space '{"bm25_k1": {"low": 0.5, "high": 2}}'
        [--base '{"search_type": "FullText"}'] [--metric ndcg@10] [--trials 50] [--seconds S] [--seed 0]
        [--confirm-share 0.5] [--sampler tpe|random|grid] [--no-prune] [--baseline JSON] [--max-p95-ms N]
        [--save NAME [--accept-not-better]] [--format text|json]

The same request as POST /lmkit/v1/search/evaluate/studies (each option one of its fields, or `--request FILE`
holding the whole body), checked the same way (a bad field: exit 2 naming it). The trials are printed as they
end; then the best on the tuning part and the confirmation, with its verdict. `--save` keeps a winner the
confirmation did not show better only with `--accept-not-better` (else it says why it did not, on stderr). Exit 0
once the study is done (whatever its verdict), 2 for a usage or data error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rest_framework.renderers import JSONRenderer

from evalsite.audit.services import actor_command
from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.studies import services
from evaluation.studies.request import METRICS_TEXT
from goldenset.management.base import CollectionCommand

USAGE = "usage"


class Command(CollectionCommand):
    help = "Find the best configuration on a tuning part of the golden set and confirm it on the rest."
    required_permissions = needs(Perm.EVALUATE)

    def add_arguments(self, parser):
        self.add_scope_arguments(parser)
        parser.add_argument("--request", help="A JSON file holding the whole request (as the API takes it).")
        parser.add_argument(
            "--space", help="The space: a JSON object, field -> choices or {low, high, step, log}."
        )
        parser.add_argument(
            "--base", help='The base configuration, JSON (default {"search_type": "FullText"}).'
        )
        parser.add_argument("--metric", help=f"What is maximised: {METRICS_TEXT}.")
        parser.add_argument("--trials", help="Trials at most (default 50).")
        parser.add_argument("--seconds", help="Seconds at most.")
        parser.add_argument("--seed", help="The seed of the split, the sampler and the pruner (default 0).")
        parser.add_argument("--confirm-share", help="The share kept for the confirmation (default 0.5).")
        parser.add_argument("--sampler", help="tpe (default), random or grid.")
        parser.add_argument(
            "--no-prune", action="store_true", help="Score every trial on every tuning question."
        )
        parser.add_argument(
            "--baseline", help="The configuration the winner must beat, JSON (default: base)."
        )
        parser.add_argument("--max-p95-ms", help="A trial whose p95 search time is above this cannot win.")
        parser.add_argument(
            "--judge-model", help="An answer study's judge model (default: the heuristic judge)."
        )
        parser.add_argument(
            "--judge-calls", help="The judge calls an answer study's trials may make at most."
        )
        parser.add_argument("--save", help="Save the winner as a configuration preset of this name.")
        parser.add_argument(
            "--accept-not-better",
            action="store_true",
            help="With --save: save the winner even when it was not shown better than the baseline.",
        )
        parser.add_argument(
            "--format", choices=("text", "json"), default="text", help="Output (default text)."
        )

    def handle(self, *args, **options):
        collection = self.collection(options)
        raw = self._request(options)
        actor = actor_command("study")
        study = services.study_create(
            tenant=collection.tenant, collection=collection, raw=raw, actor=actor, queue=False
        )
        text = options["format"] == "text"
        if text:
            self.stdout.write(f"study {study.pk}: {study.metric} on {collection.slug}")
        shown = [0]

        def progress(done: int, total: int) -> None:
            if text:
                study.refresh_from_db(fields=["trials"])
                for trial in study.trials[shown[0] :]:
                    self.stdout.write(_trial_line(trial))
                shown[0] = len(study.trials)

        try:
            services.study_execute(study, progress)
        except EvalsiteError as exc:
            services.study_fail(study, exc)  # the study's page and GET say Failed, and why
            raise
        study.refresh_from_db()
        saved = options.get("save")
        if saved and not (options["accept_not_better"] or services.winner_shown_better(study)):
            self.stderr.write(
                f"not saved as {saved!r}: {services.not_better_warning(study)} --accept-not-better saves it."
            )
            saved = None
        elif saved:
            services.preset_save(study=study, name=saved.strip(), actor=actor, accept_not_better=True)
        detail = services.study_detail(study)
        if text:
            self._summary(detail, saved)
        else:
            # The API's own renderer: the same text GET studies/{id} answers (instants to the microsecond).
            self.stdout.write(JSONRenderer().render(detail, renderer_context={"indent": 2}).decode())

    def _request(self, options) -> dict[str, Any]:
        raw: dict[str, Any] = {}
        if options.get("request"):
            path = Path(options["request"])
            try:
                raw = json.loads(path.read_text())
            except OSError as exc:
                raise EvalsiteError(
                    "file-unreadable", f"{path}: {exc.strerror}.", details={"path": str(path)}
                ) from None
            except ValueError as exc:
                raise EvalsiteError(USAGE, f"--request: {path} is not JSON ({exc}).") from None
            if not isinstance(raw, dict):
                raise EvalsiteError(USAGE, f"--request: {path} does not hold a JSON object.")
            raw.pop("collection_id", None)
        for option, field in (("space", "space"), ("base", "base"), ("baseline", "baseline")):
            if options.get(option):
                raw[field] = _json(options[option], f"--{option}")
        for option, field in (
            ("metric", "metric"), ("seed", "seed"), ("confirm_share", "confirm_share"), ("sampler", "sampler"),
            ("max_p95_ms", "max_p95_ms"), ("judge_model", "judge_model"),
        ):  # fmt: skip
            if options.get(option) is not None:
                raw[field] = _json_or_text(options[option])
        budget = dict(raw.get("budget") or {})
        for field in ("trials", "seconds", "judge_calls"):
            if options.get(field) is not None:
                budget[field] = _json_or_text(options[field])
        if budget:
            raw["budget"] = budget
        if options["no_prune"]:
            raw["prune"] = False
        raw.setdefault("base", {"search_type": "FullText"})
        if "space" not in raw:
            raise EvalsiteError(
                USAGE, "the study needs a space: --space '{\"bm25_k1\": [0.9, 1.2, 1.5]}' or --request FILE."
            )
        return raw

    def _summary(self, detail: dict, saved: str | None) -> None:
        best, confirmation = detail["best"], detail["confirmation"]
        self.stdout.write(
            f"{len(detail['trials'])} trials on {detail['split'].get('tuning', 0)} tuning questions "
            f"({detail['evaluations']} question scorings)"
        )
        if best is None:
            self.stdout.write("no winner: the study was stopped before a trial completed")
            return
        values = _values(best["values"])
        self.stdout.write(
            f"best on the tuning part: trial {best['number']} ({values}): {best['tuning_value']:.4f}"
        )
        for name in ("baseline", "winner"):
            part = confirmation[name]
            low, high = part["ci"]
            self.stdout.write(f"  {name}: {part['value']:.4f} [{low:.4f}, {high:.4f}]  run {part['run_id']}")
        self.stdout.write(confirmation["verdict"])
        if saved:
            self.stdout.write(f"saved as preset {saved!r}")


def _values(values: dict) -> str:
    """A trial's values to read: numbers to 4 significant digits (the API gives them whole)."""
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())


def _trial_line(trial: dict) -> str:
    values = _values(trial["values"])
    if trial["error"]:
        outcome = f"failed: {trial['error']}"
    else:
        outcome = f"{trial['value']:.4f} on {trial['questions']} questions"
        outcome += " (pruned)" if trial["pruned"] else ""
        outcome += " (too slow)" if trial["infeasible"] else ""
        outcome += f" ({trial['errors']} failed)" if trial.get("errors") else ""
    return f"  trial {trial['number']:>3}  {values}: {outcome}"


def _json(value: str, option: str) -> Any:
    try:
        return json.loads(value)
    except ValueError as exc:
        raise EvalsiteError(USAGE, f"{option}: not JSON ({exc}).") from None


def _json_or_text(value: str) -> Any:
    """A number as a number ("0.5" -> 0.5), anything else as its text: the request's own checks name it."""
    try:
        return json.loads(value)
    except ValueError:
        return value
