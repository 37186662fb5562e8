"""Brave's error JSON: the ``ErrorResponse`` envelope with a stable id, and the pydantic-style field errors of a 422."""

from __future__ import annotations

import time
import uuid
from typing import Any

_ID_NAMESPACE = uuid.UUID("6f1d6c3e-6a4e-4d3b-9a57-0b3f3c1f2e10")


def field_error(
    kind: str, name: str, msg: str, value: Any, ctx: dict[str, Any] | None = None, *, where: str = "query"
) -> dict[str, Any]:
    """One entry of a VALIDATION error's ``meta.errors``, located at ``[where, name]``."""
    error: dict[str, Any] = {"type": kind, "loc": [where, name], "msg": msg, "input": value}
    if ctx is not None:
        error["ctx"] = ctx
    return error


class ErrorIds:
    """Numbers the error bodies of one fake so their ids are deterministic (uuid5 of a counter)."""

    def __init__(self) -> None:
        self.issued = 0

    def body(self, status: int, code: str, detail: str, meta: dict[str, Any]) -> dict[str, Any]:
        """An ``ErrorResponse`` object as Brave sends it."""
        self.issued += 1
        return {
            "type": "ErrorResponse",
            "error": {
                "id": str(uuid.uuid5(_ID_NAMESPACE, str(self.issued))),
                "status": status,
                "code": code,
                "detail": detail,
                "meta": meta,
            },
            "time": int(time.time()),
        }
