# The chat model call cache, moved from goldenset (goldenset 0009): the tables and their rows stay as they
# were, under their old names, so this migration changes only what Django knows (no SQL).

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('goldenset', '0008_staged_uploads'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='LLMCall',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('key', models.CharField(help_text='sha256 of model, messages and parameters.', max_length=64, unique=True)),
                        ('model', models.CharField(max_length=300)),
                        ('text', models.TextField()),
                        ('prompt_tokens', models.PositiveIntegerField(blank=True, null=True)),
                        ('completion_tokens', models.PositiveIntegerField(blank=True, null=True)),
                        ('finish_reason', models.CharField(blank=True, default='', max_length=50)),
                        ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                    ],
                    options={
                        'verbose_name': 'LLM call',
                        'db_table': 'goldenset_llmcall',
                    },
                ),
            ],
        ),
    ]
