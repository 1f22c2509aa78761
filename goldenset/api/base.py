"""What every tenant-scoped API view shares: the tenant from the key, and query parameters read strictly."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from goldenset import selectors
from goldenset.errors import EvalsiteError
from goldenset.models import Tenant


class TenantAPIView(APIView):
    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    def tenant(self, data=None) -> Tenant:
        """The key's tenant; cluster_id / tenant_id from the body (or the query) must name it, or 404."""
        source = data if data is not None else self.request.query_params
        return selectors.tenant_for_key(
            api_key=self.request.auth,
            cluster_id=_as_str(source.get("cluster_id"), "cluster_id"),
            tenant_id=_as_str(source.get("tenant_id"), "tenant_id"),
        )

    @property
    def actor(self) -> str:
        return self.request.user.actor


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


def read(serializer_class: type[serializers.Serializer], data) -> dict:
    """Validate input with a serializer; DRF's ValidationError becomes the envelope with field paths."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
