"""The slice contract: what a use case is handed (ports, the call) and what it declares (its tool spec).

A tool is one use-case module exporting ``SPEC``: name, title, description (the model pays for it every
turn), help paragraph, argument model, run function, the Brave endpoints it calls, its CLI shape and its
library method, and a ``run(args, ports, call)``. The registry (``tools.registry``) is the tuple of those
specs; the MCP server, the CLI, the skill commands, the library's check, help, status, the server's
instructions and ``manifest.json`` are generated from it.

Use cases never see HTTP: ``Ports`` hands them the one Brave client as small callables (``JsonFetch``:
GET one endpoint, decoded JSON; ``StreamPost``: POST, each streamed event's data; both raise ``models.errors``
classes), the provider chain, the page memo and one clock, so the same code runs over the real client,
a test transport or a recording.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from brave_search_mcp._version import __version__
from brave_search_mcp.brave.arguments import Params
from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.config import Settings
from brave_search_mcp.models.envelopes import CallMeta
from brave_search_mcp.models.errors import BraveSearchError
from brave_search_mcp.observe import Observer
from brave_search_mcp.providers.chain import FallbackChain
from brave_search_mcp.ratelimit.info import rate_limit_meta
from brave_search_mcp.usecases.page_memo import PageMemo

if TYPE_CHECKING:  # the reader's module loads httpcore2 and h11: built on read_url's first call, not imported here
    from brave_search_mcp.reader.reading import UrlReader

ArgsT = TypeVar("ArgsT", bound=BaseModel)
OutT = TypeVar("OutT")

READ_ONLY = {"read_only": True, "destructive": False, "idempotent": True, "open_world": True}

Progress = Callable[[float, float | None, str | None], Awaitable[None]]  # (progress, total, message)


class JsonFetch(Protocol):
    """GET one Brave endpoint and return its decoded JSON object; failures raise ``errors`` classes.

    ``headers`` carries Brave's ``X-Loc-*`` location headers; it is passed only when non-empty, so an
    adapter without header support still serves every call that has no location.
    """

    async def __call__(
        self, path: str, params: Params, *, deadline: float | None, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Fetch ``path`` with ``params`` before ``deadline`` (a time on the caller's clock)."""
        ...


class StreamPost(Protocol):
    """POST a JSON body and yield each server-sent event's data as it arrives (a JSON answer: its body, once);
    non-2xx, or an event or stream over its byte cap, raises ``errors`` classes."""

    def __call__(self, path: str, body: dict[str, Any], *, deadline: float | None) -> AsyncIterator[str]:
        """Start the request; iteration yields event data until the upstream closes the stream."""
        ...


@dataclass
class CallFacts:
    """What the per-call log line reports, filled in by the use cases as they learn it."""

    search_type: str | None = None
    cached: bool | None = None
    attempts: int = 0
    upstream_status: int | None = None
    deadline: float | None = None  # client-clock time by which the call must end
    provider: str | None = None  # who answered (or failed), when a use case knows
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Call:
    """What a run gets besides its arguments and ports: identity, deadline, the log facts, progress and peers."""

    trace_id: str
    deadline: float  # on the ports' clock
    facts: CallFacts
    tools: tuple[ToolSpec[Any, Any], ...] = ()  # the enabled tools (help and status describe them)
    progress: Progress | None = None


@dataclass(frozen=True)
class CliShape:
    """How the command line shows a tool: its sub-command, the field given positionally, renamed options."""

    command: str
    help: str
    positional: str | None = None  # the field given without an option ("query", "url"); None: options only
    positional_list: str | None = None  # the list field several positional values fill instead ("urls")
    optional_positional: bool = False  # e.g. summarize: a query, or --key instead
    options: Mapping[str, str] = field(default_factory=dict)  # field -> option when not --field-name
    hidden: tuple[str, ...] = ()  # fields not offered on the command line (debug switches)
    comma_lists: tuple[str, ...] = ()  # list fields also written comma-separated ("web,news"); any list takes JSON
    aliases: tuple[str, ...] = ()  # older names of the command (the skill's "web" for search)


Run = Callable[[ArgsT, "Ports", Call], Awaitable[tuple[OutT, str]]]


@dataclass(frozen=True)
class ToolSpec(Generic[ArgsT, OutT]):
    """One tool, declared once in its use-case module."""

    name: str
    title: str
    description: str  # one short paragraph: the model pays for it on every turn
    help: str  # the help tool's paragraph for this tool
    guide: str  # one line for the server's instructions: when an agent should use it
    input_model: type[ArgsT]
    run: Run[ArgsT, OutT]
    cli: CliShape
    library: str  # the ``BraveSearch`` method that runs it
    endpoints: tuple[Endpoint, ...] = ()  # Brave endpoints it calls (status: what the plan was seen to allow)
    needs_brave: bool = False  # a Brave-only tool: hidden when Brave is not a configured provider
    default_enabled: bool = True
    deadline: Callable[[ArgsT, Settings], float] | None = None  # own deadline (seconds) instead of the default
    annotations: Mapping[str, bool] = field(default_factory=lambda: dict(READ_ONLY))


@dataclass
class Ports:
    """What the composition root hands every use case, once per process: settings, the client, time."""

    settings: Settings
    client: BraveClient
    clock: Clock
    sleep: Sleep
    pages: PageMemo
    open_reader: Callable[[], UrlReader]  # builds read_url's safe page reader, over the state backend
    chain: FallbackChain | None = None  # the provider chain when more than Brave is configured
    started_at: float = 0.0
    observer: Observer = field(default_factory=Observer)  # metrics and traces (observe.py); records nothing by default

    @cached_property
    def reader(self) -> UrlReader:
        """read_url's reader, built on the first read: a process that only searches never imports its fetching
        stack (httpcore2, h11, the fetch and extract modules)."""
        return self.open_reader()

    def rendering(self) -> dict[str, Any]:
        """read_url's browser for app shells: available or why not, which one, running (nothing is launched)."""
        reader: UrlReader | None = self.__dict__.get("reader")
        if reader is not None and reader.renderer is not None:
            return reader.renderer.describe()
        from brave_search_mcp.reader.browser_find import find_browser

        choice = find_browser(self.settings.read_browser)
        return {"available": choice.available, "browser": choice.executable, "found_by": choice.source,
                "reason": choice.reason, "running": False}  # fmt: skip

    async def aclose(self) -> None:
        """Close what read_url's reader opened (its browser), if a read built it: the process is stopping."""
        reader: UrlReader | None = self.__dict__.get("reader")
        if reader is not None:
            await reader.aclose()

    def json_fetch(self, facts: CallFacts) -> JsonFetch:
        """GET through the client (cached, throttled, retried); location headers are part of the cache key."""
        client = self.client

        async def fetch(
            path: str, params: Params, *, deadline: float | None, headers: Mapping[str, str] | None = None
        ) -> dict[str, Any]:
            extra = tuple(sorted((headers or {}).items()))
            try:
                response = await client.get(Endpoint(path), params, deadline=deadline, headers=extra)
            except BraveSearchError as exc:
                facts.attempts += int(exc.details.get("attempts", 0))  # requests sent for it, as the envelope says
                raise
            facts.cached = response.cached if facts.cached is None else facts.cached and response.cached
            facts.attempts += response.attempts
            facts.upstream_status = response.status
            return response.data

        return fetch

    def stream_post(self, facts: CallFacts) -> StreamPost:
        """POST and stream through the client (admitted like every request, never cached or retried)."""
        client = self.client

        def sent() -> None:
            facts.attempts += 1

        def post(path: str, body: dict[str, Any], *, deadline: float | None) -> AsyncIterator[str]:
            return client.stream_post(Endpoint(path), body, deadline=deadline, on_send=sent)

        return post


class _Stamped(Protocol):
    """An envelope whose meta carries the plan figures."""

    @property
    def meta(self) -> CallMeta:
        """The call's meta."""
        ...


StampedT = TypeVar("StampedT", bound=_Stamped)


async def over_brave_json(
    build: Callable[..., Awaitable[tuple[StampedT, str]]], args: BaseModel, ports: Ports, call: Call
) -> tuple[StampedT, str]:
    """A Brave-only use case over JSON GETs: the one client, the call's deadline, the plan figures stamped."""
    envelope, text = await build(
        args, ports.json_fetch(call.facts), deadline=call.deadline, trace_id=call.trace_id,
        server_version=__version__, clock=ports.clock,
    )  # fmt: skip
    envelope.meta.rate_limit = rate_limit_meta(ports.client.last_rate_limit)
    return envelope, text
