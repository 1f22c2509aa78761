"""The API's one permission check: the caller's key must hold what the view declares for the method
(evalsite.tenancy.access: `required_permissions = needs(Perm.VIEW, POST=Perm.CURATE)` on the view class).
A view that declares nothing for a method refuses it: a new endpoint is closed until it says what it needs."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from evalsite.errors import EvalsiteError
from evalsite.tenancy.access import permission_for, require
from evalsite.tenancy.models import ApiKey


class DeclaredPermission(BasePermission):
    def has_permission(self, request, view) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return False  # no key: IsAuthenticated, before this, has answered 401 already
        if not hasattr(view, (request.method or "").lower()):
            return True  # a method the view has not: DRF answers 405 method-not-allowed
        perm = permission_for(view, request.method or "")
        if perm is None:
            raise EvalsiteError(
                "forbidden",
                f"{type(view).__name__} declares no permission for {request.method}: refused.",
                details={"permission": None, "role": key.role},
                status=403,
            )
        require(key, perm, key.tenant_id)
        return True
