"""The lmkit search and evaluation API: search, evaluate, runs. Thin: parsing here, work in services."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from evalsite.api.parsers import FormParser, MultiPartParser
from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.models import Tenant
from evalsite.tenancy.roles import Perm
from evaluation import configs as config_parser
from evaluation.answers.answering import answer_question
from evaluation.answers.configs import (
    ANSWER_KEYS,
    parse_answer_config,
    parse_answer_configs,
    parse_thresholds,
)
from evaluation.answers.evaluate import AnswerRequest
from evaluation.answers.judge_votes import parse_judge_sampling
from evaluation.api import serializers as s
from evaluation.presets import with_presets
from evaluation.reports.batch_jobs import batch_job_create
from evaluation.reports.presenter import EvaluateOut, RunDetailOut, RunOut, batch_result, run_detail, run_rows
from evaluation.request_fields import parse_ks
from evaluation.retrieval.evaluate import evaluate_run_file
from evaluation.retrieval.read_path import available_rerankers, search
from evaluation.retrieval.request import RetrievalRequest
from evaluation.retrieval.run_files import parse_run_file
from evaluation.runs import selectors
from evaluation.targets import services as target_services
from goldenset import selectors as golden_selectors
from goldenset.api.base import TenantAPIView, read
from goldenset.api.serializers import JobAcceptedOut, error_responses
from goldenset.models import Collection


def read_strictly(serializer_class: type[serializers.Serializer], data, *, partial: bool = False) -> dict:
    """As `read`, and a field the endpoint does not know is an error: a misspelt `serach_type` must not
    search with the default instead (configurations are read as strictly)."""
    validated = read(serializer_class, data, partial=partial)
    # The declared fields, not .fields: building a serializer's fields again cost a fifth of a search call.
    known = set(getattr(serializer_class, "_declared_fields", {}))
    unknown = sorted(key for key in data if key not in known)
    if unknown:
        raise EvalsiteError(
            "validation-error",
            f"{unknown[0]}: unknown field.",
            details={"field": unknown[0], "allowed": sorted(known)},
        )
    return validated


class CollectionsApi(TenantAPIView):
    def scope(
        self, serializer_class: type[serializers.Serializer], body
    ) -> tuple[dict, Tenant, list[Collection]]:
        """The request read strictly, its tenant and the collections it names (collection_id and/or
        collection_ids, each the tenant's)."""
        data = read_strictly(serializer_class, body)
        tenant = self.tenant(data)
        collections = selectors.collections_named(
            tenant=tenant, collection_id=data.get("collection_id"), collection_ids=data.get("collection_ids")
        )
        return data, tenant, collections


class SearchApi(CollectionsApi):
    required_permissions = needs(POST=Perm.VIEW)

    @extend_schema(
        request=s.SearchIn,
        responses={
            200: s.SearchOut,
            **error_responses("index-building", "index-not-shared", "embeddings-unavailable"),
        },
        summary="Searches one or more collections.",
    )
    def post(self, request):
        data, tenant, collections = self.scope(s.SearchIn, request.data)
        raw = {k: data[k] for k in config_parser.CONFIG_KEYS if k in data and k != "label"}
        config = config_parser.parse_config(raw, 0, available_rerankers(), prefix="")
        top_k = config.top_k or 10
        # The service's dict as it is, not through SearchOut: serializing ten results cost 2.6 ms (0.5 ms with a
        # serializer built once), against about 6 ms for the search itself. SearchOut documents the shape, and
        # tests/evaluation/test_response_schema.py holds real responses to it.
        return Response(search(collections=collections, query=data["query"], config=config, top_k=top_k))


class EvaluateApi(CollectionsApi):
    required_permissions = needs(POST=Perm.EVALUATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)

    @extend_schema(
        request=s.EvaluateIn,
        responses={
            200: EvaluateOut,
            202: OpenApiResponse(
                JobAcceptedOut,
                description="A large evaluation runs as a job: poll jobs/{job_id}; its result is an EvaluateOut.",
            ),
            **error_responses(
                "target-secrets-unreadable",
                "index-building",
                "index-not-shared",
                "embeddings-unavailable",
                "broker-unavailable",
            ),
        },
        summary="Evaluates retrieval configurations against the golden set.",
    )
    def post(self, request):
        data, tenant, collections = self.scope(s.EvaluateIn, request.data)
        ks = parse_ks(data.get("ks"))
        subset = config_parser.parse_subset(data)
        raw = with_presets(tenant, data.get("configs"))
        configs = config_parser.parse_configs(raw, available_rerankers(), subset)
        counted = {c.subset: selectors.count_golden_questions(collections, c.subset) for c in configs}
        questions = sum(counted[c.subset] for c in configs)
        target_calls = sum(counted[c.subset] for c in configs if c.target)
        if (
            questions > settings.EVALSITE_EVALUATE_SYNC_LIMIT
            or target_calls > settings.EVALSITE_TARGET_SYNC_QUESTIONS
        ):
            job = batch_job_create(
                tenant=tenant,
                collections=collections,
                request=RetrievalRequest(ks=ks, configs=configs),
                actor=self.actor,
            )
            return Response({"job_id": str(job.pk), "status": job.status}, status=status.HTTP_202_ACCEPTED)
        batch_id, runs = RetrievalRequest(ks=ks, configs=configs).evaluate(
            tenant=tenant, collections=collections, actor=self.actor
        )
        return Response(EvaluateOut(batch_result(batch_id, runs)).data)


class EvaluateRunFileApi(TenantAPIView):
    required_permissions = needs(POST=Perm.EVALUATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": s.RunFileIn},
        responses={200: EvaluateOut, **error_responses("empty-golden-set")},
        summary="Scores an uploaded TREC or JSONL run file: one run per tag, as a configuration is scored.",
    )
    def post(self, request):
        form = request.data.dict() if hasattr(request.data, "dict") else dict(request.data)
        data = read_strictly(s.RunFileIn, {**form, "file": request.FILES.get("file")})
        collection = golden_selectors.collection_get(
            tenant=self.tenant(data), collection_id=data["collection_id"]
        )
        ks = parse_ks(data.get("ks"))
        upload = data["file"]
        parsed = parse_run_file(upload.read())
        batch_id, runs = evaluate_run_file(
            tenant=collection.tenant,
            collection=collection,
            ks=ks,
            run_file=parsed,
            filename=upload.name,
            actor=self.actor,
        )
        return Response(EvaluateOut(batch_result(batch_id, runs)).data)


class AnswerApi(CollectionsApi):
    required_permissions = needs(POST=Perm.EVALUATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)

    @extend_schema(
        request=s.AnswerIn,
        responses={
            200: s.AnswerOut,
            **error_responses(
                "llm-unreadable",
                "index-building",
                "index-not-shared",
                "embeddings-unavailable",
                "llm-unavailable",
            ),
        },
        summary="Answers a question from the retrieved pages only, citing them.",
    )
    def post(self, request):
        data, tenant, collections = self.scope(s.AnswerIn, request.data)
        raw = {k: data[k] for k in (*config_parser.CONFIG_KEYS, *ANSWER_KEYS) if k in data}
        raw.pop("label", None)
        config = parse_answer_config(raw, 0, available_rerankers(), prefix="")
        answer = answer_question(collections=collections, question=data["query"], config=config)
        return Response(s.AnswerOut(answer).data)


class EvaluateAnswersApi(CollectionsApi):
    required_permissions = needs(POST=Perm.EVALUATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)

    @extend_schema(
        request=s.EvaluateAnswersIn,
        responses={
            202: OpenApiResponse(
                JobAcceptedOut, description="Poll jobs/{job_id}; its result is an AnswerEvaluationOut."
            ),
            **error_responses("broker-unavailable"),
        },
        summary="Evaluates the grounded-answer pipeline against the golden set.",
        description="Runs every golden question (and each of unanswerable_questions) through the answer path "
        "once per configuration and scores the answers: faithfulness, context recall, answer relevancy, "
        "citation precision, context relevancy (each with its method), refusal recall beside the false-refusal "
        "rate, and a per-question diagnosis (retrieval or generation). Always a job: poll jobs/{job_id}; each "
        "configuration is persisted as a run of kind answers.",
    )
    def post(self, request):
        data, tenant, collections = self.scope(s.EvaluateAnswersIn, request.data)
        subset = config_parser.parse_subset(data)
        configs = parse_answer_configs(data.get("configs"), available_rerankers(), subset)
        thresholds = parse_thresholds(data.get("metric_thresholds"))
        sampling = parse_judge_sampling(data.get("judge_samples"), data.get("judge_temperature"))
        request = AnswerRequest(
            configs=configs,
            judge_model=data.get("judge_model"),
            judge_sampling=sampling,
            unanswerable_questions=data.get("unanswerable_questions") or [],
            max_questions=data.get("max_questions"),
            thresholds=thresholds,
        )
        job = batch_job_create(tenant=tenant, collections=collections, request=request, actor=self.actor)
        return Response({"job_id": str(job.pk), "status": job.status}, status=status.HTTP_202_ACCEPTED)


class RunListApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW)

    @extend_schema(
        parameters=[s.RunFilterIn],
        responses=RunOut(many=True),
        summary="Lists runs, newest first.",
    )
    def get(self, request):
        filters = read(s.RunFilterIn, request.query_params)
        runs = selectors.runs_list(
            tenant=self.tenant(),
            collection_id=filters.get("collection_id"),
            label=filters.get("label"),
            batch_id=filters.get("batch_id"),
            kind=filters.get("kind"),
        )
        paginator = self.pagination_class()  # type: ignore[operator,misc]
        page = paginator.paginate_queryset(runs, request, view=self)
        return paginator.get_paginated_response(run_rows(page))


class RunDetailApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW)

    @extend_schema(
        parameters=[OpenApiParameter("cluster_id", str), OpenApiParameter("tenant_id", str)],
        responses=RunDetailOut,
        summary="One run with its per-question results.",
    )
    def get(self, request, run_id: str):
        run = selectors.run_get(tenant=self.tenant(), run_id=run_id, with_results=True)
        return Response(run_detail(run))


# --- targets -------------------------------------------------------------------------------------------------


class TargetListApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, POST=Perm.ADMINISTER)

    @extend_schema(
        parameters=[OpenApiParameter("cluster_id", str), OpenApiParameter("tenant_id", str)],
        responses=s.TargetOut(many=True),
        summary="Lists the tenant's targets by name (secret header values never shown).",
    )
    def get(self, request):
        found = target_services.targets_list(tenant=self.tenant())
        paginator = self.pagination_class()  # type: ignore[operator,misc]
        page = paginator.paginate_queryset(found, request, view=self)
        return paginator.get_paginated_response([target_services.snapshot(t) for t in page])

    @extend_schema(
        request=s.TargetIn,
        responses={201: s.TargetOut, **error_responses("target-exists")},
        summary="Creates a target: an external search or answering system evaluations can call.",
    )
    def post(self, request):
        data = read_strictly(s.TargetIn, request.data)
        target = target_services.target_create(tenant=self.tenant(data), data=data, actor=self.actor)
        return Response(target_services.snapshot(target), status=status.HTTP_201_CREATED)


class TargetDetailApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, PATCH=Perm.ADMINISTER, DELETE=Perm.ADMINISTER)

    def target(self, name: str, data=None):
        return target_services.target_get(tenant=self.tenant(data), name=name)

    @extend_schema(
        parameters=[OpenApiParameter("cluster_id", str), OpenApiParameter("tenant_id", str)],
        responses=s.TargetOut,
        summary="One target.",
    )
    def get(self, request, name: str):
        return Response(target_services.snapshot(self.target(name)))

    @extend_schema(
        request=s.TargetIn(partial=True),
        responses={
            200: s.TargetOut,
            **error_responses("target-exists", "target-secrets-unreadable"),
        },
        summary="Changes the fields sent; secret_headers replaces the values it names (null removes one).",
    )
    def patch(self, request, name: str):
        data = read_strictly(s.TargetIn, request.data, partial=True)
        target = self.target(name, request.data)
        target = target_services.target_update(target=target, data=data, actor=self.actor)
        return Response(target_services.snapshot(target))

    @extend_schema(
        parameters=[OpenApiParameter("cluster_id", str), OpenApiParameter("tenant_id", str)],
        responses={204: None},
        summary="Deletes a target (runs that used it keep its name and kind in their config).",
    )
    def delete(self, request, name: str):
        target_services.target_delete(target=self.target(name), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TargetTestApi(TenantAPIView):
    required_permissions = needs(POST=Perm.ADMINISTER)

    @extend_schema(
        request=s.TargetTestIn,
        responses={200: s.TargetTestOut, **error_responses("target-secrets-unreadable")},
        summary="Test connection: one query through the target, the mapped ids beside the raw answer's start.",
    )
    def post(self, request, name: str):
        data = read_strictly(s.TargetTestIn, request.data)
        target = target_services.target_get(tenant=self.tenant(data), name=name)
        return Response(target_services.target_test(target=target, query=data["query"], top_k=data["top_k"]))
