from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "evalsite.audit"
    label = "audit"
    verbose_name = "Audit trail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from evalsite.audit.models import PlatformAuditObject, register_audit_objects

        register_audit_objects(PlatformAuditObject)
