"""App-shell detection: pages whose text only JavaScript draws are told from ordinary pages (pure, no browser);
without a browser such a page answers with what its HTML had and a warning that says how to enable rendering."""

from __future__ import annotations

import pytest

from brave_search_mcp.models.errors import WarningCode
from brave_search_mcp.reader.shell import is_thin, shell_reason
from testkit.sites import FakeSite

from .conftest import MakeReader, read

pytestmark = pytest.mark.anyio

CRA = """<!doctype html><html><head><title>React App</title><script defer src="/static/js/main.3f2a.js"></script>
</head><body><noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div></body></html>"""
VITE_VUE = """<!doctype html><html><head><script type="module" crossorigin src="/assets/index-4b1c.js"></script></head>
<body><div id="app"></div></body></html>"""
NEXT = """<!doctype html><html><head><title>Docs</title></head><body><div id="__next"><div class="spinner"></div></div>
<script id="__NEXT_DATA__" type="application/json">{"props":{}}</script><script src="/_next/static/main.js"></script>
</body></html>"""
ANGULAR = """<!doctype html><html><head><base href="/"></head><body><app-root></app-root>
<script src="runtime.js" type="module"></script><script src="main.js" type="module"></script></body></html>"""
NOSCRIPT_ONLY = """<!doctype html><html><body><noscript>This site requires JavaScript to be enabled.</noscript>
<div class="loader">Loading…</div></body></html>"""
SCRIPTS_ONLY = """<!doctype html><html><body><script src="/bundle.js"></script><script>boot()</script></body></html>"""
ARTICLE = """<!doctype html><html><head><title>Notes</title><script src="/analytics.js"></script></head><body>
<main><h1>Release notes</h1><p>Version 2 reads pages faster and keeps code blocks verbatim.</p></main>
<div id="root"><p>Comments are loaded here.</p><p>And this one has enough words to count as content.</p></div>
</body></html>"""
STATIC_SHORT = """<!doctype html><html><body><h1>Hello</h1><p>Just a short page.</p></body></html>"""


@pytest.mark.parametrize(
    ("html", "reason"),
    [
        (CRA, "an empty #root beside scripts"),
        (VITE_VUE, "an empty #app beside scripts"),
        (NEXT, "an empty #__next beside scripts"),
        (ANGULAR, "an empty #app-root beside scripts"),
        (NOSCRIPT_ONLY, "a <noscript> asking for JavaScript"),
        (SCRIPTS_ONLY, "a body of scripts only"),
    ],
)
def test_app_shells_are_recognised_with_their_reason(html: str, reason: str) -> None:
    assert shell_reason(html) == reason


@pytest.mark.parametrize("html", [ARTICLE, STATIC_SHORT, "", "not html at all", "<p>fragment</p>"])
def test_ordinary_pages_are_not_shells(html: str) -> None:
    assert shell_reason(html) is None


def test_hydration_marker_alone_counts() -> None:
    page = '<html><body><div data-server-rendered="true"></div><p>x</p></body></html>'
    assert shell_reason(page) == "a Vue root in the HTML"


def test_thin_means_little_extracted_text() -> None:
    assert is_thin("You need to enable JavaScript to run this app.")
    assert not is_thin("word " * 100)


async def test_shell_without_a_browser_answers_its_html_with_a_warning(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/app", CRA)
    reader = make_reader()  # no renderer: as where the extra or Chromium is missing
    answer, text = await read(reader, site.url("/app"))
    assert answer["rendered"] is False
    assert "enable JavaScript" in answer["content"]  # what the HTML had
    (warning,) = [w for w in answer["warnings"] if w["code"] == WarningCode.JAVASCRIPT_NOT_RENDERED.value]
    assert "brave-search-mcp[browser]" in warning["message"]
    assert "empty #root" in warning["message"]
    assert "! JAVASCRIPT_NOT_RENDERED:" in text
    again, _ = await read(reader, site.url("/app"))  # not cached: a browser installed later would render it
    assert again["cached"] is False
    assert site.count("/app") == 2


async def test_render_never_reads_the_html_and_says_it_is_a_shell(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/app", VITE_VUE)
    reader = make_reader()
    result = await reader.read(site.url("/app"), render="never")
    assert result.document.drawn is False
    assert result.document.render_note is not None and "render='auto'" in result.document.render_note
    assert (await reader.read(site.url("/app"), render="never")).cached is True
    assert (await reader.read(site.url("/app"))).cached is False  # auto is another entry


async def test_render_always_without_a_browser_warns_on_any_html_page(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/article", ARTICLE)
    result = await make_reader().read(site.url("/article"), render="always")
    assert result.document.render_note is not None
    assert result.document.render_note.startswith("render='always' was asked, but no browser can render it here")
    assert "Release notes" in result.document.markdown


async def test_an_ordinary_page_has_no_warning(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/article", ARTICLE)
    answer, _ = await read(make_reader(), site.url("/article"))
    assert answer["rendered"] is False
    assert answer["warnings"] == []
