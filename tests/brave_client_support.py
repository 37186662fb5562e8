"""The Brave client under a scripted upstream on a fake clock: settings, replies and call helpers for its tests."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest
from pydantic import SecretStr

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.shared_state import SharedUpstream
from brave_search_mcp.config import Settings
from brave_search_mcp.models import errors
from testkit.brave.auth import VALID_KEY
from testkit.clock import FakeClock as FakeTime
from testkit.scripted import Handler, ScriptedUpstream

KEY = VALID_KEY
BASE = "https://brave.test"


class Upstream(ScriptedUpstream):
    """The scripted upstream, answering with a small web page when given no script."""

    def __init__(self, *replies: httpx2.Response | Exception | Handler) -> None:
        super().__init__(*(replies or (ok(),)))


def settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "api_key": SecretStr(KEY),
        "api_key_source": "BRAVE_SEARCH_API_KEY",
        "base_url": BASE,
        "retries": 0,
    }
    values.update(overrides)
    return Settings(**values)


def make_client(up: Upstream, ft: FakeTime, *, shared: SharedUpstream | None = None, **overrides: Any) -> BraveClient:
    """A client on the scripted upstream and the fake clock (over a cache ``shared`` with other processes if given)."""
    up.clock = ft.clock
    return BraveClient(
        settings(**overrides),
        transport=httpx2.MockTransport(up.handle),
        clock=ft.clock,
        sleep=ft.sleep,
        rng=lambda: 0.5,
        shared=shared,
    )


def web_body(query: str = "hello world") -> dict[str, Any]:
    return {
        "type": "search",
        "query": {"original": query},
        "web": {"type": "search", "results": [{"title": "Hello", "url": "https://example.com/", "description": "x"}]},
    }


def ok(body: Any = None, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(200, json=web_body() if body is None else body, headers=headers)


def brave_error(status: int, code: str, detail: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "ErrorResponse",
        "error": {
            "id": "00000000-0000-4000-8000-000000000000",
            "status": status,
            "code": code,
            "detail": detail,
            "meta": meta or {},
        },
        "time": 1700000000,
    }


def error_reply(status: int, code: str, detail: str, meta: dict[str, Any] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json=brave_error(status, code, detail, meta))


async def call(client: BraveClient, endpoint: Endpoint = Endpoint.WEB, **kwargs: Any) -> Any:
    params = kwargs.pop("params", [("q", "hello world")])
    with anyio.fail_after(5):
        return await client.get(endpoint, params, **kwargs)


async def call_query(client: BraveClient, query: str) -> None:
    await call(client, params=[("q", query)])


async def failing(client: BraveClient, endpoint: Endpoint = Endpoint.WEB, **kwargs: Any) -> errors.BraveSearchError:
    with pytest.raises(errors.BraveSearchError) as info:
        await call(client, endpoint, **kwargs)
    return info.value
