"""The UI is opt-in: without --ui nothing changes on the wire or in start-up; with it, the real server links widgets."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from mcp import Client
from mcp.client import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from brave_search_mcp.faces.mcp_server import build_server
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio
APPS_CLIENT = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})


async def _tools_list(ui: bool) -> list[dict[str, Any]]:
    async with Client(build_server(make_settings(ui=ui))) as client:
        return [
            tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in (await client.list_tools()).tools
        ]


async def test_without_the_flag_tools_list_has_no_ui_and_with_it_only_meta_is_added() -> None:
    plain, with_ui = await _tools_list(False), await _tools_list(True)
    assert "ui://" not in json.dumps(plain)
    assert [t["name"] for t in plain] == [t["name"] for t in with_ui]
    by_name = {t["name"]: t for t in with_ui}
    assert by_name["brave_web_search"]["_meta"] == {"ui": {"resourceUri": "ui://brave-search/web.html"}}
    for before, after in zip(plain, with_ui, strict=True):  # nothing else about a tool changes
        assert {k: v for k, v in after.items() if k != "_meta"} == before


async def test_with_the_flag_the_widget_is_served_to_an_apps_host() -> None:
    async with Client(build_server(make_settings(ui=True)), extensions=[APPS_CLIENT]) as client:
        listed = {r.uri: r for r in (await client.list_resources()).resources}
        assert "ui://brave-search/web.html" in {str(uri) for uri in listed}
        read = await client.read_resource("ui://brave-search/web.html")
    content = read.contents[0].model_dump()
    assert content["mimeType" if "mimeType" in content else "mime_type"] == APP_MIME_TYPE
    assert "<html" in content["text"].lower()


def test_a_server_started_without_the_flag_never_imports_the_ui_package() -> None:
    code = (
        "import sys; from brave_search_mcp.faces.mcp_server import build_server; "
        "from brave_search_mcp.config import Settings;"
        "build_server(Settings()); print('brave_search_mcp.ui' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


async def test_the_help_tool_says_whether_widgets_are_served_and_their_size() -> None:
    for ui in (False, True):
        async with Client(build_server(make_settings(ui=ui))) as client:
            result = await client.call_tool("brave_web_search_help", {"topic": "limits"})
        assert result.structured_content is not None
        entry = result.structured_content["limits"]["ui"]
        assert entry["enabled"] is ui
        if ui:
            assert {w["uri"] for w in entry["widgets"]} >= {"ui://brave-search/web.html"}
            assert all(0 < w["bytes"] < 16_384 for w in entry["widgets"])
        else:
            assert "--ui" in entry["how"]
