from collections import defaultdict

from django.db import migrations, models
from django.utils import timezone

from goldenset.drift import document_hash, page_hash

CHUNK = 500


def _by_pk(queryset, size=CHUNK):
    """The rows of queryset in primary-key order, `size` at a time (never the whole table in memory)."""
    last = None
    while True:
        chunk = list((queryset if last is None else queryset.filter(pk__gt=last)).order_by("pk")[:size])
        if not chunk:
            return
        yield chunk
        last = chunk[-1].pk


def fill_page_hashes(apps, schema_editor):
    # The app's own page_hash: the stored hash must be what Page.prepare() computes for the same text.
    Page = apps.get_model("goldenset", "Page")
    for chunk in _by_pk(Page.objects.only("pk", "text"), size=1000):
        for page in chunk:
            page.content_hash = page_hash(page.text)
        Page.objects.bulk_update(chunk, ["content_hash"])


def _document_hashes(Page, collection_id, external_ids):
    pages = defaultdict(list)
    for start in range(0, len(external_ids), CHUNK):
        rows = (
            Page.objects.filter(
                document__collection_id=collection_id,
                document__external_id__in=external_ids[start : start + CHUNK],
            )
            .order_by("document_id", "number")
            .values_list("document__external_id", "content_hash")
        )
        for external_id, content_hash in rows:
            pages[external_id].append(content_hash)
    Document = Page._meta.get_field("document").related_model
    present = set()
    for start in range(0, len(external_ids), CHUNK):
        present.update(
            Document.objects.filter(
                collection_id=collection_id, external_id__in=external_ids[start : start + CHUNK]
            ).values_list("external_id", flat=True)
        )
    return {d: document_hash(pages.get(d, ())) for d in present}


def fill_entry_hashes(apps, schema_editor):
    """Every entry remembers its expected documents as they are now: nothing reads as drifted after the upgrade."""
    Page = apps.get_model("goldenset", "Page")
    GoldenEntry = apps.get_model("goldenset", "GoldenEntry")
    now = timezone.now()
    entries = GoldenEntry.objects.only("pk", "collection_id", "expected_document_ids")
    for chunk in _by_pk(entries):
        wanted = defaultdict(set)
        for entry in chunk:
            wanted[entry.collection_id].update(entry.expected_document_ids or ())
        hashes = {c: _document_hashes(Page, c, sorted(ids)) for c, ids in wanted.items()}
        for entry in chunk:
            known = hashes[entry.collection_id]
            entry.reviewed_hashes = {d: known[d] for d in entry.expected_document_ids or () if d in known}
            entry.reviewed_at = now
        GoldenEntry.objects.bulk_update(chunk, ["reviewed_hashes", "reviewed_at"])


class Migration(migrations.Migration):
    """Drift: a content hash per page, and what each golden entry's expected documents looked like when a person
    last looked at it, filled from the current content (goldenset.drift)."""

    dependencies = [("goldenset", "0013_collection_grade_scale")]

    operations = [
        migrations.AddField(
            model_name="page",
            name="content_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name="goldenentry",
            name="reviewed_hashes",
            field=models.JSONField(blank=True, default=dict, editable=False),
        ),
        migrations.AddField(
            model_name="goldenentry",
            name="reviewed_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(fill_page_hashes, migrations.RunPython.noop),
        migrations.RunPython(fill_entry_hashes, migrations.RunPython.noop),
    ]
