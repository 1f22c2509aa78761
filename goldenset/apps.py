from django.apps import AppConfig


class GoldensetConfig(AppConfig):
    """Collections, documents and pages, golden sets and their generation, import and export, the admin."""

    name = "goldenset"
    verbose_name = "Golden sets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Late: AppConfig.ready runs once the models are loaded, which these modules import.
        from evalsite.audit.models import register_audit_objects
        from evalsite.jobs.kinds import register_job_handler
        from goldenset.importers import ingest_job
        from goldenset.models import GoldenAuditObject, GoldenJobKind
        from goldenset.services.generate import golden_generate_job

        register_job_handler(GoldenJobKind.INGEST, ingest_job)
        register_job_handler(GoldenJobKind.GENERATE, golden_generate_job, resumes=True)
        register_audit_objects(GoldenAuditObject)
