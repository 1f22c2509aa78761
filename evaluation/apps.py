from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """Search engine, metrics, judging, runs and the dashboard (built on goldenset; see DESIGN.md)."""

    name = "evaluation"
    verbose_name = "Evaluation"
    default_auto_field = "django.db.models.BigAutoField"
