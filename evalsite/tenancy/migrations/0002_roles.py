"""Roles (evalsite.tenancy.roles): an API key and a dashboard membership each hold one role in their tenant; a key
may name its person and expire.

Keys and memberships made before this migration could do everything in their tenant, so they keep working as
**admin** keys and admin memberships (the migration prints how many); new ones default to viewer, the least role.
Review them on the Keys and Members pages, or re-create a CI job's key with `createapikey --role evaluator`.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

ROLES = [('viewer', 'viewer'), ('rater', 'rater'), ('evaluator', 'evaluator'), ('curator', 'curator'), ('admin', 'admin')]


def say_what_was_kept(apps, schema_editor):
    keys = apps.get_model("tenancy", "ApiKey").objects.using(schema_editor.connection.alias).count()
    members = apps.get_model("tenancy", "Membership").objects.using(schema_editor.connection.alias).count()
    if keys or members:
        print(
            f"\n  roles: {keys} API key(s) and {members} membership(s) made before roles keep working as admin "
            "(they could do everything); review them (docs/teams.md)"
        )


class Migration(migrations.Migration):

    dependencies = [
        ('tenancy', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="expires_at",
            field=models.DateTimeField(blank=True, help_text="Refused from then on; blank: never.", null=True),
        ),
        migrations.AddField(
            model_name="apikey",
            name="user",
            field=models.ForeignKey(
                blank=True,
                help_text="The person behind the key: the audit trail names them, and only a key with a person "
                "judges live. Blank for a machine's key (a CI job).",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="api_keys",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        # Every existing row gets admin (what it could do before); the default then becomes viewer.
        migrations.AddField(
            model_name="apikey",
            name="role",
            field=models.CharField(choices=ROLES, default="admin", max_length=20),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="membership",
            name="role",
            field=models.CharField(choices=ROLES, default="admin", max_length=20),
            preserve_default=False,
        ),
        migrations.RunPython(say_what_was_kept, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="apikey",
            name="role",
            field=models.CharField(
                choices=ROLES,
                default="viewer",
                help_text="What the key may do in its tenant (docs/teams.md). Keys made before roles are admin keys.",
                max_length=20,
            ),
        ),
        migrations.AlterField(
            model_name="membership",
            name="role",
            field=models.CharField(
                choices=ROLES,
                default="viewer",
                help_text="What the user may do in this tenant (docs/teams.md).",
                max_length=20,
            ),
        ),
    ]
