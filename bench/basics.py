"""Our server alone against the fake with no latency: start-up beside the SDK's floor, context size, a miss and a hit.

Start-up is timed beside the floor the issue set (spawn to exit of a bare import of the MCP SDK's server class),
interleaved with the order rotating, so both meet the same load. Sizes use the recorded 10-result page.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from testkit.brave.brave import WEB_PATH
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import RpcSession

from .rpc import BenchError, spawn_server, time_command, time_to_output
from .servers import WEB_TOOL, our_arguments, text_of
from .upstream import load_recorded_page

logger = logging.getLogger(__name__)

FLOOR_CODE = "from mcp.server.mcpserver import MCPServer"
FLOOR_IMPORT_CODE = FLOOR_CODE + "; import os; os.write(1, b'.')"
TEXT_QUERY = "hello world"
WARMUP_CALLS = 5
# Lower-case tag names (what Brave's snippets carry) and character entities; "Vec<T>" is text, not markup.
_MARKUP = re.compile(r"</?[a-z][a-z0-9]*(?:\s[^<>]*)?/?>|&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);")


@dataclass(frozen=True)
class Startup:
    """Spawn → ``initialize`` of our server beside the SDK floor and its import alone (seconds)."""

    server: list[float]
    floor: list[float]  # spawn → exit of ``python -c FLOOR_CODE``
    floor_import: list[float]  # spawn → a byte written after the import (no interpreter exit)


@dataclass(frozen=True)
class Sizes:
    """What a model's context holds: the ``tools`` array, and the text of one 10-result web search."""

    tools_bytes: int
    tools: int
    text_bytes: int
    results: int
    ages_expected: int
    ages_shown: int
    markup: list[str]

    @property
    def per_result(self) -> float:
        """Text bytes per result returned."""
        return self.text_bytes / self.results if self.results else float("inf")


@dataclass(frozen=True)
class Calls:
    """Round trips over stdio (seconds): a cache miss (a request to the fake) and the same call again (a hit)."""

    miss: list[float]
    hit: list[float]


async def measure_startup(env: Mapping[str, str], reps: int) -> Startup:
    """Server spawn → ``initialize`` beside both floors, one warm-up each, measured in rotating order."""

    async def server_once() -> float:
        async with spawn_server(env) as session:
            return await session.initialize()

    found = Startup([], [], [])
    steps: list[tuple[list[float], Callable[[], Awaitable[float]]]] = [
        (found.floor, lambda: time_command([sys.executable, "-c", FLOOR_CODE], env)),
        (found.floor_import, lambda: time_to_output([sys.executable, "-c", FLOOR_IMPORT_CODE], env)),
        (found.server, server_once),
    ]
    for _, step in steps:  # warm-up: page cache and .pyc files
        await step()
    for rep in range(reps):
        for offset in range(len(steps)):
            samples, step = steps[(rep + offset) % len(steps)]
            samples.append(await step())
        logger.info("start-up %d/%d: server %.3f s, floor %.3f s", rep + 1, reps, found.server[-1], found.floor[-1])
    return found


def _meta(result: Mapping[str, Any]) -> dict[str, Any]:
    structured = result.get("structuredContent")
    if result.get("isError") or not isinstance(structured, dict) or not isinstance(structured.get("meta"), dict):
        raise BenchError(f"web search failed: {text_of(result)[:300]}")
    meta: dict[str, Any] = structured["meta"]
    return meta


def source_ages(results: list[Mapping[str, Any]]) -> list[str]:
    """The age each source result carries (``age``, else ``page_age``), for results that have one."""
    ages = [result.get("age") or result.get("page_age") for result in results]
    return [age.strip() for age in ages if isinstance(age, str) and age.strip()]


async def measure_sizes(session: RpcSession) -> Sizes:
    """The ``tools`` array as compact UTF-8 JSON, and the text one 10-result search puts before the model."""
    listed, _ = await session.round_trip("tools/list")
    tools = listed.get("tools")
    if not isinstance(tools, list) or not tools:
        raise BenchError("tools/list returned no tools")
    result, _ = await session.call_tool(WEB_TOOL, our_arguments(TEXT_QUERY))
    text = text_of(result)
    ages = source_ages(load_recorded_page()["web"]["results"][:10])
    return Sizes(
        tools_bytes=len(json.dumps(tools, ensure_ascii=False, separators=(",", ":")).encode()),
        tools=len(tools),
        text_bytes=len(text.encode()),
        results=int(_meta(result)["returned"]),
        ages_expected=len(ages),
        ages_shown=sum(1 for age in ages if age in text),
        markup=_MARKUP.findall(text),
    )


async def measure_calls(session: RpcSession, upstream: FakeBraveServer, samples: int) -> Calls:
    """Per sample: a new query (a miss, which must reach the fake once), then the same again (a hit, which must not)."""
    for n in range(WARMUP_CALLS):
        for _ in range(2):
            await session.call_tool(WEB_TOOL, our_arguments(f"warm-up {n}"))
    found = Calls([], [])
    for n in range(samples):
        args = our_arguments(f"call sample {n}")
        for expected, samples_of in ((False, found.miss), (True, found.hit)):
            before = upstream.fake.hits(WEB_PATH)
            result, elapsed = await session.call_tool(WEB_TOOL, args)
            if _meta(result)["cached"] is not expected or upstream.fake.hits(WEB_PATH) - before != int(not expected):
                raise BenchError(f"sample {n}: the {'repeat' if expected else 'first call'} was not a cache "
                                 f"{'hit' if expected else 'miss'}")  # fmt: skip
            samples_of.append(elapsed)
    return found
