"""Paging, sections, the outline and the cache: what an agent sees when a page is longer than one part."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import anyio
import pytest

from brave_search_mcp.models.errors import FetchBlocked, InvalidArgument, WarningCode
from brave_search_mcp.reader import Document, UrlReader, render_read
from brave_search_mcp.reader.addresses import system_resolver
from brave_search_mcp.reader.document import open_fence
from brave_search_mcp.reader.reading import cache_key
from brave_search_mcp.state.location import open_state
from testkit.settings import make_settings
from testkit.sites import FakeSite, Reply
from testkit.sites.dns import ScriptedDNS
from testkit.sites.pages import big_page, page

from .conftest import MakeReader, read


def _doc(markdown: str, kind: str = "markdown") -> Document:
    return Document(
        url="https://x.example/a",
        final_url="https://x.example/a",
        kind=kind,  # type: ignore[arg-type]
        content_type="text/markdown",
        markdown=markdown,
        title="A page",
    )


LONG = "\n\n".join(
    f"## Part {n}\n\n"
    + " ".join(f"word{n}-{i}" for i in range(120))
    + f"\n\n```python\ndef f{n}():\n\n    return {n}\n```"
    for n in range(1, 31)
)


def _strip_decorations(part: str, start: int, body: str) -> str:
    """A part's content without the fence lines paging added (reopened at the start, closed at the end)."""
    reopened = open_fence(body, start) if start else None
    if reopened is not None:
        part = part[len(reopened) + 1 :]
    return part


def test_paging_to_the_end_returns_every_character_once() -> None:
    doc = _doc(LONG)
    pieces: list[str] = []
    start: int | None = 0
    calls = 0
    while start is not None:
        answer, text = render_read(doc, start_char=start, max_chars=1000)
        body = answer["content"]
        if answer["next_start_char"] is not None:
            assert f"start_char={answer['next_start_char']}" in text
            assert answer["next_start_char"] - start <= 1000
            still_open = open_fence(LONG, answer["next_start_char"])
            if still_open is not None:
                assert body.endswith("\n```")  # closed, so the part is valid markdown
                body = body[: -len("\n```")]
        pieces.append(_strip_decorations(body, start, LONG) if start else body)
        start = answer["next_start_char"]
        calls += 1
    joined = "".join(pieces)
    assert joined.replace("\n", "") == LONG.replace("\n", "")
    assert calls >= len(LONG) // 1000
    assert answer["total_chars"] == len(LONG)


def test_a_cut_code_block_is_reopened_with_its_language() -> None:
    doc = _doc("Intro.\n\n```python\n" + "\n".join(f"line_{i} = {i}" for i in range(200)) + "\n```\n\nAfter.")
    first, _ = render_read(doc, max_chars=600)
    assert first["content"].startswith("Intro.\n\n```python\nline_0 = 0")
    assert first["content"].endswith("\n```")
    second, _ = render_read(doc, start_char=first["next_start_char"], max_chars=600)
    assert second["content"].startswith("```python\nline_")


def test_parts_end_at_a_paragraph_or_word_never_mid_word() -> None:
    doc = _doc(" ".join(f"token{i}" for i in range(2000)))
    answer, _ = render_read(doc, max_chars=700)
    assert answer["content"].endswith(" ")
    assert answer["content"].split()[-1].startswith("token")


def test_the_outline_comes_first_only_when_the_page_is_cut() -> None:
    doc = _doc(LONG)
    first, text = render_read(doc, max_chars=4000)
    outline_at = text.index("Outline (pass a heading as section")
    assert outline_at < text.index(first["content"])
    assert "\n- Part 1\n" in text and "\n- Part 30\n" in text  # a quarter of 4000 holds all 30
    _, tight = render_read(doc, max_chars=1000)
    assert "\n- Part 1\n" in tight and "more headings" in tight and "Part 30" not in tight.split("## Part 1")[0]
    _, later_text = render_read(doc, start_char=first["next_start_char"], max_chars=4000)
    assert "Outline" not in later_text
    short = _doc("# Small\n\nJust this.\n\n## End\n\nBye.")
    _, short_text = render_read(short)
    assert "Outline" not in short_text
    assert [h["text"] for h in first["headings"]][:3] == ["Part 1", "Part 2", "Part 3"]


def test_a_section_is_its_heading_up_to_the_next_of_the_same_level() -> None:
    markdown = "# Top\n\nintro\n\n## Install\n\npip it\n\n### From source\n\nbuild\n\n## Use\n\nrun"
    answer, text = render_read(_doc(markdown), section="install")
    assert answer["content"] == "## Install\n\npip it\n\n### From source\n\nbuild"
    assert answer["section"] == "Install" and "Section: Install" in text
    partial, _ = render_read(_doc(markdown), section="source")
    assert partial["content"] == "### From source\n\nbuild"


def test_an_unknown_section_lists_the_headings() -> None:
    with pytest.raises(InvalidArgument) as caught:
        render_read(_doc("# A\n\n## B\n\ntext"), section="Z")
    assert caught.value.field == "section"
    assert '"A", "B"' in caught.value.message


def test_start_char_past_the_end_is_refused_with_the_length() -> None:
    with pytest.raises(InvalidArgument) as caught:
        render_read(_doc("short"), start_char=5)
    assert caught.value.details["total_chars"] == 5 and caught.value.field == "start_char"


def test_max_chars_is_clamped_with_a_warning() -> None:
    answer, text = render_read(_doc(LONG), max_chars=10)
    assert answer["warnings"][0]["code"] == WarningCode.OUTPUT_LIMIT_CLAMPED.value
    assert answer["end_char"] <= 500
    assert "! OUTPUT_LIMIT_CLAMPED" in text
    big, _ = render_read(_doc(LONG * 3), max_chars=10**9)
    assert big["end_char"] <= 50_000


def test_text_format_drops_the_marks_but_keeps_code() -> None:
    doc = _doc(
        "# T\n\nSee **this** [link](https://e.x) and `code`.\n\n> quoted\n\n```py\n  x = 1\n```\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |"
    )
    answer, text = render_read(doc, format="text")
    assert answer["content"] == "T\n\nSee this link and code.\n\nquoted\n\n  x = 1\n\na | b\n1 | 2"
    assert text.startswith("A page\nURL:")


def test_the_document_survives_the_cache_round_trip() -> None:
    doc = Document(
        url="u",
        final_url="f",
        kind="pdf",
        content_type="application/pdf",
        markdown="## Page 1\n\nx",
        title="T",
        site=None,
        published="2025-01-01",
        truncated=True,
        notes=("one page unreadable",),
    )
    assert Document.from_bytes(doc.to_bytes()) == doc
    assert Document.from_bytes(b"not json") is None
    assert Document.from_bytes(b'{"v": 99}') is None
    answer, text = render_read(doc)
    assert answer["warnings"][0]["code"] == WarningCode.PAGE_INCOMPLETE.value
    assert "one page unreadable" in text


@pytest.mark.anyio
async def test_paging_a_long_page_fetches_it_once(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/guide", big_page(300_000))
    reader = make_reader()
    start: int | None = 0
    parts = 0
    total = 0
    while start is not None:
        answer, _ = await read(reader, site.url("/guide"), start_char=start, max_chars=50_000)
        assert answer["cached"] is (parts > 0)
        total = answer["total_chars"]
        start = answer["next_start_char"]
        parts += 1
    assert parts >= 3 and total > 100_000
    assert site.count("/guide") == 1
    assert answer["end_char"] == total


@pytest.mark.anyio
async def test_sections_of_a_cached_page_cost_no_request(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/retries.html", page("docs.html"))
    reader = make_reader()
    await read(reader, site.url("/retries.html"))
    answer, _ = await read(reader, site.url("/retries.html"), section="Giving up early")
    assert answer["content"].startswith("## Giving up early") and "Inspecting dead letters" in answer["content"]
    assert "See also" not in answer["content"]
    assert site.count("/retries.html") == 1


@pytest.mark.anyio
async def test_no_store_pages_are_fetched_every_time(make_reader: MakeReader, site: FakeSite) -> None:
    body = "<html><body><article><p>" + "private balance " * 40 + "</p></article></body></html>"
    site.route("/account", Reply(body=body.encode(), headers={"Cache-Control": "private, no-store"}))
    reader = make_reader()
    first, _ = await read(reader, site.url("/account"))
    second, _ = await read(reader, site.url("/account"))
    assert first["cached"] is False and second["cached"] is False
    assert site.count("/account") == 2


@pytest.mark.anyio
async def test_a_damaged_page_in_the_shared_cache_is_dropped_and_stored_afresh(site: FakeSite, tmp_path: Path) -> None:
    """A cached page that no longer decodes (a damaged file, an older layout) is dropped and read again, and the
    fresh copy is stored: the next read is a hit again (it used to go to the site on every read until the entry
    expired). Status names the drop. Real time: a fake one would run away while the page is fetched for real (the
    lease's renewal sleeps on it); nothing here waits."""
    site.page("/p", "<html><body><article><p>" + "Fresh words. " * 40 + "</p></article></body></html>")
    path = tmp_path / "s.db"
    backend = await open_state(f"sqlite://{path}", cache_max_entries=10, clock=time.monotonic, sleep=anyio.sleep)
    try:
        settings = make_settings(read_allowed_hosts=("127.0.0.1",))
        reader = UrlReader(settings, backend, time.monotonic, system_resolver, None, None, anyio.sleep)
        assert not (await reader.read(site.url("/p"))).cached
        await backend.settle()
        with sqlite3.connect(path) as other:
            assert other.execute("UPDATE cache SET value = ?", (b'{"v": "an older layout"}',)).rowcount == 1
        again = await reader.read(site.url("/p"))
        assert not again.cached and "Fresh words." in again.document.markdown
        await backend.settle()
        assert (await reader.read(site.url("/p"))).cached
        assert site.count("/p") == 2
        assert backend.health()["dropped"]["last"].startswith("cached answer")
    finally:
        await backend.aclose()


@pytest.mark.anyio
async def test_the_final_url_after_a_redirect_is_cached_too(make_reader: MakeReader, site: FakeSite) -> None:
    site.redirect("/old", "/new", status=301)
    site.page("/new", "<html><body><article><p>" + "moved content " * 40 + "</p></article></body></html>")
    reader = make_reader()
    await read(reader, site.url("/old"))
    again, _ = await read(reader, site.url("/new"))
    assert again["cached"] is True
    assert site.count("/new") == 1 and site.count("/old") == 1
    assert cache_key(site.url("/new#part")) == cache_key(site.url("/new"))


@pytest.mark.anyio
async def test_a_zero_ttl_never_caches(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/p", "<html><body><article><p>" + "fresh " * 60 + "</p></article></body></html>")
    reader = make_reader(read_cache_ttl_seconds=0)
    await read(reader, site.url("/p"))
    await read(reader, site.url("/p"))
    assert site.count("/p") == 2


@pytest.mark.anyio
async def test_a_cached_page_is_refused_once_its_address_is_no_longer_allowed(
    make_reader: MakeReader, site: FakeSite
) -> None:
    """The policy in force decides every read, a cache hit included (the cache is shared by every process)."""
    site.page("/article", "<html><body><article><p>" + "Cached words. " * 40 + "</p></article></body></html>")
    allowed = make_reader()  # opts 127.0.0.1 in
    first, _ = await read(allowed, site.url("/article"))
    assert not first["cached"]
    again, _ = await read(allowed, site.url("/article"))
    assert again["cached"] and site.count("/article") == 1
    with pytest.raises(FetchBlocked) as caught:
        await make_reader(read_allowed_hosts=()).read(site.url("/article"))
    assert caught.value.details["reason"] == "address" and "loopback" in caught.value.message
    assert site.count("/article") == 1


@pytest.mark.anyio
async def test_a_cached_redirect_is_refused_when_its_final_host_is_no_longer_allowed(
    make_reader: MakeReader, site: FakeSite
) -> None:
    site.name = "docs.test"
    site.redirect("/old", f"http://127.0.0.1:{site.port}/new")
    site.page("/new", "<html><body><article><p>" + "Moved words of the page. " * 20 + "</p></article></body></html>")
    dns = ScriptedDNS({"docs.test": ["127.0.0.1"]})
    await read(make_reader(resolver=dns, read_allowed_hosts=("docs.test", "127.0.0.1")), site.url("/old"))
    with pytest.raises(FetchBlocked) as caught:  # the name is still allowed, the address it led to is not
        await make_reader(resolver=dns, read_allowed_hosts=("docs.test",)).read(site.url("/old"))
    assert "127.0.0.1 is a loopback address" in caught.value.message
    assert site.count("/old") == 1 and site.count("/new") == 1
