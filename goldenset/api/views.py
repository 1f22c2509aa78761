"""The lmkit API of the base app: collections, documents, golden set, jobs. One view per resource; thin."""

from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import status
from rest_framework.response import Response

from evalsite.api.parsers import FormParser, MultiPartParser
from evalsite.errors import EvalsiteError
from evalsite.jobs.services import job_cancel, jobs_recover
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from goldenset import exporters, importers, selectors, services
from goldenset.api import serializers as s
from goldenset.api.base import TenantAPIView, read
from goldenset.formats import FORMATS, detect_format
from goldenset.services.generate import generate_job_create


def _paginate(view: TenantAPIView, queryset, serializer_class) -> Response:
    paginator = view.pagination_class()  # type: ignore[operator,misc]  # DRF's stubs: a dotted path or None
    page = paginator.paginate_queryset(queryset, view.request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


def _too_many(field: str, count: int, limit: int) -> EvalsiteError:
    return EvalsiteError(
        f"too-many-{field}",
        f"{field}: {count} in one call; the limit is {limit}.",
        details={"field": field, "count": count, "limit": limit},
    )


def _form(request) -> dict:
    """A form body's fields as a dict: a QueryDict (last value wins), or DRF's plain {} when no body came."""
    data = request.data
    return data.dict() if hasattr(data, "dict") else dict(data)


TENANT_PARAMS = [OpenApiParameter("cluster_id", str), OpenApiParameter("tenant_id", str)]
_CONTENT_TYPES = {
    "okfsmith": "application/json",
    "deepeval": "application/json",
    "csv": "text/csv; charset=utf-8",
    "tsv": "text/tab-separated-values; charset=utf-8",
    "ragas": "application/jsonl",
    "phoenix": "application/jsonl",
    "promptfoo": "application/yaml",
}


# --- collections -------------------------------------------------------------------------------------------


class CollectionListApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, POST=Perm.CURATE)

    @extend_schema(
        parameters=TENANT_PARAMS, responses=s.CollectionOut(many=True), summary="Lists collections."
    )
    def get(self, request):
        # Ordered explicitly: Meta.ordering is not applied to the annotated (GROUP BY) queryset.
        collections = selectors.collections_list(tenant=self.tenant()).order_by("slug")
        return _paginate(self, collections, s.CollectionOut)

    @extend_schema(
        request=s.CollectionIn,
        responses={201: s.CollectionOut, **s.error_responses("collection-exists")},
        summary="Creates a collection.",
    )
    def post(self, request):
        data = read(s.CollectionIn, request.data)
        collection = services.collection_create(
            tenant=self.tenant(data), slug=data["collection_id"], name=data["name"], actor=self.actor
        )
        return Response(s.CollectionOut(collection).data, status=status.HTTP_201_CREATED)


class CollectionDetailApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, DELETE=Perm.ADMINISTER)

    @extend_schema(parameters=TENANT_PARAMS, responses=s.CollectionOut, summary="Gets a collection.")
    def get(self, request, collection_id: str):
        tenant = self.tenant()
        selectors.collection_get(tenant=tenant, collection_id=collection_id)
        collection = selectors.collections_list(tenant=tenant).get(slug=collection_id)
        return Response(s.CollectionOut(collection).data)

    @extend_schema(
        parameters=TENANT_PARAMS, responses={204: None}, summary="Deletes a collection and its content."
    )
    def delete(self, request, collection_id: str):
        collection = selectors.collection_get(tenant=self.tenant(), collection_id=collection_id)
        services.collection_delete(collection=collection, actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- documents ---------------------------------------------------------------------------------------------


def _ingest(
    view: TenantAPIView, collection, documents: list[services.DocumentInput], source: str = ""
) -> Response:
    """Small ingests are written now (200); large ones become an Ingest job (202): services.documents_ingest."""
    return _respond(
        services.documents_ingest(collection=collection, documents=documents, actor=view.actor, source=source)
    )


def _respond(outcome: services.IngestOutcome) -> Response:
    if outcome.job is not None:
        job = outcome.job
        return Response({"job_id": str(job.pk), "status": job.status}, status=status.HTTP_202_ACCEPTED)
    return Response(outcome.result)


class DocumentListApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, POST=Perm.CURATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)

    @extend_schema(
        parameters=[*TENANT_PARAMS, OpenApiParameter("text", str)],
        responses=s.DocumentOut(many=True),
        summary="Lists a collection's documents.",
    )
    def get(self, request, collection_id: str):
        collection = selectors.collection_get(tenant=self.tenant(), collection_id=collection_id)
        documents = selectors.documents_list(collection=collection, text=request.query_params.get("text"))
        return _paginate(self, documents, s.DocumentOut)

    @extend_schema(
        request=s.DocumentsIn,
        responses={
            200: s.IngestResultOut,
            202: s.JobAcceptedOut,
            **s.error_responses("broker-unavailable"),
        },
        summary="Adds or replaces documents (upsert by id).",
    )
    def post(self, request, collection_id: str):
        tenant = self.tenant(request.data if isinstance(request.data, dict) else {})
        collection = selectors.collection_get(tenant=tenant, collection_id=collection_id)
        raw = request.data.get("documents") if isinstance(request.data, dict) else None
        limit = settings.EVALSITE_MAX_DOCUMENTS_PER_CALL
        if isinstance(raw, list) and len(raw) > limit:
            raise _too_many("documents", len(raw), limit)
        data = read(s.DocumentsIn, request.data)
        documents = [
            services.DocumentInput.from_text(**{k: v for k, v in d.items() if k != "text"}, text=d["text"])
            if "text" in d
            else services.DocumentInput(**d)
            for d in data["documents"]
        ]
        return _ingest(self, collection, documents)


class DocumentUploadApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": s.DocumentUploadIn},
        responses={
            200: s.IngestResultOut,
            202: s.JobAcceptedOut,
            **s.error_responses("unsupported-file", "broker-unavailable"),
        },
        summary="Uploads .jsonl, .md or .txt files.",
    )
    def post(self, request, collection_id: str):
        files = request.FILES.getlist("file")
        data = read(s.DocumentUploadIn, {**_form(request), "file": files})
        collection = selectors.collection_get(tenant=self.tenant(data), collection_id=collection_id)
        outcome = importers.documents_upload(collection=collection, files=data["file"], actor=self.actor)
        return _respond(outcome)


class DocumentDetailApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, DELETE=Perm.CURATE)

    @extend_schema(
        parameters=TENANT_PARAMS, responses=s.DocumentDetailOut, summary="Gets a document with its pages."
    )
    def get(self, request, collection_id: str, document_id: str):
        collection = selectors.collection_get(tenant=self.tenant(), collection_id=collection_id)
        document = selectors.document_get(collection=collection, document_id=document_id)
        return Response(s.DocumentDetailOut(document).data)

    @extend_schema(parameters=TENANT_PARAMS, responses={204: None}, summary="Deletes a document.")
    def delete(self, request, collection_id: str, document_id: str):
        collection = selectors.collection_get(tenant=self.tenant(), collection_id=collection_id)
        services.document_delete(
            document=selectors.document_get(collection=collection, document_id=document_id), actor=self.actor
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- golden set --------------------------------------------------------------------------------------------


class GoldenSetApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, POST=Perm.CURATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)

    @extend_schema(
        parameters=[s.GoldenSetFilterIn],
        responses=s.GoldenEntryOut(many=True),
        summary="Lists golden-set entries.",
    )
    def get(self, request):
        filters = read(s.GoldenSetFilterIn, request.query_params)
        tenant = self.tenant()
        collection = None
        if filters.get("collection_id"):
            collection = selectors.collection_get(tenant=tenant, collection_id=filters["collection_id"])
        entries = selectors.golden_entries_list(
            tenant=tenant,
            collection=collection,
            tag=filters.get("tag"),
            origin=filters.get("origin"),
            reviewed=filters.get("reviewed"),
            answerable=filters.get("answerable"),
            text=filters.get("text"),
        )
        return _paginate(self, entries, s.GoldenEntryOut)

    @extend_schema(
        request=s.GoldenSetAddIn,
        responses={
            201: s.GoldenAddOut,
            **s.error_responses("duplicate-question", "duplicate-key"),
        },
        summary="Adds entries.",
    )
    def post(self, request):
        body = read(s.GoldenSetAddIn, request.data)
        limit = settings.EVALSITE_MAX_ENTRIES_PER_CALL
        if len(body["entries"]) > limit:
            raise _too_many("entries", len(body["entries"]), limit)
        entries = read(_EntriesIn, {"entries": body["entries"]})["entries"]
        collection = selectors.collection_get(tenant=self.tenant(body), collection_id=body["collection_id"])
        created, _ = services.golden_entries_add(
            collection=collection, entries=[services.EntryInput(**e) for e in entries], actor=self.actor
        )
        return Response(
            {"added": len(created), "entries": s.GoldenEntryOut(created, many=True).data},
            status=status.HTTP_201_CREATED,
        )


class GoldenSetGenerateApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)

    @extend_schema(
        request=s.GoldenSetGenerateIn,
        responses={202: s.GenerateAcceptedOut, **s.error_responses("broker-unavailable")},
        summary="Generates a golden set from a collection's own content.",
        description="Samples at most one page per document in an order given by a seeded hash (the seed is "
        "reported), has the chat model (or the offline template writer) write one self-contained question and "
        "reference answer per page, and stores what passes the quality gate as golden entries (origin Generated, "
        "reviewed false). Answers 202 with a job: poll jobs/{job_id}; its result holds the discard counts per "
        "reason (`rejected_before` among them: a question a curator rejected in this collection before, never "
        "written again) and, apart from them, `no_clear_sentence`: the pages on which the offline writer found no "
        "clear sentence to ask about.",
    )
    def post(self, request):
        body = read(s.GoldenSetGenerateIn, request.data)
        tenant = self.tenant(body)
        collection = selectors.collection_get(tenant=tenant, collection_id=body["collection_id"])
        job = generate_job_create(
            tenant=tenant,
            collection=collection,
            count=body["count"],
            model=body.get("model"),
            seed=body.get("seed"),
            actor=self.actor,
        )
        return Response(
            {
                "job_id": str(job.pk),
                "status": job.status,
                "seed": job.input["seed"],
                "model": job.input["model"],
                "backend": job.input["backend"],
            },
            status=status.HTTP_202_ACCEPTED,
        )


class _EntriesIn(s.serializers.Serializer):
    entries = s.GoldenEntryIn(many=True)


class GoldenEntryApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW, PATCH=Perm.CURATE, DELETE=Perm.CURATE)

    @extend_schema(parameters=TENANT_PARAMS, responses=s.GoldenEntryOut, summary="Gets one golden-set entry.")
    def get(self, request, entry_id: str):
        return Response(
            s.GoldenEntryOut(selectors.golden_entry_get(tenant=self.tenant(), entry_id=entry_id)).data
        )

    @extend_schema(
        request=s.GoldenEntryPatchIn,
        responses={200: s.GoldenEntryOut, **s.error_responses("duplicate-question", "duplicate-key")},
        summary="Edits one golden-set entry.",
    )
    def patch(self, request, entry_id: str):
        changes = read(s.GoldenEntryPatchIn, request.data, partial=True)
        tenant = self.tenant(request.data if isinstance(request.data, dict) else {})
        entry = selectors.golden_entry_get(tenant=tenant, entry_id=entry_id)
        entry = services.golden_entry_update(entry=entry, changes=changes, actor=self.actor)
        return Response(s.GoldenEntryOut(entry).data)

    @extend_schema(
        parameters=TENANT_PARAMS,
        responses={204: None},
        summary="Deletes one golden-set entry.",
        description="Deleting a generated entry nobody marked reviewed rejects its question, as the review "
        "queue's reject does: generation never writes that question into the collection again (the admin's "
        "Rejected questions page un-rejects it). Deleting a reviewed, manual or imported entry rejects nothing.",
    )
    def delete(self, request, entry_id: str):
        entry = selectors.golden_entry_get(tenant=self.tenant(), entry_id=entry_id)
        services.golden_entries_delete(entries=[entry], actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class GoldenSetUploadApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": s.GoldenUploadIn},
        responses={
            201: s.GoldenUploadOut,
            200: s.GoldenUploadOut,
            **s.error_responses("duplicate-question", "duplicate-key"),
        },
        summary="Imports a golden set (okfsmith, csv, tsv, trec, ragas, deepeval, promptfoo, phoenix): 201 when "
        "it created entries, else 200 (updated, unchanged, or a dry run).",
    )
    def post(self, request):
        files = {
            name: request.FILES.get(name)
            for name in ("file", "qrels")
            if name in request.FILES or name == "file"
        }
        data = read(s.GoldenUploadIn, {**_form(request), **files})
        collection = selectors.collection_get(tenant=self.tenant(data), collection_id=data["collection_id"])
        content = data["file"].read()
        fmt = data.get("format") or detect_format(data["file"].name or "", content)
        result = importers.golden_import(
            collection=collection,
            fmt=fmt,
            data=content,
            qrels=data["qrels"].read() if data.get("qrels") else None,
            create_documents=data["create_documents"],
            dry_run=data["dry_run"],
            actor=self.actor,
        )
        # 201 only when something was created: re-importing the same file creates nothing, and says so.
        created = result["created"] and not result.get("dry_run")
        return Response(result, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class GoldenSetExportApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW)
    pagination_class = None  # the whole golden.json list, never a page of it

    @extend_schema(
        parameters=[
            *TENANT_PARAMS,
            OpenApiParameter("collection_id", str, required=True),
            OpenApiParameter(
                "format", str, enum=list(FORMATS), description="Default okfsmith (golden.json)."
            ),
            OpenApiParameter("part", str, enum=["topics", "qrels"], description="format trec: which file."),
        ],
        responses={
            # One content type a format (_CONTENT_TYPES), each documented as a client that parses it reads it.
            (200, "application/json"): OpenApiResponse(
                PolymorphicProxySerializer(
                    component_name="GoldenExportRecord",
                    serializers=[s.GoldenFileRecordOut, s.DeepEvalRecordOut],
                    resource_type_field_name=None,
                    many=True,
                ),
                description="The file, by format: okfsmith (the default) and deepeval: a JSON list of records; "
                "csv and tsv: text/csv and text/tab-separated-values with a header row; ragas and phoenix: JSON "
                "lines (application/jsonl); promptfoo: a YAML list of tests; trec: text/plain, the topics or the "
                "qrels (`part`). Content-Disposition names the file.",
            ),
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "text/tab-separated-values"): OpenApiTypes.STR,
            (200, "application/jsonl"): OpenApiTypes.STR,
            (200, "application/yaml"): s.PromptfooTestOut(many=True),
            (200, "text/plain"): OpenApiTypes.STR,
        },
        summary="Exports a collection's golden set (okfsmith golden.json by default, or another format); the "
        "X-Evalsite-Warnings header lists what the format cannot carry.",
    )
    def get(self, request):
        collection_id = request.query_params.get("collection_id")
        if not collection_id:
            raise EvalsiteError(
                "validation-error",
                "collection_id: this parameter is required.",
                details={"field": "collection_id"},
            )
        collection = selectors.collection_get(tenant=self.tenant(), collection_id=collection_id)
        fmt = request.query_params.get("format") or "okfsmith"
        if fmt not in FORMATS:
            raise EvalsiteError(
                "validation-error",
                f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}.",
                details={"field": "format", "allowed": list(FORMATS)},
            )
        written = exporters.golden_export(collection=collection, fmt=fmt)
        names = list(written.files)
        if fmt == "trec":  # topics and qrels: one file a request
            part = request.query_params.get("part") or "topics"
            if part not in ("topics", "qrels"):
                raise EvalsiteError(
                    "validation-error",
                    f"part: expected topics or qrels, got {part!r}.",
                    details={"field": "part"},
                )
            names = [names[0] if part == "topics" else names[1]]
        (name,) = names
        response = HttpResponse(
            written.files[name], content_type=_CONTENT_TYPES.get(fmt, "text/plain; charset=utf-8")
        )
        # Quoted and escaped by Django (RFC 6266, filename* for non-ASCII): the slug is the client's text.
        response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=name)
        # What the format cannot carry, named (header values: ASCII; the list is also what the CLI prints).
        response["X-Evalsite-Warnings"] = json.dumps(written.warnings)
        return response


# --- jobs --------------------------------------------------------------------------------------------------


class JobApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW)

    @extend_schema(parameters=TENANT_PARAMS, responses=s.JobOut, summary="Polls a job.")
    def get(self, request, job_id: str):
        tenant = self.tenant()
        jobs_recover(tenant=tenant)
        return Response(s.JobOut(selectors.job_get(tenant=tenant, job_id=job_id)).data)


class JobCancelApi(TenantAPIView):
    required_permissions = needs(POST=Perm.EVALUATE)

    @extend_schema(
        request=None,
        responses={200: s.JobOut, **s.error_responses("job-finished")},
        summary="Cancels a job that has not finished.",
    )
    def post(self, request, job_id: str):
        # A POST names its cluster_id / tenant_id in the body, like every other POST.
        tenant = self.tenant(request.data if isinstance(request.data, dict) else {})
        job = selectors.job_get(tenant=tenant, job_id=job_id)
        if not job_cancel(job=job):
            raise EvalsiteError(
                "job-finished",
                f"Job {job.pk} already ended as {job.status}.",
                details={"status": job.status},
                status=409,
            )
        return Response(s.JobOut(job).data)
