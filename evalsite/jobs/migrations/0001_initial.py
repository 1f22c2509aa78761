# Jobs and workers, moved from goldenset (goldenset 0009): the tables and their rows stay as they
# were, under their old names, so this migration changes only what Django knows (no SQL).

import django.db.models.deletion
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('goldenset', '0008_staged_uploads'),
        ('tenancy', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Job',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('kind', models.CharField(max_length=30)),
                        ('status', models.CharField(choices=[('Queued', 'Queued'), ('Running', 'Running'), ('Completed', 'Completed'), ('Failed', 'Failed'), ('Cancelled', 'Cancelled')], default='Queued', max_length=20)),
                        ('progress_done', models.PositiveIntegerField(default=0)),
                        ('progress_total', models.PositiveIntegerField(default=0)),
                        ('input', models.JSONField(blank=True, default=dict, help_text='What the task needs to run (a validated request).')),
                        ('result', models.JSONField(blank=True, null=True)),
                        ('error', models.JSONField(blank=True, help_text='{"code", "message", "details"} when Failed.', null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('queued_at', models.DateTimeField(blank=True, null=True)),
                        ('owner', models.CharField(blank=True, default='', help_text='host:pid:start of its worker.', max_length=300)),
                        ('attempts', models.PositiveIntegerField(default=0, help_text='Times a worker took it.')),
                        ('retries', models.PositiveIntegerField(default=0, help_text='Times it was re-queued after a failure.')),
                        ('history', models.JSONField(blank=True, default=list, help_text='[{"at", "event", "message"}]: re-queues and interruptions.')),
                        ('collection', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='goldenset.collection')),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='tenancy.tenant')),
                    ],
                    options={
                        'db_table': 'goldenset_job',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='Worker',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(help_text='host:pid:start, as in Job.owner.', max_length=300, unique=True)),
                        ('host', models.CharField(max_length=255)),
                        ('pid', models.PositiveIntegerField()),
                        ('started_at', models.DateTimeField()),
                        ('beat_at', models.DateTimeField(db_index=True)),
                        ('job', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='jobs.job')),
                    ],
                    options={
                        'db_table': 'goldenset_worker',
                        'ordering': ['-beat_at'],
                    },
                ),
                migrations.AddIndex(
                    model_name='job',
                    index=models.Index(fields=['tenant', 'status'], name='job_tenant_status_idx'),
                ),
                migrations.AddIndex(
                    model_name='job',
                    index=models.Index(fields=['status', 'heartbeat_at'], name='job_status_heartbeat_idx'),
                ),
            ],
        ),
    ]
