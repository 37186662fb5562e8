"""Brave's documented failures as the fake injects them, and the envelope code each must become (one table)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from brave_search_mcp.models.errors import ErrorCode

# fault name (FakeBrave.inject) -> the code a tool must answer with (reference/brave-api.md §6)
FAULT_CODES: Mapping[str, ErrorCode] = MappingProxyType(
    {
        "400_not_in_plan": ErrorCode.NOT_IN_PLAN,
        "403": ErrorCode.NOT_IN_PLAN,
        "404_subscription": ErrorCode.AUTH_FAILED,
        "422_token": ErrorCode.AUTH_FAILED,
        "422_validation": ErrorCode.UPSTREAM_VALIDATION,
        "429": ErrorCode.RATE_LIMITED,
        "429_quota": ErrorCode.QUOTA_EXCEEDED,
        "500": ErrorCode.UPSTREAM_ERROR,
        "502": ErrorCode.UPSTREAM_ERROR,
        "503": ErrorCode.UPSTREAM_ERROR,
        "403_bare": ErrorCode.UPSTREAM_ERROR,
        "invalid_json": ErrorCode.PARSE_ERROR,
        "refused": ErrorCode.NETWORK_ERROR,
    }
)


def fault_cases(*faults: str) -> list[tuple[str, ErrorCode]]:
    """``(fault, code)`` pairs for ``pytest.mark.parametrize``, in the order given."""
    return [(fault, FAULT_CODES[fault]) for fault in faults]
