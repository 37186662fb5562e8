"""prepare_search as the params tests call it: one web search's arguments in, its warnings and values out."""

from __future__ import annotations

from typing import Any

from brave_search_mcp.brave.params import PreparedSearch
from brave_search_mcp.brave.params import prepare_search as _prepare
from brave_search_mcp.config import Settings
from brave_search_mcp.models.errors import WarningCode
from brave_search_mcp.models.inputs import WebSearchArgs

INLINE = "$discard\n$site=docs.rs"  # an inline goggle
SETTINGS = Settings(max_lines=120, max_bytes=32 * 1024)


def prep(**arguments: Any) -> PreparedSearch:
    arguments.setdefault("query", "hello world")
    return _prepare(WebSearchArgs.model_validate(arguments), SETTINGS)


def codes(prepared: PreparedSearch) -> list[str]:
    return [w.code for w in prepared.warnings]


def values(prepared: PreparedSearch, key: str) -> list[str]:
    return [value for name, value in prepared.params if name == key]


def only(prepared: PreparedSearch, code: WarningCode) -> str:
    messages = [w.message for w in prepared.warnings if w.code == code.value]
    assert len(messages) == 1, prepared.warnings
    return messages[0]
