"""Rendering end to end: the stdio server renders an app shell with the system Chromium, says so in ``status``, and
closes the browser when it stops; with rendering off the same page answers its HTML with a warning that says how."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from testkit.browsers import alive, browser_processes
from testkit.sites import FakeSite
from testkit.stdio import stdio_server
from tests.reader.chromium import CHROMIUM
from tests.reader.e2e import read_tool, reader_env
from tests.reader.test_render_browser import DOC, DRAWN

pytestmark = pytest.mark.anyio


@pytest.fixture
def site() -> Iterator[FakeSite]:
    with FakeSite(host="127.0.0.2") as running:  # the opted-in site
        running.page("/app", DRAWN)
        running.page("/api/doc", DOC, content_type="application/json")
        yield running


async def status(session: Any) -> dict[str, Any]:
    reply = await session.call("tools/call", {"name": "brave_web_search_status", "arguments": {}})
    found: dict[str, Any] = reply["result"]["structuredContent"]
    return found


async def test_the_server_renders_a_shell_reports_its_browser_and_closes_it(site: FakeSite) -> None:
    async with stdio_server(reader_env(BRAVE_SEARCH_READ_BROWSER=CHROMIUM)) as session:
        before = (await status(session))["rendering"]
        assert before["available"] is True and before["browser"] == CHROMIUM and before["running"] is False
        result = await read_tool(session, url=site.url("/app"))
        envelope = result["structuredContent"]
        assert envelope["rendered"] is True and envelope["warnings"] == []
        assert "```python\nimport widget" in envelope["content"]
        after = await status(session)
        assert after["rendering"]["running"] is True and after["rendering"]["launches"] == 1
        text = (await session.call("tools/call", {"name": "brave_web_search_status", "arguments": {}}))["result"]
        assert f"rendering: {CHROMIUM} (BRAVE_SEARCH_READ_BROWSER; running," in text["content"][0]["text"]
        browsers = browser_processes(session.process.pid)
        assert len(browsers) == 1  # one browser for the process
    assert alive(browsers) == []  # closed before the server exited


async def test_without_a_browser_a_shell_answers_its_html_and_says_how_to_render_it(site: FakeSite) -> None:
    async with stdio_server(reader_env(BRAVE_SEARCH_READ_BROWSER="off")) as session:
        rendering = (await status(session))["rendering"]
        assert rendering["available"] is False and "turned off" in rendering["reason"]
        result = await read_tool(session, url=site.url("/app"))
        envelope = result["structuredContent"]
        assert envelope["rendered"] is False
        (warning,) = envelope["warnings"]
        assert warning["code"] == "JAVASCRIPT_NOT_RENDERED" and "BRAVE_SEARCH_READ_BROWSER=off" in warning["message"]
        assert "! JAVASCRIPT_NOT_RENDERED:" in result["content"][0]["text"]
