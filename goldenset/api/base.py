"""What every tenant-scoped API view shares: the tenant from the key, and query parameters read strictly (the
ones its operation documents, evalsite.api.query)."""

from __future__ import annotations

from typing import cast

from rest_framework import serializers
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from evalsite.api.query import refuse_unknown_query_parameters
from evalsite.audit.services import actor_api_key
from evalsite.bounded_json import NUL_REFUSED, nul_field
from evalsite.errors import EvalsiteError
from evalsite.tenancy.models import ApiKey, Tenant
from evalsite.tenancy.selectors import tenant_for_key


class TenantAPIView(APIView):
    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    def initial(self, request, *args, **kwargs):
        """After authentication, once for every view: refuse NUL in the path's ids and in query values (the rule
        on NUL, evalsite.bounded_json.nul_field: PostgreSQL cannot hold it in a text parameter, so a lookup with
        one would fail in the database), then a query parameter the operation does not document
        (evalsite.api.query)."""
        super().initial(request, *args, **kwargs)
        named = [*kwargs.items(), *((k, v) for k, values in request.query_params.lists() for v in values)]
        if (name := nul_field(named)) is not None:
            raise EvalsiteError(
                "validation-error", f"{name}: {NUL_REFUSED}", details={"fields": {name: [NUL_REFUSED]}}
            )
        refuse_unknown_query_parameters(self, request)

    def tenant(self, data=None) -> Tenant:
        """The key's tenant; cluster_id / tenant_id from the body (or the query) must name it, or 404."""
        source = data if data is not None else self.request.query_params
        return tenant_for_key(
            api_key=self.api_key,
            cluster_id=_as_str(source.get("cluster_id"), "cluster_id"),
            tenant_id=_as_str(source.get("tenant_id"), "tenant_id"),
        )

    @property
    def api_key(self) -> ApiKey:
        # The one authentication class (evalsite.api.auth) puts the caller's ApiKey in request.auth.
        return cast(ApiKey, self.request.auth)

    @property
    def actor(self) -> str:
        """Who the audit trail names for this request."""
        return actor_api_key(self.api_key)


def _as_str(value, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise EvalsiteError(
            "validation-error",
            f"{name}: Not a valid string.",
            details={"fields": {name: ["Not a valid string."]}},
        )
    return value


def read(serializer_class: type[serializers.Serializer], data, *, partial: bool = False) -> dict:
    """Validate input with a serializer; DRF's ValidationError becomes the envelope with field paths.

    partial (PATCH): only the fields sent are validated and returned; no default fills an absent one.
    """
    serializer = serializer_class(data=data, partial=partial)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
