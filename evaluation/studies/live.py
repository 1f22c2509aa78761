"""What a running study writes, fenced against a cancel: its trials so far (at most every WRITE_EVERY seconds, and at
the end), and once done its winner and confirmation.

A cancel is seen before each trial is kept: a trial that ends once the job is Cancelled is not kept, and Optuna's loop
stops (search.run_study asks `stop()` after each trial; the trials run one at a time, never in parallel). Each write
is conditional on the study's job being Running, in the attempt that runs it, checked under a lock on the job's row
in the write's own transaction: the cancel (jobs.services.job_cancel, an update of that row) is either recorded
before it, and then nothing is written, or waits for it. So the trials a study holds once its cancel is recorded are
the trials it keeps: the trials that ended since the last write, before the cancel, are not written either (the
study stands as its page showed it when it was cancelled). A study run in place (manage.py study) has no job:
nothing cancels it, its writes are plain."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from evalsite.jobs.models import Job, JobStatus
from evaluation.models import Study
from evaluation.studies.search import TrialResult

WRITE_EVERY = 0.5  # seconds between writes of the trials so far


def write_while_running(study: Study, job: Job | None, **fields: Any) -> bool:
    """Update the study's `fields` only while its job is Running in this attempt (see the module's doc); whether
    they were written."""
    with transaction.atomic():
        if job is not None:
            running = Job.objects.select_for_update().filter(
                pk=job.pk, status=JobStatus.RUNNING, attempts=job.attempts
            )
            if running.values_list("pk", flat=True).first() is None:
                return False
        Study.objects.filter(pk=study.pk).update(**fields)
    return True


@dataclass
class Live:
    """A running study's trials as they end, written at most every WRITE_EVERY seconds while its job runs."""

    study: Study
    job: Job | None
    progress: Callable[[int, int], None]
    cancelled: Callable[[], bool]
    total: int
    trials: list[dict] = field(default_factory=list)
    evaluations: int = 0
    written: float = 0.0
    stopped: bool = False
    every: float = WRITE_EVERY  # seconds between writes

    def on_trial(self, trial: TrialResult) -> None:
        """A trial that ended: kept unless the study was cancelled meanwhile (then the study stops)."""
        if self.stopped or self.cancelled():
            self.stopped = True
            return
        self.trials.append(trial.as_dict())
        if time.monotonic() - self.written >= self.every:
            self.write()

    def write(self) -> bool:
        """The trials so far, unless the job is no longer running (then the study stops); whether written."""
        self.written = time.monotonic()
        if not write_while_running(self.study, self.job, trials=self.trials, evaluations=self.evaluations):
            self.stopped = True
            return False
        self.progress(len(self.trials), self.total)
        return True

    def stop(self) -> bool:
        return self.stopped
