"""read_url end to end: a real stdio server and the real CLI reading pages from real local sites the test starts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.sites import FakeSite, Reply
from testkit.sites.pages import page
from testkit.stdio import stdio_server
from tests.reader.e2e import read_tool, reader_env

pytestmark = pytest.mark.anyio
HOSTS_PATCH = Path(__file__).resolve().parents[2] / "testkit" / "sites" / "hosts"


@pytest.fixture
def site() -> Iterator[FakeSite]:
    with FakeSite(host="127.0.0.2") as running:  # the opted-in site
        yield running


@pytest.fixture
def internal() -> Iterator[FakeSite]:
    with FakeSite(host="127.0.0.1") as running:  # loopback that is NOT opted in
        yield running


async def test_every_content_type_reads_through_the_stdio_server_without_a_brave_key(site: FakeSite) -> None:
    site.page("/article", page("article.html"))
    site.page("/docs", page("docs.html"))
    site.page("/paper.pdf", page("paper.pdf"), content_type="application/pdf")
    site.page("/notes.txt", "Plain notes.\nSecond line.", content_type="text/plain; charset=utf-8")
    site.page("/data.json", '{"name": "ganymede", "moons": 0}', content_type="application/json")
    site.page("/readme.md", "# Readme\n\nSome *markdown* here.", content_type="text/markdown")
    site.page("/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(64), content_type="image/png")
    async with stdio_server(reader_env()) as session:
        listed = await session.call("tools/list")
        assert "read_url" in [tool["name"] for tool in listed["result"]["tools"]]
        for path, expected in [
            ("/article", None), ("/docs", "```"), ("/paper.pdf", "queue"), ("/notes.txt", "Second line."),
            ("/data.json", "ganymede"), ("/readme.md", "# Readme"),
        ]:  # fmt: skip
            result = await read_tool(session, url=site.url(path))
            assert not result["isError"], (path, result)
            envelope = result["structuredContent"]
            assert envelope["content"] and envelope["meta"]["provider"] == "web", path
            if expected:
                assert expected in envelope["content"], path
        refused = await read_tool(session, url=site.url("/logo.png"))
    assert refused["isError"]
    error = refused["structuredContent"]["error"]
    assert error["code"] == "UNSUPPORTED_CONTENT" and "image/png" in error["message"]


async def test_refusals_end_to_end_redirect_to_loopback_and_a_name_that_resolves_privately(
    site: FakeSite, internal: FakeSite
) -> None:
    internal.page("/admin", "secret")
    site.redirect("/go", internal.url("/admin"))
    env = reader_env(PYTHONPATH=str(HOSTS_PATCH), TESTKIT_FAKE_HOSTS="intranet.example=10.1.2.3")
    async with stdio_server(env) as session:
        redirected = await read_tool(session, url=site.url("/go"))
        private = await read_tool(session, url="http://intranet.example/wiki")
        metadata = await read_tool(session, url="http://169.254.169.254/latest/meta-data/")
        scheme = await read_tool(session, url="file:///etc/passwd")
    for result in (redirected, private, metadata, scheme):
        assert result["isError"]
        assert result["structuredContent"]["error"]["code"] == "FETCH_BLOCKED"
        assert result["structuredContent"]["error"]["retryable"] is False
    assert "intranet.example resolves to a private address" in private["structuredContent"]["error"]["message"]
    assert internal.count("/admin") == 0  # the redirect target was never contacted


async def test_paging_to_the_end_of_a_long_page_reuses_one_fetch_and_bad_bytes_never_break_it(site: FakeSite) -> None:
    paragraphs = "".join(f"<h2>Part {n}</h2><p>{'word ' * 300}ending {n}.</p>" for n in range(40))
    site.page("/long", f"<html><head><title>Long</title></head><body><article>{paragraphs}</article></body></html>")
    said = b"<p>This paragraph was saved as Latin-1 but served as UTF-8: caf\xe9, na\xefve, \xff\xfe broken \x80.</p>"
    bad_bytes = b"<html><head><title>Mislabelled</title></head><body><article><h1>Bytes</h1>" + said * 5 + b"</article>"
    site.route("/bad", Reply(body=bad_bytes, content_type="text/html; charset=utf-8"))
    async with stdio_server(reader_env()) as session:
        parts: list[dict[str, Any]] = []
        start: int | None = 0
        while start is not None and len(parts) < 60:
            result = await read_tool(session, url=site.url("/long"), start_char=start, max_chars=4000)
            assert not result["isError"], result
            parts.append(result["structuredContent"])
            start = parts[-1].get("next_start_char")  # absent on the last part
        bad = await read_tool(session, url=site.url("/bad"))
    assert start is None and len(parts) > 5
    assert parts[0]["headings"] and "ending 39." in parts[-1]["content"]
    assert [p["meta"]["cached"] for p in parts] == [False] + [True] * (len(parts) - 1)
    assert site.count("/long") == 1  # every later part came from the cached document
    assert sum(p["end_char"] - p["start_char"] for p in parts) == parts[0]["total_chars"]
    assert not bad["isError"] and "broken" in bad["structuredContent"]["content"]
    assert "Traceback" not in json.dumps(bad)


def test_the_cli_reads_a_page_and_refuses_what_it_must(site: FakeSite) -> None:
    site.page("/article", page("article.html"))
    command = [sys.executable, "-m", "brave_search_mcp", "read"]
    ok = subprocess.run([*command, site.url("/article"), "--max-chars", "800"], env=reader_env(), capture_output=True,
                        text=True, timeout=60, check=False)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("# ") and "URL: " + site.url("/article") in ok.stdout
    as_json = subprocess.run([*command, site.url("/article"), "--json", "--format", "text"], env=reader_env(),
                             capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    envelope = json.loads(as_json.stdout)
    assert envelope["format"] == "text" and "```" not in envelope["content"]
    refused = subprocess.run([*command, "http://localhost:1/x"], env=reader_env(), capture_output=True, text=True,
                             timeout=60, check=False)  # fmt: skip
    assert refused.returncode == 1 and "FETCH_BLOCKED" in refused.stderr


async def test_read_url_is_hidden_like_any_tool_when_disabled() -> None:
    async with stdio_server(reader_env(BRAVE_SEARCH_DISABLED_TOOLS="read_url")) as session:
        listed = await session.call("tools/list")
    assert "read_url" not in [tool["name"] for tool in listed["result"]["tools"]]


async def test_a_failing_site_is_named_not_brave(site: FakeSite) -> None:
    site.route("/down", Reply(status=503))
    async with stdio_server(reader_env()) as session:
        result = await read_tool(session, url=site.url("/down"))
    envelope = result["structuredContent"]
    assert envelope["meta"]["provider"] == "web" and envelope["error"]["code"] == "UPSTREAM_ERROR"
    text = result["content"][0]["text"]
    assert "127.0.0.2" in text and "Brave" not in text  # the site is named; the advice speaks of the site
