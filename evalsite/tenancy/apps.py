from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "evalsite.tenancy"
    label = "tenancy"
    verbose_name = "Tenancy and API keys"
    default_auto_field = "django.db.models.BigAutoField"
