"""What one tool call's log line reports, filled in by the use cases as they learn it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CallFacts:
    """What the per-call log line reports."""

    search_type: str | None = None
    cached: bool | None = None
    attempts: int = 0
    upstream_status: int | None = None
    deadline: float | None = None  # client-clock time by which the call must end
    extra: dict[str, Any] = field(default_factory=dict)
