"""Documentation pages written in each generator's markup read as the exact Markdown a developer needs.

Each ``docs_pages/<generator>.html`` imitates one generator (Sphinx in Python's and Django's themes, DocBook,
asciidoc, mdBook, rustdoc, Node's apidoc, MkDocs Material, Docusaurus) with its chrome around the content;
``<generator>.md`` is the whole Markdown expected: code fenced and verbatim with its language, headings as
``#`` lines without their glyphs, GFM tables, signatures as code, admonitions with their label, no chrome,
no link target in the prose.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from brave_search_mcp.reader.document import Document
from brave_search_mcp.reader.extract import extract

PAGES = Path(__file__).parent / "docs_pages"
GENERATORS = sorted(path.stem for path in PAGES.glob("*.html"))
BASE = "https://docs.example/lib/page.html"


def read(name: str, body: bytes | None = None) -> Document:
    raw = body if body is not None else (PAGES / f"{name}.html").read_bytes()
    return extract(url=BASE, final_url=BASE, kind="html", content_type="text/html", body=raw, charset=None)


def test_every_generator_has_a_page_and_its_expected_markdown() -> None:
    assert GENERATORS == [
        "asciidoc", "docbook", "docusaurus", "mdbook", "mkdocs", "node", "rustdoc", "sphinx_django", "sphinx_python",
    ]  # fmt: skip
    assert all((PAGES / f"{name}.md").is_file() for name in GENERATORS)


@pytest.mark.parametrize("name", GENERATORS)
def test_a_generators_page_reads_as_its_expected_markdown(name: str) -> None:
    expected = (PAGES / f"{name}.md").read_text(encoding="utf-8").rstrip("\n")
    assert read(name).markdown == expected


@pytest.mark.parametrize(
    ("name", "chrome"),
    [
        ("sphinx_python", ["¶", "[source]", "Show Source", "Previous topic", "Go", "index", "Copyright"]),
        ("sphinx_django", ["Tallyho 4.2 documentation", "previous", "You are here", "Browse", "¶"]),
        ("docbook", ["Prev", "Next", "Home", "Chapter 7. Types", "7.5. JSON", "**7.4.1. Interval Input**"]),
        ("asciidoc", ["Last updated", "toc"]),
        ("mdbook", ["The Ferry Book", "Introduction", "Previous chapter", "Print", "Search this book"]),
        ("rustdoc", ["· source", "## source", "[−]", "Expand description", "Read more", "Copy item path", "1.2.0"]),
        ("node", ["Node.js v18.20.4", "Table of contents", "About this documentation", "Timers#", "`#"]),
        ("mkdocs", ["Edit this page", "Last update", "Table of contents", "Home", "¶", "Search"]),
        ("docusaurus", ["Edit this page", "Version: 3.x", "On this page", "Previous", "cookies", "Copy", "Home"]),
    ],
)
def test_the_sites_chrome_stays_out(name: str, chrome: list[str]) -> None:
    markdown = read(name).markdown
    for words in chrome:
        assert words not in markdown, words


def test_headings_are_the_pages_outline_without_glyphs() -> None:
    assert [(h.level, h.text) for h in read("sphinx_python").headings()] == [
        (1, "`shelfkit` — Shelving helpers"),
        (2, "Flags"),
    ]
    assert [h.text for h in read("rustdoc").headings()] == [
        "Struct tally::sync::Latch",
        "Implementations",
        "`impl<T> Latch<T>`",
        "`pub const fn new(t: T) -> Latch<T>`",
        "`pub fn source(&self) -> &str`",  # a method named like the "source" control keeps its name
        "Trait Implementations",
        "`impl<T: Clone> Clone for Latch<T>`",
        "`fn clone(&self) -> Self`",
    ]
    assert read("docbook").section("Interval Input")[1].startswith("### 7.4.1. Interval Input\n\n```\nquantity unit")


def test_link_targets_leave_the_prose_and_are_listed_links_around_code_included() -> None:
    document = read("sphinx_python")
    assert "](" not in document.markdown and "https://" not in document.markdown
    assert [(link.text, link.url) for link in document.content_links] == [
        ("Lib/shelfkit.py", "https://example.org/src/shelfkit.py"),
        ("the store guide", "https://docs.example/lib/store.html"),
    ]
    mdbook = read("mdbook")
    assert [(link.text, link.url) for link in mdbook.content_links] == [
        ("Ferry::map", "https://docs.example/lib/ch01.html")
    ]
    # the page's own navigation is still among all its links
    assert "https://docs.example/lib/iterators.html" in [link.url for link in mdbook.links]


def test_a_docs_page_whose_content_element_is_empty_falls_back_to_the_article_reader() -> None:
    body = (
        b"<html><head><meta name='generator' content='rustdoc'></head><body><section id='main-content'></section>"
        b"<article><h1>Moved</h1><p>" + b"This crate's documentation moved to a new home with the release. " * 20
        + b"</p></article></body></html>"
    )  # fmt: skip
    document = read("x", body)
    assert "This crate's documentation moved to a new home" in document.markdown
    assert document.notes == ()


def test_a_page_with_no_text_says_so_instead_of_an_empty_success() -> None:
    document = read("x", b"<html><body><div><img src='a.png'></div><script>var a = 1;</script></body></html>")
    assert document.markdown == ""
    assert document.notes == ("no readable text was found on the page",)


def test_deep_nesting_is_read_without_recursing_past_the_limit() -> None:
    body = b"<html><body><div role='main'><h1>Deep<a class='headerlink' href='#d'>x</a></h1>"
    body += b"<div>" * 200 + b"<p>bottom text</p>" + b"</div>" * 200 + b"</div></body></html>"
    document = read("x", body)
    assert document.markdown.startswith("# Deep") and "bottom text" in document.markdown


@pytest.mark.parametrize(
    ("inner", "expected"),
    [
        ("<p>" + "<span>" * 150 + "bottom text" + "</span>" * 150 + "</p>", "bottom text"),
        ("<pre>" + "<span>" * 150 + "let x = 1;" + "</span>" * 150 + "</pre>", "```\nlet x = 1;\n```"),
    ],
    ids=["inline", "code"],
)
def test_text_nested_past_the_depth_limit_is_kept_as_plain_text(inner: str, expected: str) -> None:
    head = "<html><body><div role='main'><h1>Deep<a class='headerlink' href='#d'>x</a></h1>"
    body = head + inner + "</div></body></html>"
    assert expected in read("x", body.encode()).markdown


def test_a_blog_with_headerlinks_but_no_content_element_stays_with_the_article_reader() -> None:
    body = (
        b"<html><body><div class='menu'><a href='/'>Home</a> <a href='/about'>About the author</a></div>"
        b"<div class='post'><h2>Tide tables<a class='headerlink' href='#t'>\xc2\xb6</a></h2><p>"
        + b"Tide tables give the height of the sea at each hour of the day for a port. " * 12
        + b"</p></div><div class='footer'>Powered by a static site generator</div></body></html>"
    )  # fmt: skip
    markdown = read("x", body).markdown
    assert "Tide tables give the height" in markdown and "About the author" not in markdown


def test_a_blog_with_a_sidebar_nav_and_a_main_element_stays_with_the_article_reader() -> None:
    body = (
        b"<html><body><nav id='sidebar'><a href='/'>Home</a> <a href='/about'>About the author</a></nav><main>"
        b"<div class='share'><a href='https://social.example/share'>Share on Twitter</a></div><article>"
        b"<h1>Tide tables</h1><p>"
        + b"Tide tables give the height of the sea at each hour of the day for a port. " * 12
        + b"</p></article><div class='newsletter'>Subscribe to our newsletter for weekly updates</div></main>"
        b"</body></html>"
    )  # fmt: skip
    markdown = read("x", body).markdown
    assert "Tide tables give the height" in markdown
    assert "Share on Twitter" not in markdown and "Subscribe to our newsletter" not in markdown


def test_a_blog_with_headerlinks_and_a_main_element_stays_with_the_article_reader() -> None:
    body = (
        b"<html><body><main><div class='share'><a href='https://social.example/share'>Share on Twitter</a></div>"
        b"<article><h2>Tide tables<a class='headerlink' href='#t'>\xc2\xb6</a></h2><p>"
        + b"Tide tables give the height of the sea at each hour of the day for a port. " * 12
        + b"</p></article><div class='newsletter'>Subscribe to our newsletter for weekly updates</div></main>"
        b"</body></html>"
    )  # fmt: skip
    markdown = read("x", body).markdown
    assert "Tide tables give the height" in markdown
    assert "Share on Twitter" not in markdown and "Subscribe to our newsletter" not in markdown


@pytest.mark.parametrize(("opening", "closing"), [("<ul><li>", "</li></ul>"), ("<blockquote>", "</blockquote>")])
def test_deeply_nested_lists_and_quotes_stop_indenting_so_the_output_stays_linear(opening: str, closing: str) -> None:
    lines = "".join(f"line {n}<br>" for n in range(200))
    inner = opening * 40 + f"<p>{lines}</p><pre>```\nkept()</pre>" + closing * 40
    head = "<html><head><link href='_static/a.css'></head><body><div role='main'>"
    head += "<h1>Deep<a class='headerlink' href='#d'>x</a></h1>"
    markdown = read("x", (head + inner + "</div></body></html>").encode()).markdown
    deepest = next(line for line in markdown.split("\n") if line.endswith("line 199"))
    assert len(deepest) - len("line 199") <= 2 * 8 + 2  # eight levels of indentation at most
    assert "\n````\n```\nkept()\n````" in markdown  # code still on lines of its own, in a longer fence


def test_an_admonitions_label_is_its_heading_not_a_title_further_down_its_body() -> None:
    body = (
        b"<html><head><link href='_static/a.css'></head><body><div role='main'>"
        b"<h1>Modes<a class='headerlink' href='#m'>x</a></h1><div class='admonition warning'>"
        b"<p>Do not run the server as root.</p><div class='table'><p class='title'><b>Table 1. Modes</b></p>"
        b"<table><tr><th>Mode</th><th>User</th></tr><tr><td>serve</td><td>nobody</td></tr></table></div></div>"
        b"</div></body></html>"
    )
    markdown = read("x", body).markdown
    assert "**Warning:** Do not run the server as root." in markdown
    assert "Table 1. Modes" in markdown and "**Table 1. Modes:**" not in markdown


def test_a_code_block_inside_an_inline_wrapper_stays_a_fenced_block() -> None:
    body = (
        b"<html><head><link href='_static/a.css'></head><body><div role='main'>"
        b"<h1>Install<a class='headerlink' href='#i'>x</a></h1><p>Run:</p>"
        b"<span class='wrap'><pre>make\n  install\n```</pre></span>"
        b"<a href='/examples/build.html'><pre class='language-sh'>cargo build</pre></a></div></body></html>"
    )
    document = read("x", body)
    assert document.markdown == "# Install\n\nRun:\n\n````\nmake\n  install\n```\n````\n\n```sh\ncargo build\n```"
    assert "https://docs.example/examples/build.html" in [link.url for link in document.content_links]
