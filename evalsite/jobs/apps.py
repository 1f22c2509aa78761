from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "evalsite.jobs"
    label = "jobs"
    verbose_name = "Jobs and workers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Late: AppConfig.ready runs once the models are loaded, which these modules import.
        from django_q.signals import post_spawn

        from evalsite.jobs.worker import on_worker_spawn

        # Each django-q2 worker process beats, recovers lost jobs and stops cleanly (evalsite.jobs.worker).
        post_spawn.connect(on_worker_spawn, dispatch_uid="evalsite-worker-spawn")
