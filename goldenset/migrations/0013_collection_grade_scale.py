"""Each collection declares the scale its relevance grades are given on (goldenset.vocabulary.grade_scales).
An existing collection takes the smallest scale that holds every grade its golden set stores (each entry's
qrels: its expected documents, 1 unless graded, and those judged not relevant, 0): a collection whose expected
documents all have grade 1 is binary, one holding 3s is 0-3. A collection with no judged document, or with a
grade no scale holds (above 4), keeps the default, 0-3. The reverse drops the field."""

from django.db import migrations, models

from goldenset.vocabulary.grade_scales import DEFAULT_SCALE, scale_for_grades

BATCH = 1000


def forwards(apps, schema_editor):
    Collection = apps.get_model("goldenset", "Collection")
    GoldenEntry = apps.get_model("goldenset", "GoldenEntry")
    for collection in Collection.objects.only("pk").iterator(chunk_size=BATCH):
        found: set[int] = set()
        rows = GoldenEntry.objects.filter(collection_id=collection.pk).values_list(
            "expected_document_ids", "grades"
        )
        for expected, grades in rows.iterator(chunk_size=BATCH):
            grades = grades or {}
            found.update(int(grades.get(d, 1)) for d in expected or ())
            found.update(int(g) for g in grades.values() if isinstance(g, (int, float)))
        if not found:
            continue
        try:
            name = scale_for_grades(found).name
        except ValueError:
            name = DEFAULT_SCALE
        Collection.objects.filter(pk=collection.pk).update(grade_scale=name)


class Migration(migrations.Migration):
    dependencies = [("goldenset", "0012_canonical_grades")]

    operations = [
        migrations.AddField(
            model_name="collection",
            name="grade_scale",
            field=models.CharField(
                choices=[("binary", "binary"), ("0-2", "0-2"), ("0-3", "0-3"), ("0-4", "0-4")],
                default="0-3",
                db_default="0-3",
                help_text="The scale relevance grades are given on: binary, 0-2, 0-3 or 0-4.",
                max_length=10,
            ),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
