from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """Search engine, metrics, judging, runs and the dashboard (built on goldenset; docs/architecture.md)."""

    name = "evaluation"
    verbose_name = "Evaluation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Late: AppConfig.ready runs once the models are loaded, which these modules import.
        from evalsite.audit.models import register_audit_objects
        from evalsite.jobs.kinds import register_job_handler
        from evaluation.answers.evaluate import evaluate_answers_job
        from evaluation.models import EvaluationAuditObject, EvaluationJobKind
        from evaluation.retrieval.evaluate import evaluate_job
        from evaluation.retrieval.indexes import build_schedule, index_build_job
        from goldenset.services.content import content_changed_hooks

        register_job_handler(EvaluationJobKind.EVALUATE, evaluate_job)
        register_job_handler(EvaluationJobKind.EVALUATE_ANSWERS, evaluate_answers_job)
        register_job_handler(EvaluationJobKind.INDEX_BUILD, index_build_job)
        register_audit_objects(EvaluationAuditObject)
        content_changed_hooks.append(build_schedule)
