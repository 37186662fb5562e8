"""The fake's request log: every request as it arrived (never the token), for tests and the server's stats."""

from __future__ import annotations

from .reply import RecordedRequest


class RequestLog:
    """Requests in arrival order; callers hold the fake's lock."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []

    def hits(self, path_suffix: str | None = None) -> int:
        """How many requests arrived (only those whose path ends with ``path_suffix`` when given)."""
        if path_suffix is None:
            return len(self.requests)
        return sum(1 for r in self.requests if r.path.endswith(path_suffix))

    def by_path(self) -> dict[str, int]:
        """Requests per path."""
        counts: dict[str, int] = {}
        for r in self.requests:
            counts[r.path] = counts.get(r.path, 0) + 1
        return counts
