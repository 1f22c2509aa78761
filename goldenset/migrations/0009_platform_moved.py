# Tenancy, the audit trail, jobs and workers, and the chat model call cache moved to the platform apps of the
# project package (evalsite.tenancy, evalsite.audit, evalsite.jobs, evalsite.llm). Their tables keep their
# names and rows; this migration changes only what Django knows of them, and moves their content types (with
# the permissions and admin history that hang on them) to their new apps.

import django.db.models.deletion
from django.db import migrations, models

MOVED = {
    "cluster": "tenancy",
    "tenant": "tenancy",
    "apikey": "tenancy",
    "membership": "tenancy",
    "auditevent": "audit",
    "job": "jobs",
    "worker": "jobs",
    "llmcall": "llm",
}


def move_content_types(apps, schema_editor, forward=True):
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model, app in MOVED.items():
        old, new = ("goldenset", app) if forward else (app, "goldenset")
        if content_type.objects.using(db).filter(app_label=new, model=model).exists():
            continue  # already there (a database made after the move): the old one stays as it is
        content_type.objects.using(db).filter(app_label=old, model=model).update(app_label=new)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, forward=False)


class Migration(migrations.Migration):

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("goldenset", "0008_staged_uploads"),
        ("tenancy", "0001_initial"),
        ("audit", "0001_initial"),
        ("jobs", "0001_initial"),
        ("llm", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="collection",
                    name="tenant",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="collections",
                        to="tenancy.tenant",
                    ),
                ),
                migrations.AlterField(
                    model_name="goldenentry",
                    name="job",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="golden_entries",
                        to="jobs.job",
                    ),
                ),
                migrations.DeleteModel(name="Worker"),
                migrations.DeleteModel(name="Job"),
                migrations.DeleteModel(name="AuditEvent"),
                migrations.DeleteModel(name="ApiKey"),
                migrations.DeleteModel(name="Membership"),
                migrations.DeleteModel(name="LLMCall"),
                migrations.DeleteModel(name="Tenant"),
                migrations.DeleteModel(name="Cluster"),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
