"""Studies over REST: start one, follow it, save its winner as a preset (evaluation.studies.services does the work)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.api.views import read_strictly
from evaluation.studies import services
from evaluation.studies.request import METRICS_TEXT
from evaluation.studies.space import ANSWER_FIELDS, FIELDS
from goldenset import selectors as golden_selectors
from goldenset.api.base import TenantAPIView, read
from goldenset.api.serializers import TenantIn, error_responses

SPACE_HELP = (
    'Configuration field -> a list of choices or a range {"low", "high", "step", "log"}: '
    f"{', '.join(name for name in FIELDS if name not in ANSWER_FIELDS)}; with an answer metric also "
    f"{' and '.join(ANSWER_FIELDS)}; with a target, top_k and params.NAME. A field without effect in any trial "
    "(fulltext_weight under Rrf fusion) is refused."
)


class StudyIn(TenantIn):
    collection_id = serializers.CharField()
    base = serializers.JSONField(
        help_text="A configuration as /search/evaluate takes it: what every trial varies."
    )
    space = serializers.JSONField(help_text=SPACE_HELP)
    metric = serializers.JSONField(required=False, allow_null=True, help_text=f"{METRICS_TEXT}.")
    budget = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text='{"trials": 50, "seconds": null, "judge_calls": null}: the study stops at any.',
    )
    seed = serializers.JSONField(
        required=False, allow_null=True, help_text="The split, the sampler and the pruner's."
    )
    confirm_share = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="The share of the golden set kept to confirm the winner (0.5).",
    )
    sampler = serializers.JSONField(
        required=False, allow_null=True, help_text="tpe (default), random or grid."
    )
    prune = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="Stop weak trials on a sample of the tuning questions (true).",
    )
    baseline = serializers.JSONField(
        required=False, allow_null=True, help_text="The configuration the winner must beat (default: base)."
    )
    judge_model = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="An answer study's judge model (default: the configured chat model, else the heuristic judge).",
    )
    max_p95_ms = serializers.JSONField(
        required=False, allow_null=True, help_text="A trial whose p95 search time is above this cannot win."
    )


class StudyAcceptedOut(serializers.Serializer):
    study_id = serializers.UUIDField()
    job_id = serializers.UUIDField()
    status = serializers.CharField()


class TrialOut(serializers.Serializer):
    number = serializers.IntegerField()
    values = serializers.DictField(help_text="The space's values this trial ran.")
    config = serializers.DictField(help_text="The base configuration with those values.")
    value = serializers.FloatField(
        allow_null=True, help_text="The metric's mean over the questions it was scored on."
    )
    pruned = serializers.BooleanField(help_text="Stopped early on a sample of the tuning questions.")
    questions = serializers.IntegerField()
    seconds = serializers.FloatField()
    error = serializers.CharField(allow_blank=True)
    p95_ms = serializers.FloatField(allow_null=True)
    infeasible = serializers.BooleanField(help_text="Slower than max_p95_ms: it could not win.")
    errors = serializers.IntegerField(  # type: ignore[assignment]
        help_text="Questions whose target call failed: left out of its value."
    )


class BestOut(serializers.Serializer):
    number = serializers.IntegerField()
    values = serializers.DictField()
    config = serializers.DictField()
    tuning_value = serializers.FloatField()


class ScoredRunOut(serializers.Serializer):
    run_id = serializers.UUIDField()
    value = serializers.FloatField()
    ci = serializers.ListField(child=serializers.FloatField(), help_text="95% bootstrap interval.")


class ConfirmationOut(serializers.Serializer):
    baseline = ScoredRunOut()
    winner = ScoredRunOut()
    difference = serializers.FloatField(help_text="winner - baseline, on the confirmation questions.")
    p_value = serializers.FloatField(help_text="Paired randomization test.")
    significant = serializers.BooleanField(help_text="The winner is ahead and p < 0.05.")
    configurations_tried = serializers.IntegerField()
    questions = serializers.IntegerField()
    verdict = serializers.CharField()


class StudyRowOut(serializers.Serializer):
    study_id = serializers.UUIDField()
    collection_id = serializers.CharField()
    status = serializers.CharField(help_text="Its job's: Queued, Running, Completed, Failed or Cancelled.")
    job_id = serializers.UUIDField(allow_null=True)
    error = serializers.DictField(allow_null=True)
    metric = serializers.CharField()
    request = serializers.DictField()
    split = serializers.DictField(
        child=serializers.IntegerField(), help_text='{"tuning": n, "confirmation": n}'
    )
    evaluations = serializers.IntegerField(help_text="Question scorings the trials paid for.")
    best = BestOut(allow_null=True)
    confirmation = ConfirmationOut(allow_null=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class SpaceNoteOut(serializers.Serializer):
    field = serializers.CharField(help_text="space.NAME")
    always = serializers.BooleanField(help_text="Without effect in every trial (else in some of them).")
    message = serializers.CharField()


class ImportanceOut(serializers.Serializer):
    shares = serializers.DictField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="Field -> its share (PED-ANOVA), largest first; null when withheld (see note).",
    )
    trials = serializers.IntegerField(help_text="The complete trials the shares rest on.")
    complete = serializers.IntegerField(help_text="The complete trials there are (more while a study runs).")
    minimum_trials = serializers.IntegerField(help_text="Below this many complete trials it is withheld.")
    note = serializers.CharField(allow_blank=True, help_text="What it rests on, or why it is withheld.")


class StudyOut(StudyRowOut):
    trials = TrialOut(many=True)
    space_notes = SpaceNoteOut(many=True, help_text="Varied fields without effect in some trials.")
    importance = ImportanceOut()


class StudyListIn(serializers.Serializer):
    collection_id = serializers.CharField(required=False)
    cluster_id = serializers.CharField(required=False)
    tenant_id = serializers.CharField(required=False)


class PresetIn(TenantIn):
    name = serializers.CharField(max_length=100)
    accept_not_better = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Save a winner the confirmation did not show better (else a 409 winner-not-better).",
    )


class PresetOut(serializers.Serializer):
    name = serializers.CharField()
    config = serializers.DictField()
    study_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    verdict = serializers.CharField(allow_null=True, help_text="The study's verdict on the winner it saved.")


class StudiesApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, POST=Perm.EVALUATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)

    @extend_schema(
        request=StudyIn,
        responses={202: StudyAcceptedOut, **error_responses("golden-set-too-small", "broker-unavailable")},
        summary="Starts a study: the best configuration on a tuning part of the golden set, confirmed on the rest.",
        description="Trials (Optuna: tpe, random or grid; weak ones pruned on a sample of the tuning questions) "
        "see the tuning part only; the winner and the baseline are then evaluated on the confirmation part as "
        "two ordinary runs, with bootstrap intervals and the paired randomization test. Runs as a job.",
    )
    def post(self, request):
        data = read_strictly(StudyIn, request.data)
        collection = golden_selectors.collection_get(
            tenant=self.tenant(data), collection_id=data["collection_id"]
        )
        raw = {k: v for k, v in request.data.items() if k not in ("collection_id", "cluster_id", "tenant_id")}
        study = services.study_create(
            tenant=collection.tenant, collection=collection, raw=raw, actor=self.actor
        )
        job = study.job
        assert job is not None
        job.refresh_from_db(fields=["status"])
        body = {"study_id": str(study.pk), "job_id": str(job.pk), "status": job.status}
        return Response(body, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[StudyListIn],
        responses=StudyRowOut(many=True),
        summary="The tenant's studies, newest first (each without its trials).",
    )
    def get(self, request):
        data = read(StudyListIn, request.query_params)
        tenant = self.tenant()
        collection = (
            golden_selectors.collection_get(tenant=tenant, collection_id=data["collection_id"])
            if data.get("collection_id")
            else None
        )
        paginator = self.pagination_class()  # type: ignore[operator,misc]
        studies = services.study_list(tenant=tenant, collection=collection)
        page = paginator.paginate_queryset(studies, request, view=self)
        return paginator.get_paginated_response([services.study_row(study) for study in page])


class StudyDetailApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW)

    @extend_schema(
        parameters=[OpenApiParameter("cluster_id", str), OpenApiParameter("tenant_id", str)],
        responses=StudyOut,
        summary="One study: its trials so far, the best on the tuning part, and its confirmation.",
    )
    def get(self, request, study_id: str):
        return Response(services.study_detail(services.study_get(tenant=self.tenant(), study_id=study_id)))


class StudySaveApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)

    @extend_schema(
        request=PresetIn,
        responses={
            201: PresetOut,
            **error_responses("preset-exists", "study-not-finished", "winner-not-better"),
        },
        summary="Saves a study's winner as a named configuration preset.",
        description="A winner its confirmation did not show better than the baseline is saved only with "
        "accept_not_better: true (else a 409 winner-not-better saying so).",
    )
    def post(self, request, study_id: str):
        data = read_strictly(PresetIn, request.data)
        study = services.study_get(tenant=self.tenant(data), study_id=study_id)
        preset = services.preset_save(
            study=study,
            name=data["name"].strip(),
            actor=self.actor,
            accept_not_better=data["accept_not_better"],
        )
        body = {
            "name": preset.name,
            "config": preset.config,
            "study_id": str(study.pk),
            "created_at": preset.created_at,
            "verdict": (study.confirmation or {}).get("verdict"),
        }
        return Response(PresetOut(body).data, status=status.HTTP_201_CREATED)
