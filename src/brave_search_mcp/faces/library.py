"""``BraveSearch``: the same throttled, cached, retrying core for Python callers, without MCP.

Each method is a typed wrapper over one registry spec (``tests`` check that every tool has one, with
the spec's positional field first and the spec's envelope as its result): arguments are validated by
the tool's own model and the call runs through the same boundary and deadline as an MCP call, but a
failure raises ``BraveSearchError`` instead of returning an error envelope.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import httpx2
from pydantic import SecretStr

from brave_search_mcp.compose import build_tools, open_backend, open_client, open_others
from brave_search_mcp.config import Settings
from brave_search_mcp.models.answer import AnswerEnvelope
from brave_search_mcp.models.llm_context import LlmContextEnvelope
from brave_search_mcp.models.local import LocalEnvelope
from brave_search_mcp.models.read import ReadEnvelope, ReadPagesEnvelope
from brave_search_mcp.models.search import SearchEnvelope
from brave_search_mcp.models.summary import SummaryEnvelope
from brave_search_mcp.tools import help, status
from brave_search_mcp.tools.boundary import ToolBoundary, validate_arguments
from brave_search_mcp.usecases import answer, llm_context, local_search, read_url, summarize, web_search
from brave_search_mcp.usecases.contract import ArgsT, OutT, Progress, ToolSpec


class BraveSearch:
    """Async context manager around one client; methods return envelope models or raise ``BraveSearchError``.

    >>> async with BraveSearch() as brave:                      # key from BRAVE_SEARCH_API_KEY etc.
    ...     result = await brave.web_search("python 3.13 release notes", max_results=5)
    ...     print(result.sections[0].results[0].url)
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        settings: Settings | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        settings = settings or Settings.from_env()
        if api_key is not None:
            settings = settings.model_copy(update={"api_key": SecretStr(api_key), "api_key_source": None})
        self.settings = settings
        self._transport = transport
        self._stack: AsyncExitStack | None = None
        self._tools: ToolBoundary | None = None

    async def __aenter__(self) -> BraveSearch:
        stack = AsyncExitStack()
        try:
            backend = await stack.enter_async_context(open_backend(self.settings))
            client = await stack.enter_async_context(
                open_client(self.settings, transport=self._transport, backend=backend)
            )
            others = await stack.enter_async_context(open_others(self.settings, backend))
            self._tools = build_tools(self.settings, client, others=others, backend=backend)
            stack.push_async_callback(self._tools.ports.aclose)  # the browser, if a read launched one
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        stack, self._stack, self._tools = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    @property
    def tools(self) -> ToolBoundary:
        """The enabled tools (raises if used outside ``async with``)."""
        if self._tools is None:
            raise RuntimeError("use BraveSearch inside 'async with'")
        return self._tools

    async def _run(
        self, spec: ToolSpec[ArgsT, OutT], arguments: dict[str, Any], progress: Progress | None = None
    ) -> OutT:
        tools = self.tools
        tool = tools.spec(spec.name)  # disabled or Brave-only without Brave: the same refusal as over MCP
        args = validate_arguments(spec.input_model, {k: v for k, v in arguments.items() if v is not None})
        out, _ = await tools.execute(tool, args, progress=progress)
        return out  # type: ignore[no-any-return]

    async def web_search(self, query: str, **params: Any) -> SearchEnvelope:
        """Search; ``params`` are ``brave_web_search`` arguments (search_type, max_results, country, ...)."""
        envelope = await self._run(web_search.SPEC, {"query": query, **params})
        return envelope.model_copy(deep=True)  # cache hits share parsed sections; the caller gets its own

    async def summarize(self, query: str | None = None, *, key: str | None = None, **params: Any) -> SummaryEnvelope:
        """A cited summary for ``query`` (one search + polling) or for a ``key`` from a summary search."""
        return await self._run(summarize.SPEC, {"query": query, "key": key, **params})

    async def llm_context(self, query: str, **params: Any) -> LlmContextEnvelope:
        """Grounding passages for ``query``; ``params`` are ``brave_llm_context`` arguments (max_chars, ...)."""
        return await self._run(llm_context.SPEC, {"query": query, **params})

    async def local(self, query: str, **params: Any) -> LocalEnvelope:
        """Places for ``query``; pass ``location`` or ``latitude``/``longitude`` for place search."""
        return await self._run(local_search.SPEC, {"query": query, **params})

    async def answer(self, question: str, *, progress: Progress | None = None, **params: Any) -> AnswerEnvelope:
        """A cited AI answer from Brave Answers (``research=True`` for the long multi-search mode)."""
        return await self._run(answer.SPEC, {"question": question, **params}, progress)

    async def read_url(self, url: str | None = None, **params: Any) -> ReadEnvelope | ReadPagesEnvelope:
        """One part of a web page as markdown (``start_char``, ``max_chars``, ``format``, ``section``, ``links``), or
        with ``urls=[...]`` up to five pages sharing ``max_chars`` (a ``ReadPagesEnvelope``); no quota."""
        return await self._run(read_url.SPEC, {"url": url, **params})

    async def help(self, topic: str = "all") -> dict[str, Any]:
        """The same reference as the help tool (``params``, ``examples``, ``limits``, ``errors`` or ``all``)."""
        return await self._run(help.SPEC, {"topic": topic})

    async def status(self, *, probe_connectivity: bool = False, verbose: bool = False) -> dict[str, Any]:
        """The same report as the status tool."""
        return await self._run(status.SPEC, {"probe_connectivity": probe_connectivity, "verbose": verbose})
