"""Jobs and workers: a slow call answers 202 with a job id, a django-q2 worker runs it, and no job stays Queued
or Running without a live owner. The kinds of job and their handlers are registered by the apps that own them
(evalsite.jobs.kinds.register_job_handler); this package names none."""
