"""A pool's grades into the golden set over REST (evaluation.judgments.apply does the work)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.api.judgments import ApplicationOut, application_body
from evaluation.api.views import read_strictly
from evaluation.judgments import apply, pools
from evaluation.judgments.grades import RATER_MAX_LENGTH
from evaluation.models import PEOPLE
from goldenset.api.base import TenantAPIView
from goldenset.api.serializers import TenantIn, error_responses


class ApplyIn(TenantIn):
    dry_run = serializers.BooleanField(default=False, help_text="true: show the change, write nothing.")
    source = serializers.CharField(
        default=PEOPLE, max_length=RATER_MAX_LENGTH,
        help_text='"people": the raters\' combined grades (median); or a machine rater (llm-relevance:...).',
    )  # type: ignore[assignment]  # fmt: skip


class RunBeforeAfterOut(serializers.Serializer):
    run_id = serializers.UUIDField()
    label = serializers.CharField()  # type: ignore[assignment]
    created_at = serializers.DateTimeField()
    in_pool = serializers.BooleanField(help_text="One of the runs the pool was made from.")
    questions_before = serializers.IntegerField()
    questions_after = serializers.IntegerField()
    before = serializers.DictField(
        child=serializers.FloatField(), help_text="Its metrics under the golden set now."
    )
    after = serializers.DictField(child=serializers.FloatField(), help_text="With the pool's grades written.")


class SplitOut(serializers.Serializer):
    question_id = serializers.CharField()
    document_id = serializers.CharField()


class ApplyOut(serializers.Serializer):
    pool_id = serializers.UUIDField()
    source = serializers.CharField()  # type: ignore[assignment]
    dry_run = serializers.BooleanField()
    judgments = serializers.IntegerField(help_text="Grades written (or that would be).")
    relevant = serializers.IntegerField(help_text="Of them, grades 1-3: the document becomes expected.")
    not_relevant = serializers.IntegerField(help_text="Of them, grade 0: judged not relevant.")
    splits = SplitOut(many=True, help_text="Items whose raters were 2 grades apart or more: to review.")
    entries = serializers.IntegerField(help_text="Golden entries changed.")
    ungraded = serializers.IntegerField(
        help_text='Items nobody graded yet (or only "cannot judge"): left out.'
    )
    judged_since = serializers.IntegerField(
        help_text="Items the golden set has judged since the pool was made: its judgment kept."
    )
    runs = RunBeforeAfterOut(many=True)
    runs_not_shown = serializers.IntegerField(
        help_text="Older stored runs of the collection not scored here."
    )
    application_id = serializers.UUIDField(
        allow_null=True, help_text="null for a dry run or nothing to write."
    )


class PoolApplyApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)

    @extend_schema(
        request=ApplyIn,
        responses={200: ApplyOut},
        summary="Writes a pool's grades into the golden set (or, with dry_run, shows what that changes).",
        description="Each graded item's grade (the people's median, or one machine rater's) is written to its "
        "golden entry: 1-3 makes the document expected with that grade, 0 records it judged not relevant. "
        f"First, for the pool's runs and the newest other stored runs of the collection ({apply.RUNS_SHOWN} in "
        "all), each metric over the run's stored rankings before and after. All or nothing, audited; a "
        "document judged in the golden set since the pool was made keeps that judgment. Taken back with "
        ".../applications/{application_id}/revert.",
    )
    def post(self, request, pool_id: str):
        data = read_strictly(ApplyIn, request.data)
        pool = pools.pool_get(tenant=self.tenant(data), pool_id=pool_id)
        summary = apply.pool_apply(
            pool=pool, actor=self.actor, dry_run=data["dry_run"], source=data["source"]
        )
        return Response(summary)


class ApplicationRevertApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)

    @extend_schema(
        request=TenantIn,
        responses={200: ApplicationOut, **error_responses("changed-since", "already-reverted")},
        summary="Takes a pool's application back: every entry it changed as it was before.",
        description="All or nothing: when an entry it changed was changed or deleted since, 409 changed-since "
        "names it and nothing is written.",
    )
    def post(self, request, pool_id: str, application_id: str):
        data = read_strictly(TenantIn, request.data)
        pool = pools.pool_get(tenant=self.tenant(data), pool_id=pool_id)
        application = apply.application_revert(pool=pool, application_id=application_id, actor=self.actor)
        return Response(application_body(application))
