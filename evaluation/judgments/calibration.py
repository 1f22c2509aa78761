"""Human labels and how well each judge agrees with them (issue 15): import, the calibration report, and
calibrated thresholds applied to a collection (an answer evaluation reads them: evaluation.answers.evaluate).

The report, per judge, metric and level (a question's metric, or one statement):
- the heuristic's scores are computed now, by the code that judges the next run, from what the label judged
  (the stored run's answer and passages, or the imported ones);
- an LLM judge's scores are the ones it gave in the stored runs the labels name (a judge is not called to
  build a report): the judge is "llm-judge:<model>" (evaluation.answers.judge_identity.judge_name);
- people's label per item is the majority of its raters (an item they split evenly on is left out, counted);
- the verdict is the score against the threshold in force: the collection's calibrated one, else the default
  (verdicts.DEFAULT_THRESHOLDS; 0.5 for a metric without a pass threshold); a statement is supported at the
  judge's SUPPORT_MIN (the heuristic) or by the judge's verdict (an LLM judge: 1 or 0, or with k samples the
  share that agreed, so 2 of 3 "supported" scores 0.67 and 2 of 3 "not supported" 0.33).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from evalsite.audit.models import AuditAction
from evalsite.audit.services import audit_record
from evalsite.errors import EvalsiteError
from evaluation.answers import judge, verdicts
from evaluation.answers import writer as answer_writer
from evaluation.answers.judge_identity import judge_name
from evaluation.answers.judge_weights import collection_term_weights
from evaluation.judgments import agreement
from evaluation.judgments.labels import STATEMENT
from evaluation.models import (
    EvaluationAuditObject,
    EvaluationRun,
    HumanLabel,
    JudgeThreshold,
    LabelLevel,
    QuestionResult,
    RunKind,
)
from goldenset.models import Collection, GoldenEntry

HEURISTIC = judge.HEURISTIC
NO_THRESHOLD = 0.5  # the verdict cut of a metric the pass rule does not threshold (context recall, citations)


# --- the judges' scores of what was labelled ---------------------------------------------------------------------


@dataclass
class _Item:
    key: str
    metric: str
    level: str
    statement: str
    label: HumanLabel  # one of its labels: what it judged (entry, run or answer and passages)
    ratings: dict[str, HumanLabel] = field(default_factory=dict)  # rater -> label

    @property
    def majority(self) -> bool | None:
        passed = sum(label.passed for label in self.ratings.values())
        failed = len(self.ratings) - passed
        return None if passed == failed else passed > failed


def _passages(rows: Iterable[dict[str, Any]]) -> list[answer_writer.Passage]:
    return [
        answer_writer.Passage(
            number=int(row.get("number", i)),
            document_id=str(row.get("document_id", "")),
            page_number=int(row.get("page_number", 1)),
            title=str(row.get("title", "")),
            text=str(row.get("text", "")),
        )
        for i, row in enumerate(rows, 1)
    ]


def _answer(text: str, refused: bool, passages, citations=None) -> answer_writer.Answer:
    cited = (
        tuple(answer_writer.Citation(c["number"], c["document_id"], c["statement"]) for c in citations)
        if citations is not None
        else answer_writer.parse_citations(text, passages)
    )
    return answer_writer.Answer(text, refused, cited, "labelled", "", -1.0)


def _heuristic(item: _Item, result: QuestionResult | None, reference: str, weights) -> float | None:
    """The heuristic's score of the item now, with the collection's term rarity as an evaluation has it: a
    statement's support, or the question's metric."""
    label = item.label
    if result is not None:
        passages = _passages(result.context)
        answer = _answer(result.answer, bool(result.refused), passages, result.citations)
    else:
        passages = _passages(label.passages)
        answer = _answer(label.answer, False, passages)
    if item.level == STATEMENT:
        return float(judge.statement_support(item.statement, passages, weights)["support"])
    score = {
        "faithfulness": lambda: judge.faithfulness(answer, passages, weights),
        "context_recall": lambda: judge.context_recall(reference, passages, weights),
        "answer_relevancy": lambda: judge.answer_relevancy(label.question, answer),
        "citation_precision": lambda: judge.citation_precision(answer, passages, weights),
        "context_relevancy": lambda: judge.context_relevancy(label.question, passages, reference),
    }[item.metric]()
    return score.value


def _stored_llm(item: _Item, result: QuestionResult) -> float | None:
    """The LLM judge's stored score of the item in its run: the question's value, or a statement's verdict."""
    judged = result.judgements.get(item.metric) or {}
    if judged.get("method") != judge.LLM_JUDGE:
        return None
    if item.level != STATEMENT:
        return judged.get("value")
    wanted = " ".join(item.statement.lower().split())
    for row in (judged.get("detail") or {}).get("statements", []):
        if " ".join(str(row.get("text", "")).lower().split()) == wanted:
            # A sampled judge's share of agreeing samples makes its verdict a graded score: 2 of 3 saying
            # "supported" ranks below 3 of 3 (evaluation.answers.judge_votes); one judgement is 1 or 0.
            confidence = row.get("confidence")
            if isinstance(confidence, int | float):
                return float(confidence) if row.get("supported") else 1.0 - float(confidence)
            return 1.0 if row.get("supported") else 0.0
    return None


def _threshold(collection: Collection, judge_key: str, metric: str, level: str) -> tuple[float, str]:
    if level == STATEMENT:
        return (judge.SUPPORT_MIN, "support") if judge_key == HEURISTIC else (0.5, "verdict")
    found = JudgeThreshold.objects.filter(collection=collection, judge=judge_key, metric=metric).first()
    if found is not None:
        return found.value, "calibrated"
    if metric in verdicts.DEFAULT_THRESHOLDS:
        return verdicts.DEFAULT_THRESHOLDS[metric], "default"
    return NO_THRESHOLD, "none (0.5)"


_REPORTS: OrderedDict[tuple, dict[str, Any]] = OrderedDict()
_REPORTS_LOCK = threading.Lock()
_BUILDING: dict[tuple, threading.Lock] = {}  # a report being built, by its key


def _fingerprint(collection: Collection) -> tuple:
    labels = HumanLabel.objects.filter(collection=collection).aggregate(n=Count("pk"), at=Max("updated_at"))
    thresholds = JudgeThreshold.objects.filter(collection=collection).aggregate(
        n=Count("pk"), at=Max("created_at")
    )
    # Reference answers feed context recall and relevancy: an edited entry changes the heuristic's scores.
    entries = GoldenEntry.objects.filter(collection=collection).aggregate(at=Max("updated_at"))
    return (collection.pk, labels["n"], labels["at"], thresholds["n"], thresholds["at"], entries["at"])


def calibration_report(
    *, collection: Collection, metric: str | None = None, judge_filter: str | None = None
) -> dict[str, Any]:
    """The calibration report of a collection's labels (see the module doc), filtered by metric and judge.
    Cached per process until a label, a threshold or a golden entry changes: callers must not change it. One
    thread builds it while the process's others asking wait; `manage.py serve` builds it once in gunicorn's
    master for the collections it warms, and the web processes inherit it (evaluation.warmup)."""
    key = _fingerprint(collection)
    with _REPORTS_LOCK:
        report = _REPORTS.get(key)
        building = _BUILDING.setdefault(key, threading.Lock()) if report is None else None
    if building is not None:
        # One thread builds (0.7-2 s of CPU); the process's others asking meanwhile wait for it.
        with building:
            with _REPORTS_LOCK:
                report = _REPORTS.get(key)
            if report is None:
                report = _build_report(collection)
                with _REPORTS_LOCK:
                    _REPORTS[key] = report
                    _BUILDING.pop(key, None)
                    while len(_REPORTS) > 16:
                        _REPORTS.popitem(last=False)
    assert report is not None
    judges = [
        j
        for j in report["judges"]
        if (metric is None or j["metric"] == metric) and (judge_filter is None or j["judge"] == judge_filter)
    ]
    kept = [a for a in report["agreement"] if metric is None or a["metric"] == metric]
    return {**report, "judges": judges, "agreement": kept}


def _build_report(collection: Collection) -> dict[str, Any]:
    labels = list(HumanLabel.objects.filter(collection=collection).select_related("entry", "run"))
    items: dict[str, _Item] = {}
    for label in labels:
        item = items.setdefault(
            label.item_key, _Item(label.item_key, label.metric, label.level, label.statement, label)
        )
        item.ratings[label.rater] = label
    results = {
        (r.run_id, r.entry_id): r
        for r in QuestionResult.objects.filter(
            run_id__in={label.run_id for label in labels if label.run_id}
        ).only("run_id", "entry_id", "answer", "refused", "citations", "context", "judgements")
    }
    raters = sorted({label.rater for label in labels})
    weights = collection_term_weights([collection]) if items else None
    groups: dict[tuple[str, str, str], tuple[list[float], list[bool]]] = defaultdict(lambda: ([], []))
    ties: dict[tuple[str, str], int] = defaultdict(int)
    warnings = []
    for item in items.values():
        majority = item.majority
        if majority is None:
            ties[(item.metric, item.level)] += 1
            continue
        label = item.label
        result = results.get((label.run_id, label.entry_id)) if label.run_id and label.entry_id else None
        if label.run_id and result is None:
            continue  # the golden entry was deleted since: its run result can no longer be found
        reference = label.entry.reference_answer if label.entry is not None else ""
        scored = [(HEURISTIC, _heuristic(item, result, reference, weights))]
        if result is not None and label.run is not None:
            scored.append((judge_name(label.run.config.get("judge_model")), _stored_llm(item, result)))
        for judge_key, score in scored:
            if score is None:
                continue
            scores, truth = groups[(judge_key, item.metric, item.level)]
            scores.append(float(score))
            truth.append(majority)
    judges = []
    for (judge_key, metric, level), (scores, truth) in sorted(groups.items()):
        threshold, source = _threshold(collection, judge_key, metric, level)
        judges.append(
            {
                "judge": judge_key,
                "metric": metric,
                "level": level,
                "threshold_source": source,
                **agreement.judge_agreement(scores, truth, threshold),
            }
        )
    between_raters = []
    by_metric: dict[tuple[str, str], list[_Item]] = defaultdict(list)
    for item in items.values():
        by_metric[(item.metric, item.level)].append(item)
    for (metric, level), group in sorted(by_metric.items()):
        matrix = [[_category(item.ratings.get(r)) for r in raters] for item in group]
        between_raters.append(
            {
                "metric": metric,
                "level": level,
                "raters": len({r for item in group for r in item.ratings}),
                "tied_items": ties[(metric, level)],
                **agreement.rater_agreement(matrix),
            }
        )
        if ties[(metric, level)]:
            warnings.append(
                f"{metric} ({level}): {ties[(metric, level)]} item(s) the raters split evenly on are left "
                "out of the judges' figures"
            )
    return {
        "collection_id": collection.slug,
        "labels": len(labels),
        "items": len(items),
        "raters": raters,
        "agreement": between_raters,
        "judges": judges,
        "warnings": warnings,
    }


def _category(label: HumanLabel | None) -> object | None:
    if label is None:
        return None
    return label.verdict if not label.verdict[:1].isdigit() else ("pass" if label.passed else "fail")


# --- the figure beside a run's metrics -------------------------------------------------------------------------


def run_calibration(run: EvaluationRun) -> dict[str, dict[str, Any]]:
    """{metric: {judge, level, auc, n}} for an answer run's judged metrics whose judge has labels in the run's
    collection: question-level figures first, else statement-level. {} for other runs."""
    if run.kind != RunKind.ANSWERS or not run.collection_ids:
        return {}
    labelled = HumanLabel.objects.filter(
        collection__tenant_id=run.tenant_id, collection__slug=run.collection_ids[0]
    )
    if not labelled.exists():  # one query for the usual page, a collection nobody labelled
        return {}
    collection = Collection.objects.get(tenant_id=run.tenant_id, slug=run.collection_ids[0])
    report = calibration_report(collection=collection)
    out: dict[str, dict[str, Any]] = {}
    for metric, method in run.metric_methods.items():
        name = HEURISTIC if method == HEURISTIC else judge_name(run.config.get("judge_model"))
        rows = [j for j in report["judges"] if j["judge"] == name and j["metric"] == metric]
        rows.sort(key=lambda j: j["level"] != LabelLevel.QUESTION)
        if rows and rows[0]["auc"] is not None:
            row = rows[0]
            out[metric] = {"judge": name, "level": row["level"], "auc": row["auc"], "n": row["n"]}
    return out


# --- calibrated thresholds ---------------------------------------------------------------------------------------


def threshold_apply(
    *, collection: Collection, metric: str, judge_key: str, actor: str, value: float | None = None
) -> JudgeThreshold:
    """Apply the report's best threshold (or `value`) for a judge's metric to the collection's evaluations."""
    if metric not in verdicts.DEFAULT_THRESHOLDS:
        raise EvalsiteError(
            "validation-error",
            f"metric: {metric!r} has no pass threshold (thresholded: "
            f"{', '.join(sorted(verdicts.DEFAULT_THRESHOLDS))}).",
            details={"field": "metric"},
        )
    report = calibration_report(collection=collection, metric=metric, judge_filter=judge_key)
    row = next((j for j in report["judges"] if j["level"] == LabelLevel.QUESTION), None)
    if row is None or row["best_threshold"] is None:
        raise EvalsiteError(
            "no-calibration",
            f"metric: no question-level labels of {metric} judged by {judge_key} with both verdicts in "
            f"{collection.slug}: nothing to calibrate from.",
            details={"field": "metric"},
        )
    chosen = row["best_threshold"]["value"] if value is None else value
    if not 0.0 <= chosen <= 1.0:
        raise EvalsiteError(
            "validation-error", "value: expected a number in 0..1.", details={"field": "value"}
        )
    source = {
        "labels": row["n"],
        "auc": row["auc"],
        "best_threshold": row["best_threshold"],
        "chosen": "best" if value is None else "given",
        "applied_at": timezone.now().isoformat(),
        "applied_by": actor,
    }
    with transaction.atomic():
        found, _ = JudgeThreshold.objects.update_or_create(
            collection=collection,
            judge=judge_key,
            metric=metric,
            defaults={"value": chosen, "source": source},
        )
        audit_record(
            tenant=collection.tenant, action=AuditAction.UPDATE, object_type=EvaluationAuditObject.THRESHOLD,
            object_id=f"{collection.slug}/{judge_key}/{metric}", actor=actor, collection=collection,
            changes={"value": chosen, **source},
        )  # fmt: skip
    return found


def threshold_reset(*, collection: Collection, metric: str, judge_key: str, actor: str) -> bool:
    with transaction.atomic():
        deleted, _ = JudgeThreshold.objects.filter(
            collection=collection, judge=judge_key, metric=metric
        ).delete()
        if deleted:
            audit_record(
                tenant=collection.tenant, action=AuditAction.DELETE, object_type=EvaluationAuditObject.THRESHOLD,
                object_id=f"{collection.slug}/{judge_key}/{metric}", actor=actor, collection=collection,
            )  # fmt: skip
    return bool(deleted)


def thresholds_list(collection: Collection) -> list[dict[str, Any]]:
    return [
        {"judge": t.judge, "metric": t.metric, "value": t.value, "calibrated_from": t.source}
        for t in JudgeThreshold.objects.filter(collection=collection)
    ]
