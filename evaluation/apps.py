from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """Search engine, metrics, judging, runs and the dashboard (built on goldenset; see DESIGN.md)."""

    name = "evaluation"
    verbose_name = "Evaluation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from evaluation.indexes import build_schedule, index_build_job
        from evaluation.services.answers import evaluate_answers_job
        from evaluation.services.retrieval import evaluate_job
        from goldenset.jobs import register_job_handler
        from goldenset.models import JobKind
        from goldenset.services.content import content_changed_hooks

        register_job_handler(JobKind.EVALUATE, evaluate_job)
        register_job_handler(JobKind.EVALUATE_ANSWERS, evaluate_answers_job)
        register_job_handler(JobKind.INDEX_BUILD, index_build_job)
        content_changed_hooks.append(build_schedule)
