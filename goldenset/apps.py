from django.apps import AppConfig


class GoldensetConfig(AppConfig):
    name = "goldenset"
    verbose_name = "Golden sets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from goldenset.jobs import register_job_handler
        from goldenset.models import JobKind
        from goldenset.services import documents_ingest_job
        from goldenset.services.generate import golden_generate_job

        register_job_handler(JobKind.INGEST, documents_ingest_job)
        register_job_handler(JobKind.GENERATE, golden_generate_job)
