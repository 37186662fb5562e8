"""A tool declared once: the spec every face reads, and what a handler is given besides its arguments."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from brave_search_mcp.config import Settings
from brave_search_mcp.tools.help import ToolDoc
from brave_search_mcp.usecases.call import CallFacts
from brave_search_mcp.usecases.ports import Progress
from brave_search_mcp.usecases.service import SearchService

ArgsT = TypeVar("ArgsT", bound=BaseModel)


@dataclass
class CallContext:
    """What a handler gets besides its arguments: identity, deadline, the log facts, progress and peers."""

    trace_id: str
    deadline: float  # on the service's clock
    facts: CallFacts
    tools: tuple[ToolSpec[Any], ...]
    progress: Progress | None = None


Handler = Callable[[SearchService, ArgsT, CallContext], Awaitable[tuple[dict[str, Any], str]]]


@dataclass(frozen=True)
class ToolSpec(Generic[ArgsT]):
    """One tool, declared once."""

    name: str
    title: str
    description: str  # one short paragraph: the model pays for it on every turn
    input_model: type[ArgsT]
    handler: Handler[ArgsT]
    help: str  # the help tool's paragraph for this tool
    default_enabled: bool = True
    needs_brave: bool = False  # a Brave-only endpoint: hidden when Brave is not a configured provider
    deadline: Callable[[ArgsT, Settings], float] | None = None  # own deadline (seconds) instead of the default
    annotations: Mapping[str, Any] = field(
        default_factory=lambda: {"read_only": True, "destructive": False, "idempotent": True, "open_world": True}
    )

    def doc(self) -> ToolDoc:
        """What the help use case needs to know of this tool."""
        return ToolDoc(self.name, self.input_model, self.help)
