from django.apps import AppConfig


class GoldensetConfig(AppConfig):
    name = "goldenset"
    verbose_name = "Golden sets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_q.signals import post_spawn

        from goldenset.importers import ingest_job
        from goldenset.jobs import register_job_handler
        from goldenset.jobs.worker import on_worker_spawn
        from goldenset.models import JobKind
        from goldenset.services.generate import golden_generate_job

        register_job_handler(JobKind.INGEST, ingest_job)
        register_job_handler(JobKind.GENERATE, golden_generate_job)
        # Each django-q2 worker process beats, recovers lost jobs and stops cleanly (goldenset.jobs.worker).
        post_spawn.connect(on_worker_spawn, dispatch_uid="evalsite-worker-spawn")
