from django.db import migrations, models

from goldenset.text import normalize_question, question_hash

CHUNK = 500


def _fill(apps, field, compute):
    """Set field to compute(question) on every golden entry, CHUNK rows at a time in primary-key order."""
    GoldenEntry = apps.get_model("goldenset", "GoldenEntry")
    rows = GoldenEntry.objects.order_by("pk").only("pk", "question")
    last = None
    while True:
        chunk = list((rows if last is None else rows.filter(pk__gt=last))[:CHUNK])
        if not chunk:
            return
        for entry in chunk:
            setattr(entry, field, compute(entry.question))
        GoldenEntry.objects.bulk_update(chunk, [field])
        last = chunk[-1].pk


def fill_hashes(apps, schema_editor):
    # The app's own question_hash: the stored hash must be what prepare() computes for the same question.
    _fill(apps, "question_hash", question_hash)


def fill_norms(apps, schema_editor):
    # Backwards: the folded text the old constraint is on (questions beyond ~2,700 bytes fail it on PostgreSQL).
    _fill(apps, "question_norm", normalize_question)


class Migration(migrations.Migration):
    """Duplicate questions are found on a sha256 of the folded question, not on the folded text itself: a unique
    btree index on text fails on PostgreSQL for questions of more than about 2,700 bytes.

    Add the hash nullable, fill it, make it required; then the old constraint and column go and the constraint
    of the same name comes back on the hash. Backwards, the folded text is computed again.
    """

    dependencies = [("goldenset", "0003_llm_call")]

    operations = [
        migrations.AddField(
            model_name="goldenentry",
            name="question_hash",
            field=models.CharField(max_length=64, null=True, editable=False),
        ),
        migrations.RunPython(fill_hashes, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="goldenentry",
            name="question_hash",
            field=models.CharField(max_length=64, editable=False),
        ),
        migrations.RemoveConstraint(model_name="goldenentry", name="golden_question_unique"),
        # Nullable first, so that backwards the column comes back empty, is filled, and only then is required.
        migrations.AlterField(
            model_name="goldenentry",
            name="question_norm",
            field=models.TextField(null=True, db_index=True, editable=False),
        ),
        migrations.RunPython(migrations.RunPython.noop, fill_norms),
        migrations.RemoveField(model_name="goldenentry", name="question_norm"),
        migrations.AddConstraint(
            model_name="goldenentry",
            constraint=models.UniqueConstraint(fields=("collection", "question_hash"), name="golden_question_unique"),
        ),
    ]
