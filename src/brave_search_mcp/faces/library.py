"""``BraveSearch``: the same throttled, cached, retrying core for Python callers, without MCP."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from typing import Any, TypeVar, cast

import httpx2
from pydantic import SecretStr

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.compose import open_client, other_providers
from brave_search_mcp.config import Settings
from brave_search_mcp.models.answer import AnswerEnvelope
from brave_search_mcp.models.inputs import StatusArgs, SummarizerArgs, WebSearchArgs
from brave_search_mcp.models.llm_context import LlmContextEnvelope
from brave_search_mcp.models.local import LocalEnvelope
from brave_search_mcp.models.search import SearchEnvelope
from brave_search_mcp.models.summary import SummaryEnvelope
from brave_search_mcp.tools.boundary import validate_arguments
from brave_search_mcp.tools.status import build_status
from brave_search_mcp.usecases.answer import AnswerArgs
from brave_search_mcp.usecases.call import CallFacts
from brave_search_mcp.usecases.llm_context import LlmContextArgs
from brave_search_mcp.usecases.local_search import LocalSearchArgs
from brave_search_mcp.usecases.ports import Progress
from brave_search_mcp.usecases.service import SearchService


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
        self._client: BraveClient | None = None
        self._stack: AsyncExitStack | None = None
        self._service: SearchService | None = None

    async def __aenter__(self) -> BraveSearch:
        stack = AsyncExitStack()
        try:
            client = await stack.enter_async_context(open_client(self.settings, transport=self._transport))
            others = other_providers(self.settings, client.shared.backend if client.shared else None)
            for provider in others.values():
                stack.push_async_callback(provider.aclose)
        except BaseException:
            await stack.aclose()
            raise
        self._stack, self._client = stack, client
        self._service = SearchService(self.settings, client, others=others)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        stack, self._stack, self._client, self._service = self._stack, None, None, None
        if stack is not None:
            await stack.aclose()

    @property
    def service(self) -> SearchService:
        """The underlying service (raises if used outside ``async with``)."""
        if self._service is None:
            raise RuntimeError("use BraveSearch inside 'async with'")
        return self._service

    async def web_search(self, query: str, **params: Any) -> SearchEnvelope:
        """Search; ``params`` are ``brave_web_search`` arguments (search_type, max_results, country, ...)."""
        envelope, _ = await self.service.web_search(_validate(WebSearchArgs, {"query": query, **params}))
        return envelope.model_copy(deep=True)  # cache hits share parsed sections; the caller gets its own

    async def summarize(self, query: str | None = None, *, key: str | None = None, **params: Any) -> SummaryEnvelope:
        """A cited summary for ``query`` (one search + polling) or for a ``key`` from a summary search."""
        args = _validate(SummarizerArgs, {"query": query, "key": key, **params})
        envelope, _ = await self.service.summarize(args)
        return envelope

    async def llm_context(self, query: str, **params: Any) -> LlmContextEnvelope:
        """Grounding passages for ``query``; ``params`` are ``brave_llm_context`` arguments (max_chars, ...)."""
        args = validate_arguments(LlmContextArgs, _given({"query": query, **params}))
        envelope, _ = await self.service.run_llm_context(args, _trace_id(), CallFacts())
        return cast(LlmContextEnvelope, envelope)

    async def local(self, query: str, **params: Any) -> LocalEnvelope:
        """Places for ``query``; pass ``location`` or ``latitude``/``longitude`` for place search."""
        args = validate_arguments(LocalSearchArgs, _given({"query": query, **params}))
        envelope, _ = await self.service.run_local(args, _trace_id(), CallFacts())
        return cast(LocalEnvelope, envelope)

    async def answer(self, question: str, *, progress: Progress | None = None, **params: Any) -> AnswerEnvelope:
        """A cited AI answer from Brave Answers (``research=True`` for the long multi-search mode)."""
        args = validate_arguments(AnswerArgs, _given({"question": question, **params}))
        envelope, _ = await self.service.run_answer(args, _trace_id(), CallFacts(), progress)
        return cast(AnswerEnvelope, envelope)

    async def status(self, *, probe_connectivity: bool = False, verbose: bool = False) -> dict[str, Any]:
        """The same report as the status tool."""
        args = StatusArgs(probe_connectivity=probe_connectivity, verbose=verbose)
        return await build_status(self.service, args, "library")


_ArgsT = TypeVar("_ArgsT", WebSearchArgs, SummarizerArgs)


def _given(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def _validate(model: type[_ArgsT], data: dict[str, Any]) -> _ArgsT:
    return validate_arguments(model, _given(data))


def _trace_id() -> str:
    return uuid.uuid4().hex[:16]
