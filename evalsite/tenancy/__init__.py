"""Tenancy: clusters and their tenants, the API keys a tenant's clients send, and which dashboard users may see
which tenant. Every row of the domain apps belongs to a tenant; a tenant never sees another's (404)."""
