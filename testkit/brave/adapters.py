"""A small ``JsonFetch`` + ``StreamPost`` over any httpx2 transport, so use-case tests run against the fake Brave.

It is the model of what the real client adapters must do: send the key in a header, honour the
deadline, raise ``brave_search_mcp.errors`` classes (Brave's error JSON through ``wire.map_error``),
and for a stream raise on a non-2xx status before yielding anything.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
import httpx2

from brave_search_mcp.brave.answers_stream import answer_payloads
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.wire import map_error, parse_rate_limit
from brave_search_mcp.config import Settings
from brave_search_mcp.models import errors
from brave_search_mcp.render.text import clean_text
from brave_search_mcp.upstream.bodies import decode_json_object

from .auth import VALID_KEY


class HttpUpstream:
    """``fetch`` (a JsonFetch) and ``stream`` (a StreamPost) over one httpx2 client."""

    def __init__(
        self, http: httpx2.AsyncClient, *, key: str = VALID_KEY, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.http = http
        self.key = key
        self.clock = clock
        self.fetched: list[tuple[str, list[tuple[str, str]], dict[str, str]]] = []
        self.max_response_bytes: int = Settings.model_fields["max_response_bytes"].default  # the client's default

    def _safe(self, text: str, limit: int = 300) -> str:
        return clean_text(text.replace(self.key, "[redacted]"), limit=limit, markup=False)

    def _remaining(self, deadline: float | None) -> float | None:
        return None if deadline is None else max(0.0, deadline - self.clock())

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {"X-Subscription-Token": self.key, "Accept": "application/json", **(extra or {})}

    def _error(self, path: str, response: httpx2.Response, body: bytes) -> errors.BraveSearchError:
        info = parse_rate_limit(response.headers, self.clock())
        endpoint = Endpoint(path) if path in Endpoint._value2member_map_ else Endpoint.WEB
        return map_error(
            endpoint, response.status_code, response.reason_phrase, response.headers, body, info, self._safe
        )

    async def fetch(
        self,
        path: str,
        params: list[tuple[str, str]],
        *,
        deadline: float | None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """GET ``path``; decoded JSON object, or a typed error."""
        self.fetched.append((path, list(params), dict(headers or {})))
        try:
            with anyio.fail_after(self._remaining(deadline)):
                response = await self.http.get(path, params=tuple(params), headers=self._headers(headers))
        except TimeoutError:
            raise errors.UpstreamTimeout("Brave did not answer before the call's deadline.") from None
        except httpx2.HTTPError as exc:
            raise errors.NetworkError(f"Could not reach Brave ({type(exc).__name__}).") from None
        if not 200 <= response.status_code < 300:
            raise self._error(path, response, response.content)
        return decode_json_object(response.content)

    async def stream(self, path: str, body: dict[str, Any], *, deadline: float | None) -> AsyncIterator[str]:
        """POST ``body``; yield each event's data (as the client reads them); a non-2xx answer raises first."""
        headers = self._headers({"Accept": "text/event-stream"})
        try:
            async with self.http.stream("POST", path, json=body, headers=headers) as response:
                if not 200 <= response.status_code < 300:
                    raise self._error(path, response, await response.aread())
                async for payload in answer_payloads(response, self.max_response_bytes):
                    yield payload
        except httpx2.TimeoutException:
            raise errors.UpstreamTimeout("Brave's answer stream timed out.") from None
        except httpx2.HTTPError as exc:
            raise errors.NetworkError(f"The answer stream broke off ({type(exc).__name__}).", retryable=True) from None
