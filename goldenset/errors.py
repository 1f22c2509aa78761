"""Domain errors with a stable code; plain Python, so pure modules and services can raise them.

evalsite's API exception handler renders them as {"error": {"code", "message", "details"}}; management
commands print them as one line. The code is the contract: clients branch on it, never on the message.
"""

from __future__ import annotations

from typing import Any


class EvalsiteError(Exception):
    status_code = 400

    def __init__(
        self, code: str, message: str, *, details: dict[str, Any] | None = None, status: int | None = None
    ):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        if status is not None:
            self.status_code = status

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class NotFound(EvalsiteError):
    status_code = 404

    def __init__(self, what: str, identifier: Any):
        super().__init__(
            "not-found",
            f"{what} {identifier!s} not found.",
            details={"resource": what, "id": str(identifier)},
        )
