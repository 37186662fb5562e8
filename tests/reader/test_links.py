"""A page's links (``links``): what an agent follows to walk a docs site, and what the prose no longer carries."""

from __future__ import annotations

import pytest

from brave_search_mcp.reader import Document, render_read
from brave_search_mcp.reader.extract import extract
from brave_search_mcp.reader.links import MAX_SHOWN_BYTES, MAX_SHOWN_LINKS
from testkit.sites import FakeSite
from testkit.sites.pages import page

from .conftest import MakeReader, read

DOCS = "/en/3.2/retries.html"


@pytest.mark.anyio
async def test_same_site_lists_the_in_content_links_of_a_docs_page(make_reader: MakeReader, site: FakeSite) -> None:
    site.page(DOCS, page("docs.html"))
    answer, text = await read(make_reader(), site.url(DOCS), links="same_site")
    docs = site.url("/en/3.2/")  # the page's <base href>: its relative links are relative to that
    # In the main text's order and words; the sidebar, top bar, footer, other sites, mailto:, javascript: and
    # in-page anchors are left out; fragments stay on the URL but one page is listed once.
    assert answer["links"] == [
        {"text": "queue", "url": docs + "queues.html#ordering"},
        {"text": "dead-letter queue", "url": docs + "dead-letters.html"},
        {"text": "Scheduling", "url": docs + "scheduling.html"},
        {"text": "The Retry class", "url": docs + "api.html#quayside.Retry"},
    ]
    assert answer["links_total"] == 4
    assert (
        "Links (in the content, on this site): 4.\n"
        f"- [queue]({docs}queues.html#ordering)\n- [dead-letter queue]({docs}dead-letters.html)\n"
    ) in text
    # The text the model reads keeps the words of each link and no URL.
    assert "back on its queue according to" in answer["content"] and "](" not in answer["content"]


@pytest.mark.anyio
async def test_all_adds_navigation_footer_and_other_sites_in_page_order(
    make_reader: MakeReader, site: FakeSite
) -> None:
    site.page(DOCS, page("docs.html"))
    answer, text = await read(make_reader(), site.url(DOCS), links="all", format="text")
    urls = [link["url"] for link in answer["links"]]
    docs = site.url("/en/3.2/")
    assert urls[:4] == [site.url("/cookies"), "https://quayside.example/", "https://github.com/quayside/quayside",
                        docs + "install.html"]  # fmt: skip
    elsewhere = ("https://docs.python.org/3/library/exceptions.html", "https://twitter.com/quayside")
    for expected in (docs + "queues.html", site.url("/privacy.html"), docs + "_sources/retries.rst.txt", *elsewhere):
        assert expected in urls, expected
    assert len(urls) == len(set(urls)) == answer["links_total"] == 14
    nav, content, footer = docs + "install.html", docs + "dead-letters.html", site.url("/privacy.html")
    assert urls.index(nav) < urls.index(content) < urls.index(footer)
    assert not [u for u in urls if not u.startswith(("http://", "https://")) or u.startswith(site.url(DOCS))]
    assert "Links (all, navigation and footer included): 14." in text
    assert f"- Installation: {docs}install.html" in text  # text format: no markdown marks


@pytest.mark.anyio
async def test_shown_links_are_capped_by_count_and_by_bytes(make_reader: MakeReader, site: FakeSite) -> None:
    many = "".join(f'<li><a href="/p/{n}">Page number {n}</a></li>' for n in range(300))
    intro = "An index of pages. " * 20
    site.page("/index", f"<html><body><article><p>{intro}</p><ul>{many}</ul></article></body></html>")
    answer, text = await read(make_reader(), site.url("/index"), links="all")
    assert len(answer["links"]) == MAX_SHOWN_LINKS and answer["links_total"] == 300
    assert "Links (all, navigation and footer included): 300; 200 more not shown." in text
    long = "".join(f'<a href="/{"x" * 900}/{n}">long {n}</a> ' for n in range(40))
    site.page("/long", f"<html><body><article><p>{'Long links below. ' * 20}</p><p>{long}</p></article></body></html>")
    answer, text = await read(make_reader(), site.url("/long"), links="all")
    shown = text[text.index("Links (") :]
    assert len(shown.encode()) < MAX_SHOWN_BYTES + 200 and len(answer["links"]) < 10
    assert f"; {40 - len(answer['links'])} more not shown." in shown


@pytest.mark.anyio
async def test_a_page_without_html_has_no_links_and_says_so(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/notes.md", "# Notes\n\nSee [the docs](https://example.com/docs).", content_type="text/markdown")
    answer, text = await read(make_reader(), site.url("/notes.md"), links="all")
    assert answer["links"] == [] and answer["links_total"] == 0
    assert "Links: none (only web pages list their links)." in text
    assert "[the docs](https://example.com/docs)" in answer["content"]  # a markdown file is passed through as written


def test_the_links_survive_the_cache_round_trip() -> None:
    where = "https://d.example/en/3.2/retries.html"
    document = extract(url=where, final_url=where, kind="html",
                       content_type="text/html", body=page("docs.html"), charset="utf-8")  # fmt: skip
    again = Document.from_bytes(document.to_bytes())
    assert again == document and len(again.links) == 14 and len(again.content_links) == 6


def test_the_prose_loses_markdown_escapes_but_code_keeps_every_backslash() -> None:
    html = (
        "<html><body><article><h1>Config</h1><p>Set max_delay_seconds or read_url_timeout; *stars* and [brackets] "
        "and a_b_c stay as written, as does <code>re.compile(r'\\_\\d+')</code>.</p>"
        "<pre><code>path = 'C:\\\\temp\\\\new_file'  # [x](y) is not a link here\n</code></pre>"
        f"<p>{'Filler text for the extractor to keep. ' * 20}</p></article></body></html>"
    )
    document = extract(url="https://d.example/c", final_url="https://d.example/c", kind="html",
                       content_type="text/html", body=html.encode(), charset="utf-8")  # fmt: skip
    prose = document.markdown
    assert "Set max_delay_seconds or read_url_timeout; *stars* and [brackets] and a_b_c stay as written" in prose
    assert "`re.compile(r'\\_\\d+')`" in prose
    assert "path = 'C:\\\\temp\\\\new_file'  # [x](y) is not a link here" in prose
    answer, _ = render_read(document, links="all")
    assert answer["links"] == []
