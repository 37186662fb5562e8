"""Issue 43 item 5: the politeness ``read_url`` keeps per host stays in the process's bounded memory, so the shared
state file no longer grows with every site read (a plan row and start rows per host, never pruned: 2,000 hosts
made 778 KB), while each host still gets at most two requests a second."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from brave_search_mcp.reader import UrlReader
from brave_search_mcp.reader.addresses import Resolver
from brave_search_mcp.state.location import open_state
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.sites import FakeSite
from testkit.sites.dns import ScriptedDNS

pytestmark = pytest.mark.anyio

HOSTS = 200
PAGE = "<html><head><title>T</title></head><body><article><p>{}</p></article></body></html>"


def _rows(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        found = {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in ("plans", "starts")}
    conn.close()
    return found


async def test_reading_many_hosts_leaves_the_state_file_as_it_was(tmp_path: Path) -> None:
    clock = FakeClock()
    state_file, cache_file = tmp_path / "state.sqlite3", tmp_path / "cache.sqlite3"
    backend = await open_state(
        None, cache_max_entries=10, default_path=state_file, cache_path=cache_file, clock=clock, sleep=clock.sleep
    )
    hosts = [f"site{n}.test" for n in range(HOSTS)]
    dns: Resolver = ScriptedDNS({host: ["127.0.0.1"] for host in hosts})
    settings = make_settings(read_allowed_hosts=("127.0.0.1/32",), read_cache_ttl_seconds=0)  # the state file alone
    try:
        with FakeSite() as site:
            site.page("/p", PAGE.format("words " * 40))
            site.page("/q", PAGE.format("other words " * 40))
            reader = UrlReader(settings, backend, clock, dns, None, None, clock.sleep)
            await reader.read(site.url("/p").replace("127.0.0.1", hosts[0]))  # the file made, its tables too
            for host in hosts:
                await reader.read(site.url("/q").replace("127.0.0.1", host))
            assert site.count("/q") == HOSTS
            start = clock()
            for path in ("/a", "/b", "/c"):  # one host: still two a second
                site.page(path, PAGE.format(path * 40))
                await reader.read(site.url(path).replace("127.0.0.1", hosts[1]))
            assert clock() - start >= 0.5
    finally:
        await backend.aclose()
    assert _rows(state_file) == {"plans": 0, "starts": 0}
    assert state_file.stat().st_size < 48 * 1024  # its tables, empty (without the fix: 200 hosts, 80 KB)


async def test_the_rows_an_older_version_kept_per_read_host_go_when_the_file_is_opened(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "state.sqlite3"
    backend = await open_state(f"sqlite://{path}", cache_max_entries=10, clock=clock, sleep=clock.sleep)
    await backend.limiter("brave:k", rate=1.0, family="search").acquire()  # a Brave plan and start: kept
    await backend.aclose()
    with sqlite3.connect(path) as conn:
        for n in range(50):
            conn.execute("INSERT INTO plans VALUES (?, '{}')", (f"read:site{n}.test|",))
            conn.execute("INSERT INTO starts VALUES (?, 1.0)", (f"read:site{n}.test|",))
    conn.close()
    backend = await open_state(f"sqlite://{path}", cache_max_entries=10, clock=clock, sleep=clock.sleep)
    await backend.aclose()
    assert _rows(path) == {"plans": 1, "starts": 1}
