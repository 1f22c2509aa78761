"""A run keeps who asked for it, as the audit trail names them (blank for the runs made before)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0018_raters_without_case")]

    operations = [
        migrations.AddField(
            model_name="evaluationrun",
            name="created_by",
            field=models.CharField(blank=True, default="", max_length=300),
        ),
    ]
