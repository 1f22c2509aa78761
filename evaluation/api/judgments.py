"""Pools and relevance judgments over REST (evaluation.judgments.pools does the work)."""

from __future__ import annotations

from dataclasses import replace

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from evalsite.api.parsers import FormParser, JSONParser, MultiPartParser
from evalsite.errors import EvalsiteError, NotFound
from evalsite.jobs.services import job_create
from evalsite.tenancy.access import needs, require
from evalsite.tenancy.roles import Perm
from evaluation.api.views import read_strictly
from evaluation.configs import parse_subset
from evaluation.judgments import assignment, pools
from evaluation.judgments.grades import RATER_MAX_LENGTH, imported_rater, live_rater
from evaluation.judgments.judgment_files import read_judgment_file
from evaluation.models import EvaluationJobKind, JudgmentPool, PoolApplication, RelevanceJudgment
from goldenset import selectors as golden_selectors
from goldenset.api.base import TenantAPIView, read
from goldenset.api.serializers import JobAcceptedOut, TenantIn, error_responses
from goldenset.services.scales import collection_scale

# --- shapes ------------------------------------------------------------------------------------------------


class PoolIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    run_ids = serializers.ListField(
        child=serializers.CharField(max_length=64), min_length=1, max_length=pools.MAX_POOL_RUNS,
        help_text="Stored retrieval runs of this collection.",
    )  # fmt: skip
    depth = serializers.IntegerField(min_value=1, max_value=pools.MAX_DEPTH, default=10)
    raters_per_item = serializers.IntegerField(min_value=1, max_value=pools.MAX_RATERS_PER_ITEM, default=1)
    order = serializers.ChoiceField(
        choices=["adaptive", "fixed"], default="adaptive",
        help_text="adaptive: MaxMean, the runs whose documents turn out relevant followed first; fixed: priority.",
    )  # fmt: skip
    tags = serializers.JSONField(required=False, help_text="Subset: questions with any of these tags.")
    origin = serializers.JSONField(required=False, help_text="Subset: Manual, Imported and/or Generated.")
    reviewed_only = serializers.JSONField(required=False)
    skip_unreviewed_generated = serializers.JSONField(required=False)


class ProgressOut(serializers.Serializer):
    items = serializers.IntegerField()
    judgments_needed = serializers.IntegerField(help_text="Items x raters per item.")
    judgments = serializers.IntegerField(help_text='Grades and "cannot judge" given so far.')
    items_done = serializers.IntegerField(help_text="Items with as many judgments as the pool asks for.")
    raters = serializers.DictField(child=serializers.IntegerField(), help_text="{rater: judgments}")
    given = serializers.DictField(
        child=serializers.IntegerField(), help_text="{rater: items the pool gave them}", required=False
    )


class RaterPairOut(serializers.Serializer):
    raters = serializers.ListField(child=serializers.CharField())
    items = serializers.IntegerField(help_text="Items both graded.")
    weighted_kappa = serializers.FloatField(allow_null=True, help_text="Cohen's kappa, quadratic weights.")


class MachineAgreementOut(serializers.Serializer):
    rater = serializers.CharField()
    items = serializers.IntegerField(help_text="Items both it and people graded.")
    weighted_kappa = serializers.FloatField(allow_null=True, help_text="Against the people's combined grade.")
    confusion = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField()),
        help_text="Rows: the people's combined grade 0-3; columns: the machine's grade 0-3.",
    )
    same_grade = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        help_text="{people's grade: the share of those items the machine graded the same}",
    )


class PoolAgreementOut(serializers.Serializer):
    raters = serializers.ListField(child=serializers.CharField())
    items_graded_twice = serializers.IntegerField()
    krippendorff_alpha = serializers.FloatField(
        allow_null=True, help_text="Ordinal alpha over the items two or more raters graded."
    )
    pairs = RaterPairOut(many=True, help_text="People in pairs, and each machine assessor with each person.")
    per_rater = RaterPairOut(many=True, help_text="Each person against the others' combined grade.")
    splits = serializers.IntegerField(help_text="Items whose raters are 2 grades apart or more: to review.")
    combined_grades = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="{grade: items}, each item's grades combined by their median.",
    )
    machines = MachineAgreementOut(many=True, help_text="Each machine assessor against the people.")


class ApplicationOut(serializers.Serializer):
    application_id = serializers.UUIDField()
    source = serializers.CharField(help_text='"people", or the machine rater whose grades were written.')  # type: ignore[assignment]
    judgments = serializers.IntegerField(help_text="The documents whose grade was written.")
    entries = serializers.IntegerField()
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    reverted_by = serializers.CharField()
    reverted_at = serializers.DateTimeField(allow_null=True)


class PoolOut(serializers.Serializer):
    pool_id = serializers.UUIDField()
    collection_id = serializers.CharField()
    run_ids = serializers.ListField(child=serializers.UUIDField())
    depth = serializers.IntegerField()
    raters_per_item = serializers.IntegerField()
    order = serializers.CharField(help_text="adaptive (MaxMean) or fixed (priority).")
    subset = serializers.DictField()
    judged_already = serializers.IntegerField(
        help_text="Documents the runs rank within the depth that had a judgment already (left out)."
    )
    items = serializers.IntegerField()
    progress = ProgressOut()
    agreement = PoolAgreementOut()
    applications = ApplicationOut(
        many=True, help_text="Its grades written into the golden set, newest first."
    )
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()


class ItemOut(serializers.Serializer):
    position = serializers.IntegerField()
    question_id = serializers.CharField(help_text="The golden entry's key, or its id when it has none.")
    question = serializers.CharField()
    reference_answer = serializers.CharField()
    document_id = serializers.CharField()
    title = serializers.CharField()
    text = serializers.CharField(
        help_text=f"The document's pages, the first {pools.TEXT_LIMIT:,} characters."
    )
    truncated = serializers.BooleanField()
    exists = serializers.BooleanField(help_text="False: the document left the collection since the pool.")


class NextOut(serializers.Serializer):
    item = ItemOut(allow_null=True, help_text="null: nothing left for this rater.")
    grade_scale = serializers.CharField(help_text="The collection's scale: binary, 0-2, 0-3 or 0-4.")
    grades = serializers.DictField(
        child=serializers.CharField(), help_text="{grade: its meaning} on that scale"
    )
    progress = ProgressOut()


class NextIn(TenantIn):
    pass


def person_of(view: TenantAPIView) -> str:
    """The live rater behind a call: its key's person (grades.live_rater). A key without a person cannot judge
    live (403): a machine has no judgment of its own to give."""
    key = view.api_key
    if key.user is None:
        raise EvalsiteError(
            "forbidden",
            "A key with no person cannot judge live: use a person's key (createapikey --user), or import a file "
            "of judgments as a curator.",
            details={"permission": Perm.JUDGE.value, "role": key.role},
            status=403,
        )
    return live_rater(key.user.get_username())


class AssessIn(TenantIn):
    assessor = serializers.ChoiceField(
        choices=["llm", "lexical"], default="llm",
        help_text="llm: the configured chat model; lexical: the keyless word-overlap assessor, a weak fallback.",
    )  # fmt: skip
    model = serializers.CharField(required=False, max_length=200, help_text="Default: EVALSITE_LLM_MODEL.")
    samples = serializers.IntegerField(required=False, min_value=1, max_value=9, default=1)


class JudgmentsIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    pool_id = serializers.CharField(
        required=False, max_length=64, help_text="Judgments of this pool's items."
    )
    judgments = serializers.ListField(
        child=serializers.JSONField(),
        min_length=1,
        max_length=pools.MAX_JUDGMENTS_PER_CALL,
        required=False,
        help_text="[{question_id, document_id, grade (on the collection's scale, or null: cannot judge), note}]: live judgments, whose "
        "rater is the key's person (a `rater` may only name them).",
    )
    # One judgment, without the list:
    question_id = serializers.JSONField(required=False)
    document_id = serializers.JSONField(required=False)
    grade = serializers.JSONField(required=False)
    rater = serializers.JSONField(
        required=False,
        help_text="Live judgments: left out, or the caller (their rater is the key's person). With a file: the "
        "qrels file's rater, stored as an imported rater.",
    )
    note = serializers.JSONField(required=False)
    file = serializers.FileField(
        required=False,
        help_text="CSV (question_id, document_id, grade, rater, note) or TREC qrels (with rater).",
    )


class JudgmentsOut(serializers.Serializer):
    judgments = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()


class JudgmentFilterIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    rater = serializers.CharField(required=False, max_length=RATER_MAX_LENGTH)
    pool_id = serializers.CharField(required=False, max_length=64)


class JudgmentOut(serializers.Serializer):
    question_id = serializers.CharField()
    document_id = serializers.CharField()
    grade = serializers.IntegerField(allow_null=True)
    rater = serializers.CharField()
    note = serializers.CharField()
    pool_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


# --- what is sent back -------------------------------------------------------------------------------------


def pool_body(pool: JudgmentPool) -> dict:
    progress = pools.pool_progress(pool)
    return {
        "pool_id": pool.pk,
        "collection_id": pool.collection.slug,
        "run_ids": sorted(str(pk) for pk in pool.runs.values_list("pk", flat=True)),
        "depth": pool.depth,
        "raters_per_item": pool.raters_per_item,
        "order": "adaptive" if pool.adaptive else "fixed",
        "subset": pool.subset,
        "judged_already": pool.judged_already,
        "items": progress.items,
        "progress": vars(progress),
        "agreement": pools.pool_agreement(pool),
        "applications": [application_body(a) for a in pool.applications.all()],
        "created_by": pool.created_by,
        "created_at": pool.created_at,
    }


def application_body(a: PoolApplication) -> dict:
    return {
        "application_id": a.pk, "source": a.source, "judgments": a.judgments, "entries": len(a.changes),
        "created_by": a.created_by, "created_at": a.created_at, "reverted_by": a.reverted_by,
        "reverted_at": a.reverted_at,
    }  # fmt: skip


# --- views -------------------------------------------------------------------------------------------------


class PoolsApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)

    @extend_schema(
        request=PoolIn,
        responses={201: PoolOut, **error_responses("empty-pool")},
        summary="Pools the documents stored runs found that nobody judged yet, most promising first.",
        description="Each question's top `depth` documents of every run, less those judged already (an expected "
        "document, or any grade a rater gave, 0 too), once each; ordered by the sum of 1 / rank over the runs "
        "that rank them. The subset fields choose the questions. A pool of nothing left to judge is "
        "empty-pool.",
    )
    def post(self, request):
        data = read_strictly(PoolIn, request.data)
        collection = golden_selectors.collection_get(
            tenant=self.tenant(data), collection_id=data["collection_id"]
        )
        pool = pools.pool_create(
            tenant=collection.tenant, collection=collection, run_ids=data["run_ids"], depth=data["depth"],
            raters_per_item=data["raters_per_item"], subset=parse_subset(request.data), actor=self.actor,
            adaptive=data["order"] == "adaptive",
        )  # fmt: skip
        return Response(pool_body(pool), status=status.HTTP_201_CREATED)


class PoolDetailApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW)

    @extend_schema(
        parameters=[OpenApiParameter("cluster_id", str), OpenApiParameter("tenant_id", str)],
        responses=PoolOut,
        summary="One pool and how far its judging is.",
    )
    def get(self, request, pool_id: str):
        return Response(pool_body(pools.pool_get(tenant=self.tenant(), pool_id=pool_id)))


class PoolNextApi(TenantAPIView):
    required_permissions = needs(GET=Perm.JUDGE)

    @extend_schema(
        parameters=[NextIn],
        responses=NextOut,
        summary="The next item of a pool for the key's person.",
        description="The rater is the key's person (a key without one is refused, 403). The item this rater was "
        "given and has not judged yet, else the first in the pool's order "
        "that fewer raters than the pool asks for were given and this rater never was; null when none is left. "
        "It shows the question, its reference answer and the document, never which run found it or where.",
    )
    def get(self, request, pool_id: str):
        read(NextIn, request.query_params)  # cluster_id, tenant_id checked
        pool = pools.pool_get(tenant=self.tenant(), pool_id=pool_id)
        item = assignment.pool_next(pool=pool, rater=person_of(self))
        scale = collection_scale(pool.collection)
        return Response(
            {
                "item": pools.item_view(item) if item is not None else None,
                "grade_scale": scale.name,
                "grades": {str(grade): meaning for grade, meaning in scale.meaning.items()},
                "progress": vars(pools.pool_progress(pool)),
            }
        )


class PoolAssessApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)

    @extend_schema(
        request=AssessIn,
        responses={202: JobAcceptedOut, **error_responses("llm-unavailable", "broker-unavailable")},
        summary="Has the configured chat model (or the keyless lexical assessor) grade the pool's documents, as a job.",
        description="assessor lexical: every item graded by word overlap with the question and its reference "
        "answer (evalsite-lexical-1, rater lexical-relevance:evalsite-lexical-1), a weak fallback whose "
        "agreement with people is in docs/benchmarks.md; no endpoint needed. Otherwise every item the model has "
        "not graded yet, with the versioned UMBRELA-style prompt "
        "(evalsite-relevance-1), `samples` answers each and their majority, stored beside people's judgments "
        "as rater llm-relevance:<model>. Unreadable answers and failed calls are counted in the job's result, "
        "never graded. No chat endpoint configured: llm-unavailable (503).",
    )
    def post(self, request, pool_id: str):
        data = read_strictly(AssessIn, request.data)
        pool = pools.pool_get(tenant=self.tenant(data), pool_id=pool_id)
        if data["assessor"] == "lexical":
            job = job_create(
                tenant=pool.tenant, kind=EvaluationJobKind.ASSESS, collection=pool.collection, actor=self.actor,
                input={"pool_id": str(pool.pk), "assessor": "lexical", "actor": self.actor},
            )  # fmt: skip
            return Response({"job_id": job.pk, "status": job.status}, status=status.HTTP_202_ACCEPTED)
        model = data.get("model") or settings.EVALSITE_LLM_MODEL
        if not settings.EVALSITE_LLM_BASE_URL:
            raise EvalsiteError(
                "llm-unavailable", "No LLM endpoint configured (EVALSITE_LLM_BASE_URL).", status=503
            )
        if not model:
            raise EvalsiteError(
                "validation-error", "model: name the model (no EVALSITE_LLM_MODEL is set).",
                details={"field": "model"},
            )  # fmt: skip
        job = job_create(
            tenant=pool.tenant, kind=EvaluationJobKind.ASSESS, collection=pool.collection, actor=self.actor,
            input={"pool_id": str(pool.pk), "model": model, "samples": data["samples"], "actor": self.actor},
        )  # fmt: skip
        return Response({"job_id": job.pk, "status": job.status}, status=status.HTTP_202_ACCEPTED)


class JudgmentsApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, POST=Perm.JUDGE)
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    @extend_schema(
        request={"application/json": JudgmentsIn, "multipart/form-data": JudgmentsIn},
        responses={201: JudgmentsOut},
        summary="Stores relevance judgments: a list, one judgment's fields, or a CSV or TREC qrels file.",
        description="All or none: every bad judgment is named (up to 50). A rater's new grade of a pair replaces "
        "the old one; each write is audited.",
    )
    def post(self, request):
        body = request.data
        raw = body.dict() if hasattr(body, "dict") else body  # a form's fields, or the JSON body as it came
        if "file" in request.FILES:
            raw["file"] = request.FILES["file"]
        data = read_strictly(JudgmentsIn, raw)
        collection = golden_selectors.collection_get(
            tenant=self.tenant(data), collection_id=data["collection_id"]
        )
        single = [name for name in ("question_id", "document_id", "grade", "note") if name in data]
        forms = ("judgments" in data) + ("file" in data) + bool(single)
        if forms != 1:
            raise EvalsiteError(
                "validation-error", "judgments: send judgments (a list), one judgment's fields, or a file.",
                details={"field": "judgments"},
            )  # fmt: skip
        if "file" in data:
            # A file is another team's judgments: its raters are imported raters, named by whoever curates.
            require(self.api_key, Perm.CURATE, collection.tenant)
            raw_rows = read_judgment_file(data["file"].read(), data.get("rater"))
        elif single:
            raw_rows = [{name: data[name] for name in (*single, "rater") if name in data}]
        else:
            raw_rows = data["judgments"]
        pool = None
        if data.get("pool_id"):
            pool = pools.pool_get(tenant=collection.tenant, pool_id=data["pool_id"])
            if pool.collection_id != collection.pk:  # another collection's pool is none of this one's
                raise NotFound("Pool", data["pool_id"])
        if "file" in data:
            rows = [
                replace(row, rater=imported_rater(row.rater))
                for row in pools.judgment_rows(raw_rows, scale=collection_scale(collection))
            ]
        else:
            rows = pools.judgment_rows(raw_rows, live=person_of(self), scale=collection_scale(collection))
        summary = pools.judgments_record(collection=collection, rows=rows, actor=self.actor, pool=pool)
        return Response(summary, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[JudgmentFilterIn],
        responses=JudgmentOut(many=True),
        summary="Lists a collection's relevance judgments, by rater and pool if asked.",
    )
    def get(self, request):
        filters = read(JudgmentFilterIn, request.query_params)
        collection = golden_selectors.collection_get(
            tenant=self.tenant(), collection_id=filters["collection_id"]
        )
        judgments = RelevanceJudgment.objects.filter(collection=collection).select_related("entry")
        if filters.get("rater"):
            judgments = judgments.filter(rater=filters["rater"])
        if filters.get("pool_id"):
            judgments = judgments.filter(
                pool=pools.pool_get(tenant=collection.tenant, pool_id=filters["pool_id"])
            )
        paginator = self.pagination_class()  # type: ignore[operator,misc]
        page = paginator.paginate_queryset(judgments.order_by("created_at", "id"), request, view=self)
        rows = [
            {
                "question_id": j.entry.key or str(j.entry_id),
                "document_id": j.document_id,
                "grade": j.grade,
                "rater": j.rater,
                "note": j.note,
                "pool_id": j.pool_id,
                "created_at": j.created_at,
                "updated_at": j.updated_at,
            }
            for j in page
        ]
        return paginator.get_paginated_response(rows)
