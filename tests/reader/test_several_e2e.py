"""read_url's newer arguments end to end: several pages, a page's links, the policy on a shared cache, bad URLs,
through the real stdio server and the real CLI, against real local sites."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.sites import FakeSite
from testkit.sites.pages import page
from testkit.stdio import stdio_server, user_dirs
from tests.reader.e2e import read_tool, reader_env

pytestmark = pytest.mark.anyio
DOCS = "/en/3.2/retries.html"
CLI = [sys.executable, "-m", "brave_search_mcp", "read"]


@pytest.fixture
def site() -> Iterator[FakeSite]:
    with FakeSite(host="127.0.0.2") as running:  # the opted-in site
        site_pages(running)
        yield running


@pytest.fixture
def internal() -> Iterator[FakeSite]:
    with FakeSite(host="127.0.0.1") as running:  # loopback that is NOT opted in
        running.page("/secret", page("article.html"))
        yield running


def site_pages(site: FakeSite) -> None:
    site.page("/article", page("article.html"))
    site.page(DOCS, page("docs.html"))


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


async def test_three_urls_one_refused_through_the_stdio_server(site: FakeSite, internal: FakeSite) -> None:
    urls = [site.url("/article"), internal.url("/secret"), site.url(DOCS)]
    async with stdio_server(reader_env()) as session:
        result = await read_tool(session, urls=urls, max_chars=2500)
    assert not result["isError"], result
    pages = result["structuredContent"]["pages"]
    assert [p.get("error", {}).get("code") for p in pages] == [None, "FETCH_BLOCKED", None]
    assert pages[0]["title"] == "Why the river town rebuilt its wooden bridge" and pages[2]["title"] == "Retry policies"
    assert len(pages[0]["content"]) + len(pages[2]["content"]) <= 2500
    assert internal.requests == []
    text = result["content"][0]["text"]
    assert text.startswith("Read 2 of 3 pages within max_chars 2500 (shared); 1 failed.")


def test_three_urls_one_refused_through_the_cli(site: FakeSite, internal: FakeSite) -> None:
    done = _cli(site.url("/article"), internal.url("/secret"), site.url(DOCS), "--max-chars", "2500", env=reader_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Read 2 of 3 pages within max_chars 2500 (shared); 1 failed.")
    assert "--- page 2 of 3 ---" in done.stdout and "FETCH_BLOCKED" in done.stdout
    one = _cli(site.url("/article"), "--json", env=reader_env())  # one URL is still a one-page read
    assert json.loads(one.stdout)["title"] == "Why the river town rebuilt its wooden bridge"


async def test_same_site_links_of_a_docs_page_through_the_stdio_server_and_the_cli(site: FakeSite) -> None:
    docs = site.url("/en/3.2/")
    async with stdio_server(reader_env()) as session:
        result = await read_tool(session, url=site.url(DOCS), links="same_site")
    links = result["structuredContent"]["links"]
    assert [link["url"] for link in links] == [docs + "queues.html#ordering", docs + "dead-letters.html",
                                               docs + "scheduling.html", docs + "api.html#quayside.Retry"]  # fmt: skip
    done = _cli(site.url(DOCS), "--links", "same_site", "--format", "text", env=reader_env())
    assert done.returncode == 0, done.stderr
    assert f"Links (in the content, on this site): 4.\n- queue: {docs}queues.html#ordering" in done.stdout


async def test_bad_urls_are_invalid_arguments_and_localhost_with_a_dot_is_refused(site: FakeSite) -> None:
    async with stdio_server(reader_env()) as session:
        garbage = await read_tool(session, url="not a url")
        dotted = await read_tool(session, url="http://localhost./admin")
    assert garbage["structuredContent"]["error"]["code"] == "INVALID_ARGUMENT"
    assert dotted["structuredContent"]["error"]["code"] == "FETCH_BLOCKED"


def test_a_page_cached_by_an_allowed_process_is_refused_to_one_without_the_allowance(
    internal: FakeSite, tmp_path: Path
) -> None:
    """Two real processes on one user's state (the default SQLite files): the cache is shared, the policy is not."""
    shared = {**reader_env(), **user_dirs(tmp_path)}
    del shared["BRAVE_SEARCH_STATE"]  # the shipped default: state and cache shared by the user's processes
    allowed = _cli(internal.url("/secret"), "--json", env={**shared, "BRAVE_SEARCH_READ_ALLOWED_HOSTS": "127.0.0.1"})
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["meta"]["cached"] is False
    again = _cli(internal.url("/secret"), "--json", env={**shared, "BRAVE_SEARCH_READ_ALLOWED_HOSTS": "127.0.0.1"})
    assert json.loads(again.stdout)["meta"]["cached"] is True  # the cache is really shared between the processes
    refused = _cli(internal.url("/secret"), "--json", env={**shared, "BRAVE_SEARCH_READ_ALLOWED_HOSTS": ""})
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"]["code"] == "FETCH_BLOCKED"
    assert internal.count("/secret") == 1
