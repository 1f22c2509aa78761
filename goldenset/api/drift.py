"""GET /lmkit/v1/search/golden-set/drift: a collection's drifted golden entries with their reasons
(goldenset.services.drift), a page at a time."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from goldenset import selectors
from goldenset.api.base import TenantAPIView, read
from goldenset.api.serializers import TenantIn
from goldenset.drift import REASONS
from goldenset.services.drift import drifted_entries


class GoldenDriftIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    page = serializers.IntegerField(required=False, min_value=1, help_text="1-based; 50 entries a page.")
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=1000)


class GoldenDriftReasonOut(serializers.Serializer):
    reason = serializers.ChoiceField(
        choices=list(REASONS),
        help_text="deleted: no longer in the collection; changed: its content differs from when the entry was "
        "last reviewed; expired: its validity ended (valid_until past, or superseded).",
    )
    document_ids = serializers.ListField(child=serializers.CharField())


class GoldenDriftEntryOut(serializers.Serializer):
    entry_id = serializers.UUIDField()
    key = serializers.CharField()
    question = serializers.CharField()
    reviewed_at = serializers.DateTimeField(
        allow_null=True, help_text="When a person last looked at it: created, edited or marked reviewed."
    )
    reasons = GoldenDriftReasonOut(many=True)


class GoldenDriftOut(serializers.Serializer):
    collection_id = serializers.CharField()
    count = serializers.IntegerField(help_text="Drifted entries in all (this page lists some of them).")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    entries = GoldenDriftEntryOut(many=True)


class GoldenDriftApi(TenantAPIView):
    required_permissions = needs(GET=Perm.VIEW)

    @extend_schema(
        parameters=[GoldenDriftIn],
        responses=GoldenDriftOut,
        summary="Lists a collection's drifted golden entries.",
        description="Entries whose expected documents were deleted, changed since the entry was last reviewed "
        "(a content hash per page), or whose validity ended; oldest entry first. Marking an entry reviewed "
        "makes it remember its documents as they are.",
    )
    def get(self, request):
        params = read(GoldenDriftIn, request.query_params)
        collection = selectors.collection_get(tenant=self.tenant(), collection_id=params["collection_id"])
        paginator = self.pagination_class()  # type: ignore[operator,misc]  # DRF's stubs: a dotted path or None
        page = paginator.paginate_queryset(drifted_entries(collection), request, view=self)
        entries = [
            {
                "entry_id": e.entry_id,
                "key": e.key,
                "question": e.question,
                "reviewed_at": e.reviewed_at,
                "reasons": [{"reason": r.reason, "document_ids": list(r.document_ids)} for r in e.reasons],
            }
            for e in page
        ]
        body = {
            "collection_id": collection.slug,
            "count": paginator.page.paginator.count,
            "next": paginator.get_next_link(),
            "previous": paginator.get_previous_link(),
            "entries": entries,
        }
        return Response(GoldenDriftOut(body).data)
