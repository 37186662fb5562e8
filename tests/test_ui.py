"""The UI layer without a browser: what an Apps host lists and reads, the tools' links, and the widgets' rules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from mcp import Client, MCPError
from mcp.client import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.types import INVALID_PARAMS

from brave_search_mcp import ui
from brave_search_mcp.faces.mcp_server import build_server
from brave_search_mcp.ui import THUMBNAIL_ORIGIN, tool_meta, widgets
from testkit.settings import make_settings
from testkit.ui_host import CSP_META, csp_policy

pytestmark = pytest.mark.anyio
UI_DIR = Path(ui.__file__).parent
APPS_CLIENT = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
URIS = {"ui://brave-search/web.html", "ui://brave-search/places.html"}


def test_tool_meta_links_each_search_tool_to_one_ui_resource() -> None:
    assert tool_meta("brave_web_search") == {"ui": {"resourceUri": "ui://brave-search/web.html"}}
    assert tool_meta("brave_local_search") == {"ui": {"resourceUri": "ui://brave-search/places.html"}}
    for name in ("brave_summarizer", "brave_web_search_help", "brave_web_search_status", "nope"):
        assert tool_meta(name) is None


def test_widget_specs_are_consistent_and_small() -> None:
    specs = widgets()
    assert {s.uri for s in specs} == URIS
    assert len({s.file for s in specs}) == len(specs)
    for spec in specs:
        assert spec.uri.startswith("ui://brave-search/")
        assert 0 < spec.size_bytes < 16_384, f"{spec.file} grew to {spec.size_bytes} bytes"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_host_lists_and_reads_the_widgets(mode: str) -> None:
    async with Client(build_server(make_settings(ui=True)), mode=mode, extensions=[APPS_CLIENT]) as client:
        listed = {r.uri: r for r in (await client.list_resources()).resources}
        assert set(listed) == URIS
        assert {r.mime_type for r in listed.values()} == {APP_MIME_TYPE}
        assert listed["ui://brave-search/web.html"].name == "brave-search-web-widget"
        assert listed["ui://brave-search/web.html"].title == "Brave web results"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        uri = tools["brave_web_search"].meta["ui"]["resourceUri"]  # type: ignore[index]
        assert not (tools["brave_web_search_status"].meta or {}).get("ui")
        (content,) = (await client.read_resource(uri)).contents
        assert content.uri == uri
        assert content.mime_type == APP_MIME_TYPE
        assert content.text.startswith("<!doctype html>")  # type: ignore[union-attr]
        assert "Brave web results" in content.text  # type: ignore[union-attr]
        csp = content.meta["ui"]["csp"]  # type: ignore[index]
        assert csp == {"connectDomains": [], "resourceDomains": [THUMBNAIL_ORIGIN]}
        (places,) = (await client.read_resource("ui://brave-search/places.html")).contents
        assert places.meta["ui"] == {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": True}  # type: ignore[index]


@pytest.mark.parametrize(
    ("enabled", "served"),
    [
        (("brave_web_search", "brave_summarizer"), {"ui://brave-search/web.html"}),
        (("brave_local_search",), {"ui://brave-search/places.html"}),
        (("brave_web_search_help",), set()),
    ],
)
async def test_only_widgets_of_enabled_tools_are_served(enabled: tuple[str, ...], served: set[str]) -> None:
    async with Client(build_server(make_settings(ui=True, enabled_tools=enabled))) as client:
        assert {r.uri for r in (await client.list_resources()).resources} == served


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_without_the_ui_nothing_is_listed_and_nothing_can_be_read(mode: str) -> None:
    async with Client(build_server(make_settings(ui=False)), mode=mode) as client:
        assert (await client.list_resources()).resources == []
        assert (await client.list_resource_templates()).resource_templates == []
        assert all(tool.meta is None for tool in (await client.list_tools()).tools)
        with pytest.raises(MCPError) as caught:
            await client.read_resource("ui://brave-search/web.html")
    assert (caught.value.error.code, caught.value.error.message) == (
        INVALID_PARAMS,
        "Unknown resource: ui://brave-search/web.html",
    )


async def test_reading_an_unknown_ui_uri_is_an_error_not_a_crash() -> None:
    async with Client(build_server(make_settings(ui=True))) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("ui://brave-search/nope.html")
        error = caught.value.error
        assert error.message == "Unknown resource: ui://brave-search/nope.html"
        assert error.data == {"uri": "ui://brave-search/nope.html"}
        assert len((await client.list_resources()).resources) == 2  # still serving


@pytest.mark.parametrize("spec", widgets(), ids=lambda s: s.name)
def test_widget_is_self_contained_with_a_strict_csp(spec: ui.WidgetSpec) -> None:
    html = spec.html()
    match = CSP_META.search(html)
    assert match, "every widget declares its own CSP"
    assert match.group(1) == csp_policy(html, spec.resource_domains), "the CSP pins exactly the served script/style"
    assert "unsafe-inline" not in match.group(1) and "unsafe-eval" not in match.group(1)
    assert not re.search(r"<(script|link|iframe)[^>]+(src|href)=", html), "nothing loaded from elsewhere"
    assert not re.search(r"\son[a-z]+=", html), "no inline event handlers (the CSP hash would block them)"
    assert "innerHTML" not in html and "eval(" not in html, "data is rendered as text only"
    assert "https://" not in html.replace(THUMBNAIL_ORIGIN, "").replace("http://www.w3.org/2000/svg", "")


def test_every_widget_is_served_with_the_one_bridge_inlined() -> None:
    bridge = (UI_DIR / "widgets" / "bridge.js").read_text(encoding="utf-8").rstrip("\n")
    for spec in widgets():
        html = spec.html()
        assert html.count(bridge) == 1, f"{spec.file} is served without the shared bridge"
        assert "/* bridge */" not in html and "{{csp}}" not in html, "no template mark reaches the host"


def test_ui_package_imports_only_the_sdk_and_stdlib() -> None:
    tree = ast.parse((UI_DIR / "__init__.py").read_text(encoding="utf-8"))
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert all(
        name.split(".")[0]
        in {"__future__", "base64", "collections", "dataclasses", "hashlib", "importlib", "re", "typing", "mcp"}
        for name in imported
    )
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree)), "no imports from the package"
