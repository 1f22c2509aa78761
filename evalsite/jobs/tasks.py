"""django-q2 entry points: a primary key in, a service call, nothing else."""

from evalsite.jobs.services import job_run


def run_job(job_id: str) -> None:
    job_run(job_id)
