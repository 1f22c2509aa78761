"""Reads of tenancy: the tenant a key or a command names (a tenant not found is NotFound, 404)."""

from __future__ import annotations

from evalsite.errors import NotFound
from evalsite.tenancy.models import ApiKey, Tenant


def tenant_for_key(*, api_key: ApiKey, cluster_id: str | None, tenant_id: str | None) -> Tenant:
    """The key's tenant, provided the request's cluster_id / tenant_id (when given) name it."""
    tenant = api_key.tenant
    if cluster_id not in (None, "") and cluster_id != tenant.cluster.slug:
        raise NotFound("Cluster", cluster_id)
    if tenant_id not in (None, "") and tenant_id != tenant.slug:
        raise NotFound("Tenant", tenant_id)
    return tenant


def tenant_get(*, cluster_id: str, tenant_id: str) -> Tenant:
    """A tenant by its cluster's and its own slug (the commands' --cluster/--tenant)."""
    tenant = Tenant.objects.filter(cluster__slug=cluster_id, slug=tenant_id).first()
    if tenant is None:
        raise NotFound("Tenant", f"{cluster_id}/{tenant_id}")
    return tenant
