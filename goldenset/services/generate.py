"""Golden-set generation jobs: create one (the API and the dashboard), run one (a django-q2 worker).

The sampling, the writers and the gate loop are pure (goldenset.generation, goldenset.quality); this module
loads the pages, the questions curators rejected (goldenset.services.rejections: never written again) and picks the
writer, stores what passes, and reports progress.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models.functions import Length
from django.utils import timezone

from evalsite.errors import EvalsiteError
from evalsite.jobs.kinds import Progress
from evalsite.jobs.models import Job, JobStatus
from evalsite.jobs.services import job_cancelled, job_create
from evalsite.llm.cache import DbCallCache
from evalsite.llm.client import ChatClient
from evalsite.llm.model_choice import resolve_model
from evalsite.tenancy.models import Tenant
from goldenset import generation
from goldenset.duplicates import DuplicateIndex
from goldenset.models import Collection, GoldenEntry, GoldenJobKind, Origin, Page
from goldenset.quality import Verdict
from goldenset.selectors import documents_in_force, pages_by_id
from goldenset.services.golden import EntryInput, golden_entries_add
from goldenset.services.rejections import rejected_hashes

MIN_PAGE_CHARS = 120  # shorter pages hold no question worth asking


def generate_backend(model: str | None) -> tuple[str, str]:
    """(backend, model) for a request's `model`: "llm" with the named or default model when an endpoint is
    configured, "template" (the offline writer) when none is or the request asks for it."""
    chosen = resolve_model(model, field="model", offline=generation.TEMPLATE_MODEL)
    return ("template", generation.TEMPLATE_MODEL) if chosen is None else ("llm", chosen)


def generate_job_create(
    *, tenant: Tenant, collection: Collection, count: int, model: str | None, seed: int | None, actor: str
) -> Job:
    limit = settings.EVALSITE_GENERATE_MAX_COUNT
    if not 1 <= count <= limit:
        raise EvalsiteError(
            "validation-error",
            f"count: expected 1 to {limit}, got {count}.",
            details={"field": "count", "limit": limit},
        )
    if seed is not None and not 0 <= seed <= generation.SEED_MAX:
        raise EvalsiteError(
            "validation-error",
            f"seed: expected 0 to {generation.SEED_MAX}, got {seed}.",
            details={"field": "seed"},
        )
    backend, chosen = generate_backend(model)
    seed = generation.new_seed() if seed is None else seed
    return job_create(
        tenant=tenant,
        kind=GoldenJobKind.GENERATE,
        collection=collection,
        input={
            "count": count,
            "model": chosen,
            "backend": backend,
            "seed": seed,
            "actor": actor,
            "continues": _earlier_runs(collection, count=count, model=chosen, seed=seed),
        },
        actor=actor,
    )


def _earlier_runs(collection: Collection, *, count: int, model: str, seed: int) -> list[str]:
    """The failed jobs of this same request (collection, count, model, seed) since its last completed one: a
    new one continues them, asking only for what they did not accept. A request repeated after a completed
    run asks for `count` more (repeated calls grow the set)."""
    same = Job.objects.filter(
        collection=collection,
        kind=GoldenJobKind.GENERATE,
        input__count=count,
        input__model=model,
        input__seed=seed,
    )
    last_completed = same.filter(status=JobStatus.COMPLETED).order_by("-created_at").values("created_at")[:1]
    failed = same.filter(status=JobStatus.FAILED)
    if last_completed:
        failed = failed.filter(created_at__gt=last_completed[0]["created_at"])
    return [str(pk) for pk in failed.order_by("created_at").values_list("pk", flat=True)]


@dataclass
class _Plan:
    """What a Generate job asks for: the sampled pages, those not questioned yet, how many questions this run
    still asks (its request's accepted ones deducted) and the pages it may read for them."""

    seed: int
    count: int
    model: str
    sampled: list
    remaining: list
    accepted_before: int
    asked: int
    budget: int


def _plan(job: Job, collection: Collection) -> _Plan:
    spec = job.input
    seed, count = int(spec["seed"]), int(spec["count"])
    sampled = generation.sample_pages(_candidate_pages(collection), seed)
    done = set(
        GoldenEntry.objects.filter(collection=collection, source_page__isnull=False).values_list(
            "source_page_id", flat=True
        )
    )
    # This request's questions already stored, by this job's earlier attempts (a worker died) or by earlier
    # jobs of the same request (goldenset.services.generate._earlier_runs): only the rest is asked for.
    accepted_before = GoldenEntry.objects.filter(job_id__in=[job.pk, *spec.get("continues", ())]).count()
    asked = max(0, count - accepted_before)
    return _Plan(
        seed=seed,
        count=count,
        model=str(spec["model"]),
        sampled=sampled,
        remaining=[key for key in sampled if key not in done],
        accepted_before=accepted_before,
        asked=asked,
        budget=asked * settings.EVALSITE_GENERATE_PAGES_PER_QUESTION,
    )


def golden_generate_job(job: Job, progress: Progress) -> dict[str, Any]:
    spec = job.input
    collection = job.collection
    if collection is None:
        raise EvalsiteError("collection-gone", "The job's collection was deleted.", status=404)
    plan = _plan(job, collection)
    pages = _load_pages(plan.remaining[: plan.budget])
    duplicates = DuplicateIndex(collection.golden_entries.values_list("question", flat=True))
    cache = DbCallCache()
    client = ChatClient.from_settings(cache=cache) if spec["backend"] == "llm" else None
    writer: generation.QuestionWriter = (
        generation.ChatQuestionWriter(client, plan.model)
        if client is not None
        else generation.TemplateQuestionWriter()
    )
    total = len(pages)
    progress(0, total)
    done_pages = 0
    checked_at = time.monotonic()

    def on_page(page: generation.PageText, draft: generation.Draft, verdict: Verdict) -> str | None:
        reason = verdict.reason
        cache.flush()  # the answers read so far, written from this thread
        if verdict.accepted:
            reason = _store(collection, job, page, draft, actor=str(spec.get("actor") or "job"))
        nonlocal done_pages
        done_pages += 1
        progress(done_pages, total)
        return reason

    def should_stop() -> bool:
        nonlocal checked_at
        if time.monotonic() - checked_at < 0.5:
            return False
        checked_at = time.monotonic()
        return job_cancelled(job.pk)

    try:
        outcome = generation.generate(
            pages, writer, count=plan.asked, seed=plan.seed, duplicates=duplicates, on_page=on_page,
            should_stop=should_stop, rejected=rejected_hashes(collection=collection),
        )  # fmt: skip
    finally:
        cache.flush()
        if client is not None:
            client.close()
    progress(outcome.pages_sampled, outcome.pages_sampled)  # done: the pages checked, not the budget
    return _report(plan, spec["backend"], outcome)


def _report(plan: _Plan, backend: str, outcome) -> dict[str, Any]:
    """The job's result: what was asked, sampled, kept and discarded (per reason), what it cost, and why it
    stopped short when it did."""
    warnings = list(outcome.warnings)
    if plan.accepted_before:
        warnings.append(
            f"{plan.accepted_before} of the {plan.count} questions were accepted before (by an earlier attempt of "
            f"this job, or failed runs of the same request: collection, count, model and seed); this run asked "
            f"for the other {plan.asked}."
        )
    if outcome.accepted < plan.asked and outcome.stopped is None:
        if len(plan.remaining) > plan.budget:
            warnings.append(
                f"The page budget ({plan.budget} = count x {settings.EVALSITE_GENERATE_PAGES_PER_QUESTION}, "
                "EVALSITE_GENERATE_PAGES_PER_QUESTION) was used up; call again to try more pages."
            )
        else:
            warnings.append(
                f"The collection has no more eligible pages: {len(plan.sampled)} documents with a page of at "
                f"least {MIN_PAGE_CHARS} characters, {len(plan.sampled) - len(plan.remaining)} of them already "
                "questioned."
            )
    return {
        "seed": plan.seed,
        "model": plan.model,
        "backend": backend,
        "requested": plan.count,
        "accepted_before": plan.accepted_before,
        "asked": plan.asked,
        "pages_available": len(plan.sampled),
        "pages_already_done": len(plan.sampled) - len(plan.remaining),
        "pages_sampled": outcome.pages_sampled,
        "accepted": outcome.accepted,
        "discarded": outcome.pages_sampled - outcome.accepted - outcome.no_clear_sentence,
        "discards": outcome.discards,
        # Pages the offline writer found no clear sentence on: not discards (no draft was written).
        "no_clear_sentence": outcome.no_clear_sentence,
        "warnings": warnings,
        "stopped": outcome.stopped,
        "calls": outcome.calls,
        "cache_hits": outcome.cache_hits,
        "prompt_tokens": outcome.prompt_tokens,
        "completion_tokens": outcome.completion_tokens,
        "call_latency_ms": round(outcome.call_latency_ms, 1),
        "elapsed_s": round(outcome.elapsed_s, 3),
    }


def _candidate_pages(collection: Collection) -> list[tuple[int, str, int]]:
    """(page pk, document id, page number) of the pages worth a question: long enough, in documents default
    search returns now (goldenset.selectors.documents_in_force), so no expected document is one search hides."""
    in_force = documents_in_force(collection=collection, at=timezone.now())
    pages = (
        Page.objects.filter(document_id__in=in_force)
        .annotate(chars=Length("text"))
        .filter(chars__gte=MIN_PAGE_CHARS)
        .values_list("pk", "document__external_id", "number")
    )
    return list(pages)


def _load_pages(keys: list[int]) -> list[generation.PageText]:
    loaded = pages_by_id(keys)
    return [loaded[key] for key in keys if key in loaded]  # a page deleted meanwhile drops out


def _store(
    collection: Collection, job: Job, page: generation.PageText, draft: generation.Draft, *, actor: str
) -> str | None:
    """Commit one accepted entry now (a killed worker keeps what it accepted); None when stored."""
    try:
        golden_entries_add(
            collection=collection,
            entries=[
                EntryInput(
                    question=draft.question,
                    expected_document_ids=[page.document_id],
                    reference_answer=draft.answer,
                )
            ],
            actor=actor,
            origin=Origin.GENERATED,
            source_page_id=page.key,
            job=job,
        )
    except EvalsiteError as exc:
        if exc.code == "duplicate-question":  # an identical question was added meanwhile
            return "near_duplicate"
        if exc.code == "unknown-documents":  # the document was deleted meanwhile
            return "document_deleted"
        raise
    return None
