"""A scripted summarizer source on the fake clock, and the summary messages the summarizer tests are built of."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from brave_search_mcp.brave.client import BraveClient, BraveResponse, Params
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.summarizer import PollSchedule, SummarizerSource, Summary, fetch_summary
from brave_search_mcp.models.errors import BraveSearchError
from testkit.clock import FakeClock

JSON_KEY = '{"query": "what is \\"k2\\"?", "country": "us", "language": "en", "results_hash": "a&b=c+d/e%20"}'


@dataclass
class Call:
    """One poll as the fake source saw it."""

    endpoint: Endpoint
    params: list[tuple[str, str]]
    use_cache: bool
    throttle: bool
    at: float


@dataclass
class FakeSource:
    """Answers polls from a script; the last entry repeats. An exception entry is raised instead."""

    script: list[Any]
    clock: FakeClock
    request_seconds: float = 0.0
    calls: list[Call] = field(default_factory=list)

    async def get(
        self, endpoint: Endpoint, params: Params, *, use_cache: bool = True, throttle: bool = True
    ) -> BraveResponse:
        self.calls.append(Call(endpoint, list(params), use_cache, throttle, self.clock.now))
        self.clock.now += self.request_seconds
        item = self.script[min(len(self.calls), len(self.script)) - 1]
        if isinstance(item, BaseException):
            raise item
        return BraveResponse(
            data=item,
            status=200,
            cached=False,
            attempts=1,
            duration_ms=1.0,
            request_target=("http://127.0.0.1/res/v1/summarizer/search", ()),
            body_bytes=len(json.dumps(item)),
            rate_limit=None,
        )


def _brave_client_is_a_source(client: BraveClient) -> SummarizerSource:
    """Checked by mypy only: the real client must fit the protocol the poller uses."""
    return client


PENDING: dict[str, Any] = {"type": "summarizer", "status": "pending"}


def tok(text: str) -> dict[str, Any]:
    return {"type": "token", "data": text}


def complete(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "summarizer", "status": "complete", "summary": list(messages), **extra}


SIMPLE = complete(tok("K2 is the second highest mountain."), title="Second highest mountain")


async def run(
    script: list[Any],
    *,
    key: str = "test-summary-key",
    schedule: PollSchedule | None = None,
    request_seconds: float = 0.0,
    **kwargs: Any,
) -> tuple[Summary, FakeSource, FakeClock]:
    clock = FakeClock()
    source = FakeSource(script, clock, request_seconds)
    summary = await fetch_summary(
        source, key, schedule=schedule or PollSchedule(), clock=clock, sleep=clock.sleep, **kwargs
    )
    return summary, source, clock


async def run_error(script: list[Any], **kwargs: Any) -> tuple[BraveSearchError, FakeSource, FakeClock]:
    clock = FakeClock()
    source = FakeSource(script, clock, kwargs.pop("request_seconds", 0.0))
    with pytest.raises(BraveSearchError) as info:
        await fetch_summary(source, "test-summary-key", clock=clock, sleep=clock.sleep, **kwargs)
    return info.value, source, clock


def iref(url: str, number: int | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"type": "inline_reference", "url": url, "start_index": 0, "end_index": 10}
    if number is not None:
        data["number"] = number
    return {"type": "inline_reference", "data": data}


def item(name: str | None = None, url: str | None = None, text: str | None = None) -> dict[str, Any]:
    fields = {"name": name, "url": url, "text": text}
    data: dict[str, Any] = {"uuid": "00000000-0000-0000-0000-000000000000"}
    data.update({key: value for key, value in fields.items() if value is not None})
    return {"type": "enum_item", "data": data}


K2 = "https://en.wikipedia.org/wiki/K2"
KANCH = "https://en.wikipedia.org/wiki/Kangchenjunga"
