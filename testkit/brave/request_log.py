"""The fake's request log: every request as it arrived (never the token), for tests and the server's stats."""

from __future__ import annotations

from .reply import RecordedRequest


class RequestLog:
    """Requests in arrival order; callers hold the fake's lock."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []

    def hits(self, path_suffix: str | None = None, status: int | None = None) -> int:
        """How many requests arrived (only those whose path ends with ``path_suffix``, answered ``status``, when
        given: ``status=200`` counts what Brave bills)."""
        return sum(
            1
            for r in self.requests
            if (path_suffix is None or r.path.endswith(path_suffix)) and (status is None or r.status == status)
        )

    def by_path(self) -> dict[str, int]:
        """Requests per path."""
        counts: dict[str, int] = {}
        for r in self.requests:
            counts[r.path] = counts.get(r.path, 0) + 1
        return counts
