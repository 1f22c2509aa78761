"""Rater names compare without case (evaluation.judgments.grades): a person's judgments stored under "user:Ann"
and "user:ann" are one rater's. Every person's rater name (all but the machine assessors', whose names carry a
model's) is casefolded; where one rater then holds two judgments of a pair, the one written last is kept, as a
rater's new judgment of a pair replaces the old one. A pool's assignments follow."""

from django.db import migrations

MACHINE_PREFIXES = ("llm-relevance:", "lexical-relevance:", "clicks:")  # as in grades.py when written


def casefold_raters(apps, schema_editor):
    alias = schema_editor.connection.alias
    judgment = apps.get_model("evaluation", "RelevanceJudgment").objects.using(alias)
    assignment = apps.get_model("evaluation", "PoolAssignment").objects.using(alias)
    kept: dict[tuple, tuple] = {}
    for pk, entry, document, rater, updated in judgment.order_by("updated_at", "pk").values_list(
        "pk", "entry_id", "document_id", "rater", "updated_at"
    ):
        if rater.startswith(MACHINE_PREFIXES):
            continue
        key = (entry, document, rater.casefold())
        earlier = kept.get(key)
        if earlier is not None:  # the earlier write of this rater's pair gives way to this later one
            judgment.filter(pk=earlier[0]).delete()
        kept[key] = (pk, rater)
    for (_, _, folded), (pk, rater) in kept.items():
        if rater != folded:
            judgment.filter(pk=pk).update(rater=folded)
    seen: set[tuple] = set()
    for pk, item, rater in assignment.order_by("pk").values_list("pk", "item_id", "rater"):
        if rater.startswith(MACHINE_PREFIXES):
            continue
        key = (item, rater.casefold())
        if key in seen:
            assignment.filter(pk=pk).delete()
            continue
        seen.add(key)
        if rater != key[1]:
            assignment.filter(pk=pk).update(rater=key[1])


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0017_signed_index_manifests")]

    operations = [migrations.RunPython(casefold_raters, migrations.RunPython.noop)]
