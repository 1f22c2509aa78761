"""Grades in their one stored form (goldenset.text.canonical_grades): an expected document's default grade, 1,
left out, as TREC imports and pool applications always stored it, where BEIR imports, CSV `p1=1` cells and the
API had stored it explicitly. No grade changes meaning (a missing grade of an expected document is 1); only the
spelling, so that re-importing an unmodified export updates nothing. The reverse is a no-op: either spelling
reads the same."""

from django.db import migrations

from goldenset.text import canonical_grades

BATCH = 1000


def forwards(apps, schema_editor):
    GoldenEntry = apps.get_model("goldenset", "GoldenEntry")
    changed = []
    for entry in GoldenEntry.objects.exclude(grades={}).only("pk", "grades", "expected_document_ids").iterator(
        chunk_size=BATCH
    ):
        canonical = canonical_grades(entry.grades or {}, entry.expected_document_ids or ())
        if canonical != entry.grades:
            entry.grades = canonical
            changed.append(entry)
        if len(changed) >= BATCH:
            GoldenEntry.objects.bulk_update(changed, ["grades"])
            changed = []
    if changed:
        GoldenEntry.objects.bulk_update(changed, ["grades"])


class Migration(migrations.Migration):
    dependencies = [("goldenset", "0011_rejected_questions")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
