"""clean_text and the URL dedup key on the text the compact rendering shows."""

from __future__ import annotations

from typing import Any

import pytest

from brave_search_mcp.models.envelopes import Result, Section
from brave_search_mcp.render.compact import fit_to_limits
from brave_search_mcp.render.text import clean_text
from brave_search_mcp.render.text import dedup_key as normalize_url
from tests.search_pages import envelope_for

# ------------------------------------------------------------------------------------ clean_text


@pytest.mark.parametrize("value", [None, 5, 3.5, ["a"], {"a": 1}, b"bytes"])
def test_clean_text_turns_non_strings_into_empty(value: Any) -> None:
    assert clean_text(value, limit=100) == ""


def test_clean_text_strips_tags_comments_and_entities() -> None:
    raw = 'A &quot;quoted&quot; <strong>word</strong>, <a href="x">link</a><!-- hidden --> &amp; language&#x27;s'
    assert clean_text(raw, limit=200) == 'A "quoted" word, link & language\'s'


def test_clean_text_strips_escaped_tags_after_unescaping() -> None:
    assert clean_text("&lt;b&gt;bold&lt;/b&gt; text", limit=100) == "bold text"


def test_clean_text_keeps_generics_that_are_not_html() -> None:
    assert clean_text("Vec&lt;T&gt; and Map<K, V>", limit=100) == "Vec<T> and Map<K, V>"


def test_clean_text_unescapes_only_once() -> None:
    assert clean_text("it&amp;#39;s", limit=100) == "it&#39;s"


def test_clean_text_renders_highlights_as_bold_when_asked() -> None:
    raw = "say <strong>hello</strong> to <b>world</b>"
    assert clean_text(raw, limit=100, decorations=True) == "say **hello** to **world**"
    assert clean_text(raw, limit=100) == "say hello to world"


def test_clean_text_removes_ansi_and_control_characters() -> None:
    raw = "\x1b[31mred\x1b[0m \x1b]0;title\x07text\x00\x07 more\u202e"
    assert clean_text(raw, limit=100) == "red text more"


def test_rendered_text_is_valid_utf8_even_with_lone_surrogates() -> None:
    result = Result(title="bad \ud800 title", url="https://e.example/", snippet="x\udfffy")
    _, text = fit_to_limits(envelope_for([Section(key="web", label="Web results", results=[result])]), 120, 32768)
    assert "1. bad  title" in text.split("\n")
    text.encode("utf-8")


def test_clean_text_collapses_whitespace() -> None:
    assert clean_text("  a\n\n b\t\tc\u00a0 d\u2028e ", limit=100) == "a b c d e"


def test_clean_text_cuts_at_a_word_boundary_with_an_ellipsis() -> None:
    text = clean_text("alpha beta gamma delta epsilon", limit=20)
    assert text == "alpha beta gamma…"
    assert len(text) <= 20


def test_clean_text_cuts_one_long_word_hard() -> None:
    text = clean_text("x" * 50, limit=10)
    assert text == "x" * 9 + "…"


def test_clean_text_at_exactly_the_limit_is_not_cut() -> None:
    assert clean_text("a" * 10, limit=10) == "a" * 10


def test_clean_text_closes_a_bold_span_the_cut_opened() -> None:
    text = clean_text("intro <strong>" + "word " * 30 + "</strong>", limit=40, decorations=True)
    assert len(text) <= 40
    assert text.count("**") % 2 == 0
    assert text.endswith("**…")


# ------------------------------------------------------------------------------------ normalize_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTPS://Example.COM/Path/", "https://example.com/Path"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("https://example.com/a?b=1#frag", "https://example.com/a?b=1"),
        ("https://example.com/", "https://example.com"),
        ("https://www.example.com/a", "https://www.example.com/a"),
        ("  mailto:someone@example.com ", "mailto:someone@example.com"),
        ("https://example.com:99999/", "https://example.com:99999/"),
    ],
)
def test_normalize_url(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


def test_normalize_url_keeps_different_queries_apart() -> None:
    assert normalize_url("https://e.example/?q=1") != normalize_url("https://e.example/?q=2")
