"""Relevance judgments from click logs over REST (evaluation.judgments.clicks reads and grades them,
evaluation.judgments.click_import stores them)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.api.judgments import MachineAgreementOut
from evaluation.api.views import read_strictly
from evaluation.judgments import click_import, clicks
from goldenset import selectors as golden_selectors
from goldenset.api.base import TenantAPIView
from goldenset.api.serializers import TenantIn

MAX_API_ROWS = 100_000  # rows (or UBI documents) one call takes; a bigger log: manage.py import_clicks


class ClicksIn(TenantIn):
    collection_id = serializers.CharField(max_length=200)
    rows = serializers.ListField(
        child=serializers.JSONField(), required=False, max_length=MAX_API_ROWS,
        help_text="[{query, document_id, position (1: the top result), clicked}]: one per result shown.",
    )  # fmt: skip
    ubi_queries = serializers.ListField(
        child=serializers.JSONField(), required=False, max_length=MAX_API_ROWS,
        help_text="OpenSearch UBI's ubi_queries documents (query_id, user_query).",
    )  # fmt: skip
    ubi_events = serializers.ListField(
        child=serializers.JSONField(), required=False, max_length=MAX_API_ROWS,
        help_text="OpenSearch UBI's ubi_events documents; impression and click actions are read.",
    )  # fmt: skip
    min_impressions = serializers.IntegerField(
        min_value=1, max_value=1_000_000, default=clicks.MIN_IMPRESSIONS
    )
    max_rank = serializers.IntegerField(min_value=1, max_value=1000, default=20)


class ClicksOut(serializers.Serializer):
    rater = serializers.CharField()
    model = serializers.CharField()
    cuts = serializers.ListField(
        child=serializers.FloatField(), help_text="The lowest COEC of grades 1, 2, 3."
    )
    min_impressions = serializers.IntegerField()
    impressions = serializers.IntegerField()
    clicks = serializers.IntegerField()
    pairs = serializers.IntegerField(help_text="(query, document) pairs in the log.")
    too_few_impressions = serializers.IntegerField()
    judged = serializers.IntegerField(
        help_text="Judgments stored: pairs of golden questions and known documents."
    )
    grades = serializers.DictField(child=serializers.IntegerField())
    unmatched_queries = serializers.IntegerField(
        help_text="Queries that are no golden question of the collection."
    )
    unmatched_examples = serializers.ListField(child=serializers.CharField())
    unknown_documents = serializers.IntegerField()
    skipped = serializers.DictField(
        child=serializers.IntegerField(), help_text="UBI events not read, by reason."
    )
    rank_ctr = serializers.DictField(child=serializers.FloatField(), help_text="{rank: clicks / impressions}")
    agreement_with_golden_set = MachineAgreementOut()


class ClicksApi(TenantAPIView):
    required_permissions = needs(POST=Perm.CURATE)
    costly = ("POST",)  # on the tighter per-key budget (evalsite.api.throttles)

    @extend_schema(
        request=ClicksIn,
        responses={201: ClicksOut},
        summary="Relevance judgments from a search log by clicks over expected clicks (rater clicks:coec).",
        description="Either `rows` (what was shown and clicked) or `ubi_queries` and `ubi_events` (OpenSearch "
        "UBI). Each (query, document) pair shown at least `min_impressions` times is graded by COEC: its "
        "click rate over its rank's click rate over the whole log, 3 at 2 or more, 2 at 1, 1 at 0.5, else 0. "
        "A query is matched to the golden entry that has its question (case and spaces folded). Stored beside "
        "people's judgments as rater clicks:coec, never over them, all or none; the answer reports the "
        "agreement with the golden set's own judgments.",
    )
    def post(self, request):
        data = read_strictly(ClicksIn, request.data)
        collection = golden_selectors.collection_get(
            tenant=self.tenant(data), collection_id=data["collection_id"]
        )
        skipped: dict[str, int] = {}
        if "rows" in data and not ("ubi_queries" in data or "ubi_events" in data):
            observations = clicks.read_rows(data["rows"])
        elif "ubi_queries" in data and "ubi_events" in data and "rows" not in data:
            observations, skipped = clicks.read_ubi(data["ubi_queries"], data["ubi_events"], data["max_rank"])
        else:
            raise EvalsiteError(
                "validation-error", "rows: send rows, or ubi_queries and ubi_events (not both).",
                details={"field": "rows"},
            )  # fmt: skip
        result = click_import.clicks_import(
            collection=collection, observations=observations, min_impressions=data["min_impressions"],
            actor=self.actor, skipped=skipped,
        )  # fmt: skip
        return Response(result, status=status.HTTP_201_CREATED)
