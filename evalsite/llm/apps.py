from django.apps import AppConfig


class LlmConfig(AppConfig):
    name = "evalsite.llm"
    label = "llm"
    verbose_name = "Chat model calls"
    default_auto_field = "django.db.models.BigAutoField"
