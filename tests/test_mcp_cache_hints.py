"""The tool list never changes while the server runs: it says so (cache hint, listChanged false), hints kept."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import ListToolsResult

from brave_search_mcp.faces.mcp_server import TOOLS_LIST_TTL_MS
from brave_search_mcp.tools.registry import all_tools
from testkit.brave.brave import FakeBrave
from testkit.in_memory import mcp_client
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio

TOOL_NAMES = tuple(tool.name for tool in all_tools())
SETUPS: dict[str, dict[str, Any]] = {
    "default": {},
    "ui widgets": {"ui": True},
    "two tools": {"enabled_tools": ("brave_web_search", "brave_web_search_status")},
}


def _assert_annotated(listed: ListToolsResult, names: tuple[str, ...]) -> None:
    assert [tool.name for tool in listed.tools] == list(names)
    for tool in listed.tools:
        hints = tool.annotations
        assert hints is not None, tool.name
        assert tool.title and hints.title == tool.title
        assert (hints.read_only_hint, hints.idempotent_hint, hints.open_world_hint) == (True, True, True)
        assert hints.destructive_hint is False


@pytest.mark.parametrize("setup", list(SETUPS))
async def test_modern_sessions_get_a_public_ttl_and_no_list_changed(fake: FakeBrave, setup: str) -> None:
    settings = make_settings(**SETUPS[setup])
    async with mcp_client(settings, fake.mock_transport(), mode="auto") as (client, _):
        listed = await client.list_tools()
        capabilities = client.server_capabilities
    assert (listed.ttl_ms, listed.cache_scope) == (TOOLS_LIST_TTL_MS, "public")
    assert capabilities is not None and capabilities.tools is not None
    assert capabilities.tools.list_changed is False  # there is no change to listen for
    _assert_annotated(listed, tuple(settings.enabled_tools or TOOL_NAMES))


@pytest.mark.parametrize("setup", list(SETUPS))
async def test_legacy_sessions_say_list_changed_false_and_keep_the_hints(fake: FakeBrave, setup: str) -> None:
    settings = make_settings(**SETUPS[setup])
    async with mcp_client(settings, fake.mock_transport(), mode="legacy") as (client, _):
        listed = await client.list_tools()
        capabilities = client.server_capabilities
    assert capabilities is not None and capabilities.tools is not None
    assert capabilities.tools.list_changed is False
    _assert_annotated(listed, tuple(settings.enabled_tools or TOOL_NAMES))


async def test_ui_tools_keep_their_widget_meta_beside_the_hints(fake: FakeBrave) -> None:
    async with mcp_client(make_settings(ui=True), fake.mock_transport(), mode="auto") as (client, _):
        listed = await client.list_tools()
    web = next(tool for tool in listed.tools if tool.name == "brave_web_search")
    assert web.meta is not None and web.meta["ui"]["resourceUri"].startswith("ui://")
    assert web.annotations is not None and web.annotations.read_only_hint is True


def test_the_ttl_is_an_hour() -> None:
    # long enough that a host never lists twice in a working session; short enough that a restarted server
    # with other settings or a new version is seen within the hour by a host that kept the list
    assert TOOLS_LIST_TTL_MS == 3_600_000
