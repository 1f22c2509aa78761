from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "evalsite.audit"
    label = "audit"
    verbose_name = "Audit trail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Late: AppConfig.ready runs once the models are loaded, which this module imports.
        from evalsite.audit.models import PlatformAuditObject, register_audit_objects

        register_audit_objects(PlatformAuditObject)
