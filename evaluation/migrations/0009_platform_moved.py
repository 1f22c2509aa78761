# The tenant and job foreign keys follow their models to the platform apps (goldenset 0009). State only:
# the constraints already point at the same tables.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('evaluation', '0008_published_indexes'),
        ('jobs', '0001_initial'),
        ('tenancy', '0001_initial'),
    ]

    # Before goldenset forgets its old models, so that no state refers to them; goldenset never names evaluation.
    run_before = [('goldenset', '0009_platform_moved')]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='evaluationrun',
                    name='job',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='evaluation_runs', to='jobs.job'),
                ),
                migrations.AlterField(
                    model_name='evaluationrun',
                    name='tenant',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='evaluation_runs', to='tenancy.tenant'),
                ),
                migrations.AlterField(
                    model_name='humanlabel',
                    name='tenant',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='human_labels', to='tenancy.tenant'),
                ),
                migrations.AlterField(
                    model_name='target',
                    name='tenant',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='targets', to='tenancy.tenant'),
                ),
            ],
        ),
    ]
