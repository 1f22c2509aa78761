import uuid

from django.db import migrations, models


def fill_uids(apps, schema_editor):
    Collection = apps.get_model("goldenset", "Collection")
    for collection in Collection.objects.filter(uid__isnull=True).only("pk"):
        Collection.objects.filter(pk=collection.pk).update(uid=uuid.uuid4())


class Migration(migrations.Migration):
    """A unique uid for existing rows takes three steps: add nullable, fill one by one, make unique."""

    dependencies = [("goldenset", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="collection", name="uid", field=models.UUIDField(null=True, editable=False)
        ),
        migrations.RunPython(fill_uids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="collection",
            name="uid",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
    ]
