# The audit trail, moved from goldenset (goldenset 0009): the tables and their rows stay as they
# were, under their old names, so this migration changes only what Django knows (no SQL).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('tenancy', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='AuditEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('collection_slug', models.CharField(blank=True, default='', max_length=200)),
                        ('collection_uid', models.UUIDField(blank=True, null=True)),
                        ('object_type', models.CharField(max_length=50)),
                        ('object_id', models.CharField(db_index=True, help_text="The entry or job id, the collection slug, the document id, the API key's prefix.", max_length=300)),
                        ('action', models.CharField(choices=[('create', 'Create'), ('update', 'Update'), ('delete', 'Delete'), ('ingest', 'ingest (documents added or replaced)'), ('revoke', 'Revoke'), ('launch', 'launch (a job queued)')], max_length=20)),
                        ('actor', models.CharField(help_text='"user:<username>" (dashboard, admin), "api-key:<prefix>" (API), "command:<name>" (management commands), "job" (a job that recorded no actor).', max_length=300)),
                        ('changes', models.JSONField(blank=True, default=dict, help_text='Field -> [before, after] on update; a snapshot on create and delete; counts on ingest.')),
                        ('at', models.DateTimeField(auto_now_add=True, db_index=True)),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='audit_events', to='tenancy.tenant')),
                    ],
                    options={
                        'db_table': 'goldenset_auditevent',
                        'ordering': ['-at', '-id'],
                        'indexes': [models.Index(fields=['tenant', 'collection_uid', '-at'], name='audit_collection_idx')],
                    },
                ),
            ],
        ),
    ]
