"""What an upstream client counts for the status tool: requests, errors and cache use per endpoint."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class EndpointCounters:
    """Per-endpoint request/error counts since start (status tool)."""

    requests: int = 0
    errors: int = 0
    cache_hits: int = 0
    by_code: dict[str, int] = field(default_factory=dict)
    last: str | None = None  # "ok" or the envelope code of the last answer: what the plan was seen to allow

    def count_error(self, code: str) -> None:
        """One more failed call, under its envelope code."""
        self.errors += 1
        self.by_code[code] = self.by_code.get(code, 0) + 1
        if code in ("NOT_IN_PLAN", "AUTH_FAILED") or self.last is None:
            self.last = code
