"""A retrieval evaluation's request as its Evaluate job carries it (evaluation.reports.batch_jobs): its cutoffs
and configurations, checked before the job is queued, written to and read back from the job's input. A job of
several configurations spreads them over the workers, one child job each (evaluation.retrieval.config_jobs)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from evalsite.jobs.kinds import FanOut
from evalsite.jobs.models import Job
from evalsite.tenancy.models import Tenant
from evaluation.configs import RunConfig, parse_configs
from evaluation.models import EvaluationJobKind, EvaluationRun
from evaluation.retrieval.config_jobs import gather_batch, spread_batch
from evaluation.retrieval.evaluate import evaluate_retrieval
from evaluation.retrieval.read_path import available_rerankers
from evaluation.runs import selectors
from evaluation.runs.store import empty_subset
from evaluation.targets.services import resolve_targets
from goldenset.models import Collection


@dataclass(frozen=True)
class RetrievalRequest:
    """A retrieval evaluation's cutoffs and configurations, validated (evaluation.configs)."""

    ks: Sequence[int]
    configs: Sequence[RunConfig]
    job_kind: ClassVar[str] = EvaluationJobKind.EVALUATE

    def check(self, tenant: Tenant, collections: Sequence[Collection]) -> None:
        """An unknown target, or a subset that selects nothing, is the request's 400, not the job's error."""
        resolve_targets(tenant, collections, self.configs)
        for config in self.configs:
            if config.subset and not selectors.count_golden_questions(collections, config.subset):
                raise empty_subset(config.subset, collections)

    def job_input(self) -> dict[str, Any]:
        return {"ks": list(self.ks), "configs": [c.request() for c in self.configs]}

    @classmethod
    def from_job_input(cls, spec: Mapping[str, Any]) -> RetrievalRequest:
        return cls(ks=spec["ks"], configs=parse_configs(spec["configs"], available_rerankers()))

    def evaluate(
        self, *, tenant, collections, job=None, progress=None, actor="", batch_id=None
    ) -> tuple[uuid.UUID, list[EvaluationRun]]:
        return evaluate_retrieval(
            tenant=tenant,
            collections=collections,
            ks=self.ks,
            configs=self.configs,
            job=job,
            progress=progress,
            actor=actor,
            batch_id=batch_id,
        )

    def spread(self, *, tenant, collections, actor="") -> FanOut | None:
        """One child job per configuration, when there are several (else None: the job scores it itself)."""
        if len(self.configs) < 2:
            return None
        return spread_batch(
            tenant=tenant, collections=collections, ks=self.ks, configs=self.configs, actor=actor
        )

    def gather(
        self, *, tenant, collections, job: Job, children: list[Job], actor=""
    ) -> tuple[uuid.UUID, list[EvaluationRun]]:
        """The children's configurations stored as one batch."""
        return gather_batch(
            tenant=tenant, collections=collections, ks=self.ks, configs=self.configs, job=job, children=children,
            actor=actor,
        )  # fmt: skip
