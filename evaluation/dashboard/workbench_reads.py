"""What the workbench's pages show: the questions list's rows and choices, one question's columns as the page
renders them (snippets with the question's words marked, grades with their meaning), and the knobs' choices."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, QueryDict

from evalsite.errors import EvalsiteError, NotFound
from evalsite.tenancy.models import Tenant
from evaluation import configs as config_parser
from evaluation.dashboard.judging_views import highlighted
from evaluation.models import ConfigPreset, EvaluationRun, RunKind
from evaluation.presets import with_presets
from evaluation.reports.diagnosis import RETRIEVAL_DIAGNOSES
from evaluation.request_fields import DEFAULT_KS
from evaluation.retrieval.read_path import available_rerankers
from evaluation.retrieval.search.bm25 import VARIANTS
from evaluation.retrieval.search.engine import FUSIONS, SEARCH_TYPES
from evaluation.runs import selectors
from evaluation.targets.kinds import RETRIEVAL_KINDS
from evaluation.targets.services import target_names
from evaluation.workbench import questions as listing
from evaluation.workbench.question import MAX_COLUMNS, Asked, asked_entry, asked_query, question_columns
from goldenset.models import Collection
from goldenset.services.scales import collection_scale
from goldenset.vocabulary.grade_scales import Scale
from goldenset.vocabulary.metric_names import JUDGED_SHARE, NDCG, at_k

SESSION_UNDO = "workbench_undo"  # the person's grades on the workbench, newest last, for undo
TOPS = (10, 20)  # how deep a column shows
RUNS_OFFERED = 50


def ks_for(top: int) -> list[int]:
    """The cutoffs of a workbench shown `top` deep: the default ones up to it, and it."""
    return sorted({k for k in DEFAULT_KS if k <= top} | {top})


def raw_configs(tenant: Tenant, raw: Any) -> list:
    """The columns' configurations read as /search/evaluate reads them (presets expanded), at most three."""
    if isinstance(raw, list) and len(raw) > MAX_COLUMNS:
        raise EvalsiteError("too-many-configs", f"configs: at most {MAX_COLUMNS} side by side.",
                            details={"field": "configs"})  # fmt: skip
    return config_parser.parse_configs(with_presets(tenant, raw), available_rerankers())


def _grade_label(grade: int | None, scale: Scale) -> str:
    """A golden grade as a chip says it: the grade and its meaning's first words on the collection's scale."""
    if grade is None:
        return "unjudged"
    return f"{grade}: {scale.meaning[grade].split(':')[0]}" if grade in scale else str(grade)


def columns_context(
    request: HttpRequest, tenant: Tenant, collection: Collection, state: dict
) -> dict[str, Any]:
    """One question's columns for a page state {entry | question, configs, top, explain, draft}."""
    entry, question = str(state.get("entry") or "")[:300], state.get("question") or ""
    # "Try a new query", nothing typed yet: nothing to search.
    blank = not entry and not (isinstance(question, str) and question.strip())
    asked = Asked("") if blank else asked_entry(collection, entry) if entry else asked_query(question)
    raw = state.get("configs") or [{"label": "FullText"}]
    configs = raw_configs(tenant, raw)
    top: int = state["top"] if state.get("top") in TOPS else TOPS[0]
    explain = bool(state.get("explain"))
    given = state.get("draft")
    draft: dict = given if isinstance(given, dict) and not asked.entry else {}
    ks = ks_for(top)
    scale = collection_scale(collection)
    found: dict[str, Any]
    if blank:  # the columns' knobs, no results
        found = {"scored": False, "configs": [_unsearched(c, ks) for c in configs]}
    else:
        found = question_columns(
            tenant=tenant, collection=collection, asked=asked, configs=configs, ks=ks, explain=explain
        )
    shown = [at_k(NDCG, top), at_k("recall", top), "mrr", at_k(JUDGED_SHARE, top)]
    for column in found["configs"]:
        column["params_json"] = (
            json.dumps(column["config"]["params"]) if column["config"].get("params") else ""
        )
        column["shown_metrics"] = [
            {"name": name, "value": (column["metrics"] or {}).get(name),
             "pending": (column["metrics_with_pending"] or {}).get(name)}
            for name in shown
        ]  # fmt: skip
        for result in column["results"]:
            result["marked"] = highlighted(result["snippet"], asked.question)
            result["draft_grade"] = draft.get(result["document_id"])
            result["grade_label"] = _grade_label(result["grade"], scale)
            result["elsewhere"] = sorted(result["ranks_elsewhere"].items())
    return {
        "asked": asked,
        "found": found,
        "columns": found["configs"],
        "raw": [c.request() for c in configs],
        "top": top,
        "explain": explain,
        "ks": ks,
        "draft": draft,
        "grades": [(grade, meaning, meaning.split(":")[0]) for grade, meaning in scale.meaning.items()],
        "scale": scale,
    }


def _unsearched(config, ks) -> dict:
    return {"label": config.label, "config": config.as_dict(), "depth": max(ks), "took_ms": 0.0, "error": "",
            "results": [], "metrics": None, "metrics_with_pending": None, "warnings": []}  # fmt: skip


def knob_choices(tenant: Tenant, collection: Collection) -> dict[str, Any]:
    return {
        "search_types": SEARCH_TYPES,
        "fusions": FUSIONS,
        "variants": VARIANTS,
        "rerankers": available_rerankers(),
        "presets": list(ConfigPreset.objects.filter(tenant=tenant).values_list("name", flat=True)[:100]),
        "targets": target_names(tenant=tenant, kinds=RETRIEVAL_KINDS),
    }


def _float(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if 0 <= number <= 1 else None


def _json_object(text: str, field: str) -> dict:
    try:
        found = json.loads(text[:10_000])
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise EvalsiteError(
            "validation-error", f"{field}: a configuration as JSON.", details={"field": field}
        )
    return found


def _run_named(tenant: Tenant, collection: Collection, run_id: str, offered: dict) -> EvaluationRun | None:
    """A retrieval run of the collection by id (any age, not only the ones the choices offer); None for none."""
    if not run_id:
        return None
    run = offered.get(run_id) or selectors.run_get(tenant=tenant, run_id=run_id)  # NotFound: the 404 page
    if run.kind != RunKind.RETRIEVAL or run.collection_ids != [collection.slug]:
        raise NotFound("Retrieval run of " + collection.slug, run_id)
    return run


def list_context(params: QueryDict, tenant: Tenant, collection: Collection) -> dict[str, Any]:
    """The questions list: scored by `run` (a stored retrieval run's id), or live by `preset` or `c` (a column's
    configuration as JSON), else by the default FullText configuration live; `metric`, `tag`, `diagnosis`,
    `judged_below`, `since` (a run)."""
    runs = list(
        selectors.runs_list(tenant=tenant, collection=collection, kind=RunKind.RETRIEVAL)[:RUNS_OFFERED]
    )
    by_id = {str(r.pk): r for r in runs}
    run = _run_named(tenant, collection, params.get("run", ""), by_id)
    preset = params.get("preset", "")[:100]
    error = ""
    ks = list(run.ks) if run else list(DEFAULT_KS)
    column: dict = {"preset": preset} if preset and not run else {"label": "FullText"}
    custom = False
    try:
        given = params.get("c") or ""
        custom = bool(given) and not run and not preset
        if custom:  # a workbench column's configuration, as its page sends it
            column = _json_object(given, "c")
        if run is not None:
            rows = listing.scored_by_run(run)
            column = dict(run.config)
        else:
            (config,) = raw_configs(tenant, [column])
            rows = listing.scored_live(collection, config, ks)
            column = config.request()
    except EvalsiteError as exc:
        rows, error = [], exc.message
    metric = params.get("metric") or at_k(NDCG, max(ks))
    names = list(rows[0].metrics) if rows else [metric]
    metric = metric if metric in names else (names[0] if names else metric)
    since = _run_named(tenant, collection, params.get("since", ""), by_id)
    if since is not None:
        rows = listing.with_changes(rows, listing.scored_by_run(since), metric)
    judged_metric = at_k(JUDGED_SHARE, max(ks))
    filters = listing.Filters(
        tag=params.get("tag", "")[:100],
        diagnosis=params.get("diagnosis", "") if params.get("diagnosis") in RETRIEVAL_DIAGNOSES else "",
        judged_metric=judged_metric,
        judged_below=_float(params.get("judged_below", "")),
    )
    kept = listing.worst_first(rows, metric, filters)
    tags = sorted({t for row in rows for t in row.tags})
    return {
        "collection": collection, "tenant": tenant, "runs": runs, "run": run, "preset": preset, "since": since,
        "presets": knob_choices(tenant, collection)["presets"], "metric": metric, "metrics": names, "rows": kept,
        "shown": [{"row": row, "value": row.value(metric), "judged": row.value(judged_metric)} for row in kept],
        "column_json": json.dumps(column, separators=(",", ":")),
        "custom": custom,
        "list_query": params.urlencode(),
        "total": len(rows), "filters": filters, "tags": tags, "diagnoses": RETRIEVAL_DIAGNOSES, "error": error,
        "judged_metric": judged_metric, "column": column,
        "means": (sum(r.value(metric) or 0.0 for r in kept) / len(kept)) if kept else None,
    }  # fmt: skip


def neighbours(
    params: QueryDict, tenant: Tenant, collection: Collection, entry_id: str
) -> dict[str, Any] | None:
    """Where a question stands in the list it was opened from (`list`: that list's query): its place, and the
    entry ids before and after it, to go on question by question; None when it is not in that list."""
    rows = list_context(QueryDict(params.get("list", "")[:4000]), tenant, collection)["rows"]
    ids = [row.entry_id for row in rows]
    if entry_id not in ids:
        return None
    at = ids.index(entry_id)
    here = params.copy()

    def link(other: str) -> str:
        here["entry"] = other
        return "?" + here.urlencode()

    before, after = (ids[at - 1] if at > 0 else None), (ids[at + 1] if at + 1 < len(ids) else None)
    return {
        "place": at + 1,
        "count": len(ids),
        "previous": link(before) if before else None,
        "previous_id": before,
        "next": link(after) if after else None,
        "next_id": after,
    }
