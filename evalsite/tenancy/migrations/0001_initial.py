# Clusters, tenants, API keys and memberships, moved from goldenset (goldenset 0009): the tables and their rows stay as they
# were, under their old names, so this migration changes only what Django knows (no SQL).

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('goldenset', '0008_staged_uploads'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Cluster',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('slug', models.CharField(help_text='The cluster_id clients send.', max_length=100, unique=True)),
                        ('name', models.CharField(blank=True, max_length=200)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'goldenset_cluster',
                        'ordering': ['slug'],
                    },
                ),
                migrations.CreateModel(
                    name='Tenant',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('slug', models.CharField(help_text='The tenant_id clients send.', max_length=100)),
                        ('name', models.CharField(blank=True, max_length=200)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('cluster', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tenants', to='tenancy.cluster')),
                    ],
                    options={
                        'db_table': 'goldenset_tenant',
                        'ordering': ['cluster__slug', 'slug'],
                    },
                ),
                migrations.CreateModel(
                    name='Membership',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='tenancy.tenant')),
                    ],
                    options={
                        'db_table': 'goldenset_membership',
                    },
                ),
                migrations.CreateModel(
                    name='ApiKey',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(blank=True, max_length=200)),
                        ('prefix', models.CharField(editable=False, help_text='Shown to identify the key.', max_length=12)),
                        ('key_hash', models.CharField(editable=False, max_length=64, unique=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('last_used_at', models.DateTimeField(blank=True, editable=False, null=True)),
                        ('revoked_at', models.DateTimeField(blank=True, null=True)),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='tenancy.tenant')),
                    ],
                    options={
                        'verbose_name': 'API key',
                        'db_table': 'goldenset_apikey',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.AddConstraint(
                    model_name='tenant',
                    constraint=models.UniqueConstraint(fields=('cluster', 'slug'), name='tenant_unique_per_cluster'),
                ),
                migrations.AddConstraint(
                    model_name='membership',
                    constraint=models.UniqueConstraint(fields=('user', 'tenant'), name='membership_unique'),
                ),
            ],
        ),
    ]
