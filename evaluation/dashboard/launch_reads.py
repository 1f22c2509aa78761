"""The launchers' reads: which collections can be evaluated (for retrieval, or for answers), and what an Evaluate
or EvaluateAnswers job produced or why it failed (evaluation.reports.batch_jobs creates the jobs, for the
launchers as for the API)."""

from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce

from evalsite.errors import EvalsiteError
from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from evaluation.configs import parse_config
from evaluation.models import ConfigPreset
from goldenset.models import Collection, GoldenEntry


def retrieval_presets(*, tenant: Tenant, rerankers: list[str]) -> list[str]:
    """The names of the tenant's presets that are retrieval configurations (an answer study's are not), by name."""
    names = []
    for name, config in ConfigPreset.objects.filter(tenant=tenant).values_list("name", "config"):
        try:
            parse_config({**config, "label": name}, 0, rerankers, prefix="")
        except (EvalsiteError, TypeError):  # TypeError: a config that is not an object
            continue
        names.append(name)
    return names


def launch_collections(*, tenant: Tenant) -> list[tuple[str, int]]:
    """(slug, questions an evaluation would ask) per collection: entries with expected documents."""
    evaluable = (
        GoldenEntry.objects.filter(collection=OuterRef("pk"))
        .exclude(expected_document_ids=[])
        .order_by()
        .values("collection")
        .annotate(n=Count("*"))
        .values("n")[:1]
    )
    return list(
        Collection.objects.filter(tenant=tenant)
        .annotate(questions=Coalesce(Subquery(evaluable, output_field=IntegerField()), 0))
        .order_by("slug")
        .values_list("slug", "questions")
    )


def answer_launch_collections(*, tenant: Tenant) -> list[tuple[str, int, int]]:
    """(slug, golden questions, of which unanswerable) per collection: an answer evaluation asks every golden
    question, answerable or not."""
    entries = GoldenEntry.objects.filter(collection=OuterRef("pk")).order_by().values("collection")
    total = entries.annotate(n=Count("*")).values("n")[:1]
    unanswerable = entries.filter(answerable=False).annotate(n=Count("*")).values("n")[:1]
    return list(
        Collection.objects.filter(tenant=tenant)
        .annotate(
            questions=Coalesce(Subquery(total, output_field=IntegerField()), 0),
            unanswerable=Coalesce(Subquery(unanswerable, output_field=IntegerField()), 0),
        )
        .order_by("slug")
        .values_list("slug", "questions", "unanswerable")
    )


def job_result_batch(job: Job) -> str | None:
    """The batch an Evaluate job produced, once it has."""
    if isinstance(job.result, dict) and isinstance(job.result.get("batch_id"), str):
        return job.result["batch_id"]
    return None


def job_result_runs(job: Job) -> list[str]:
    """The ids of the runs an Evaluate job produced (none until it has)."""
    runs = job.result.get("runs") if isinstance(job.result, dict) else None
    if not isinstance(runs, list):
        return []
    return [str(run["run_id"]) for run in runs if isinstance(run, dict) and run.get("run_id")]


def job_error_message(job: Job) -> str:
    if isinstance(job.error, dict):
        return str(job.error.get("message") or job.error.get("code") or "The job failed.")
    return "The job failed." if job.error is None else str(job.error)
