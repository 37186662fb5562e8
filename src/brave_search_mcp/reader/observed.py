"""The page reader as operators see it: each read in a span, counted as read, refused by the address policy, or
failed. A subclass the composition root builds, so the reader itself knows nothing of metrics or traces."""

from __future__ import annotations

from dataclasses import dataclass, field

from brave_search_mcp.models import errors
from brave_search_mcp.observe import Observer
from brave_search_mcp.reader.reading import ReadResult, RenderMode, UrlReader


@dataclass
class ObservedReader(UrlReader):
    """``UrlReader`` whose reads the process's observer counts and traces (no label ever holds the URL)."""

    observer: Observer = field(default_factory=Observer)

    async def read(self, url: str, *, deadline: float | None = None, render: RenderMode = "auto") -> ReadResult:
        """Read as ``UrlReader`` does; the outcome is counted whatever it is."""
        outcome = "failed"
        try:
            with self.observer.span("page read"):
                result = await super().read(url, deadline=deadline, render=render)
            outcome = "read"
            return result
        except errors.FetchBlocked:
            outcome = "refused"
            raise
        finally:
            self.observer.page(outcome)
