"""One job skeleton for every kind of evaluation batch (retrieval: Evaluate; answers: EvaluateAnswers).

A kind brings its request, a value object (evaluation.retrieval.request.RetrievalRequest,
evaluation.answers.evaluate.AnswerRequest) that says what is asked besides the collections; this module does
the rest alike for both:
- `batch_job_create` checks the request as the request's 400s are checked (an unknown target, a subset that
  selects nothing, a model that cannot run), then queues the job with the collections and the request's input;
- `batch_job_handler` is the handler registered for the kind: it reads the collections and the request back
  from the job, evaluates, and returns the batch's result as POST evaluate gives it (presenter.batch_result).
  A request that can spread its configurations over the workers (`spread`: RetrievalRequest) returns the child
  jobs instead (evalsite.jobs.fan_out), and `batch_job_gather` stores them as the batch and gives the same result.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, Self

from evalsite.jobs.kinds import FanOut
from evalsite.jobs.models import Job
from evalsite.jobs.services import job_create
from evalsite.tenancy.models import Tenant
from evaluation.models import EvaluationRun
from evaluation.reports.presenter import batch_result
from evaluation.runs.selectors import job_collections
from goldenset.models import Collection

Progress = Callable[[int, int], None]


class BatchRequest(Protocol):
    """What an evaluation of one kind is asked, besides its tenant and collections."""

    job_kind: ClassVar[str]

    def check(self, tenant: Tenant, collections: Sequence[Collection]) -> None:
        """Raise the request's error (4xx) for what would only fail once the job ran."""

    def job_input(self) -> dict[str, Any]:
        """The request as the job stores it (JSON), read back by from_job_input."""

    @classmethod
    def from_job_input(cls, spec: Mapping[str, Any]) -> Self: ...

    def evaluate(
        self,
        *,
        tenant: Tenant,
        collections: Sequence[Collection],
        job: Job | None = None,
        progress: Progress | None = None,
        actor: str = "",
    ) -> tuple[uuid.UUID, list[EvaluationRun]]: ...


def batch_job_create(
    *, tenant: Tenant, collections: Sequence[Collection], request: BatchRequest, actor: str
) -> Job:
    """The job of an evaluation (the API's and the dashboard's launchers alike); its launch is audited as `actor`."""
    request.check(tenant, collections)
    return job_create(
        tenant=tenant,
        kind=request.job_kind,
        collection=collections[0],
        # who asked, for the runs it makes (EvaluationRun.created_by)
        input={"collection_pks": [c.pk for c in collections], **request.job_input(), "actor": actor},
        actor=actor,
    )


def batch_job_handler(request_type: type[BatchRequest]) -> Callable[[Job, Progress], dict | FanOut]:
    """The handler of `request_type`'s job kind (evalsite.jobs.kinds.register_job_handler)."""

    def run(job: Job, progress: Progress) -> dict | FanOut:
        request = request_type.from_job_input(job.input)
        spread = getattr(request, "spread", None)
        if spread is not None:
            children = spread(
                tenant=job.tenant, collections=job_collections(job), actor=str(job.input.get("actor") or "")
            )
            if children is not None:
                return children
        batch_id, runs = request.evaluate(
            tenant=job.tenant,
            collections=job_collections(job),
            job=job,
            progress=progress,
            actor=str(job.input.get("actor") or ""),
        )
        return batch_result(batch_id, runs)

    run.__name__ = run.__qualname__ = f"{request_type.__name__}_job"
    return run


def batch_job_gather(request_type: type[BatchRequest]) -> Callable[[Job, list[Job], Progress], dict] | None:
    """The gather of `request_type`'s job kind when it spreads (None when it never does)."""
    if not hasattr(request_type, "gather"):
        return None

    def gather(job: Job, children: list[Job], progress: Progress) -> dict:
        request = request_type.from_job_input(job.input)
        batch_id, runs = request.gather(
            tenant=job.tenant,
            collections=job_collections(job),
            job=job,
            children=children,
            actor=str(job.input.get("actor") or ""),
        )
        return batch_result(batch_id, runs)

    gather.__name__ = gather.__qualname__ = f"{request_type.__name__}_gather"
    return gather
