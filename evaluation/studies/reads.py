"""What a study's readers are told beside its trials, the API (services.study_detail) and the dashboard alike: each
varied field's importance (evaluation.studies.importance, cached) and the notes on fields of its space that have
no effect in some of its trials (evaluation.studies.inert)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from django.core.cache import cache

from evalsite.errors import EvalsiteError
from evaluation.models import Study
from evaluation.studies.importance import MIN_TRIALS, Importance, complete, importances
from evaluation.studies.inert import inert_fields
from evaluation.studies.request import metric_depth
from evaluation.studies.space import Dimension, parse_space

IMPORTANCE_CACHE_SECONDS = 3600


def dimensions_of(study: Study) -> tuple[Dimension, ...]:
    """The study's space as stored (checked when it was asked); none when it no longer reads, so a study stored
    by an older version is still shown."""
    try:
        return parse_space(study.request.get("space"))
    except EvalsiteError:
        return ()


def milestone(count: int) -> int:
    """The number of complete trials a running study's importance is computed over: MIN_TRIALS (41), then half as
    many again each time (62, 93, 140, ...) up to `count`, so a poll recomputes it only now and then; below
    MIN_TRIALS it is withheld (which costs nothing)."""
    step = MIN_TRIALS
    while math.ceil(step * 1.5) <= count:
        step = math.ceil(step * 1.5)
    return min(step, count)


def study_importance(study: Study, dimensions: Sequence[Dimension], *, finished: bool) -> Importance:
    """PED-ANOVA over the complete trials, cached: while the study runs, over the first `milestone` of them
    (recomputed only when a milestone is passed; `complete` says how many there are by now); once it is done, over
    all of them."""
    done = sorted(complete(study.trials), key=lambda t: t["number"])
    count = len(done) if finished else milestone(len(done))
    key = f"study-importance:v2:{study.pk}:{count}:{len(dimensions)}"
    found = cache.get(key)
    if found is None:
        found = importances(dimensions, done[:count], seed=int(study.request.get("seed") or 0))
        cache.set(key, found, IMPORTANCE_CACHE_SECONDS)
    return replace(found, complete=max(found.complete, len(done)))  # the complete trials so far


def space_notes(study: Study, dimensions: Sequence[Dimension]) -> list[dict[str, Any]]:
    """The varied fields without effect in some of the trials (or in all: a study asked before such a space was
    refused), each `{field, always, message}`."""
    found = inert_fields(study.request["base"], dimensions, metric_depth(study.metric))
    return [note.as_dict() for note in found]
