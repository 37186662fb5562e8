"""The one sanitizer: code in answers survives, markup goes, breaks stay breaks, entities decode once."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brave_search_mcp.render.text import clean_block, clean_layout, clean_text, dedup_key
from tests.brave.summary_source import complete, run, tok

CODE_SNIPPETS = [
    "Vec<T>",
    "Option<&str>",
    "HashMap<K, V>",
    "a < b && c > d",
    "x<y",
    "fn f<'a>(x: &'a str)",
    "List<Map<String, Integer>>",
    "if (i<n) {}",
    "Result<(), Box<dyn Error>>",
]
WORDS = st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=12)


@pytest.mark.anyio
@pytest.mark.parametrize("code", CODE_SNIPPETS)
async def test_code_with_angle_brackets_survives_every_text_path(code: str) -> None:
    assert clean_text(code, limit=200) == code
    assert clean_block(code, limit=200) == code
    summary, _, _ = await run([complete(tok(f"Use {code} here."))])
    assert summary.text == f"Use {code} here."


@given(st.lists(st.sampled_from(CODE_SNIPPETS) | WORDS, min_size=1, max_size=8))
def test_text_without_real_tags_is_only_whitespace_folded(parts: list[str]) -> None:
    text = "  ".join(parts)
    assert clean_text(text, limit=10_000) == " ".join(text.split())


@given(st.lists(WORDS, min_size=2, max_size=6), st.sampled_from(["<br>", "<br/>", "<BR />", "</p><p>", "<li>"]))
def test_line_breaking_tags_never_glue_words(words: list[str], tag: str) -> None:
    html = tag.join(words)
    assert clean_text(html, limit=10_000) == " ".join(words)
    assert clean_block(html, limit=10_000).split() == words
    assert clean_block("<br>".join(words), limit=10_000) == "\n".join(words)


@given(st.lists(WORDS, min_size=1, max_size=6))
def test_real_markup_is_stripped_and_entities_decode_exactly_once(words: list[str]) -> None:
    marked = " ".join(f"<strong>{w}</strong>" for w in words)
    assert clean_text(marked, limit=10_000) == " ".join(words)
    assert clean_text(marked, limit=10_000, decorations=True) == " ".join(f"**{w}**" for w in words)
    assert clean_text("&amp;lt;" + words[0], limit=10_000) == "&lt;" + words[0]  # what the page shows
    assert clean_text("Vec&lt;T&gt;", limit=100) == "Vec<T>"
    assert clean_text("&lt;b&gt;bold&lt;/b&gt;", limit=100) == "bold"  # an escaped real tag is still markup


@given(st.text(max_size=300), st.integers(min_value=1, max_value=120))
def test_output_is_one_bounded_line_without_invisible_characters(text: str, limit: int) -> None:
    out = clean_text(text, limit=limit)
    assert len(out) <= limit
    assert "\n" not in out and "\r" not in out
    assert not any(0xD800 <= ord(ch) <= 0xDFFF for ch in out)
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F for ch in out)
    out.encode("utf-8")  # always valid UTF-8


def test_zero_width_and_bidi_characters_are_removed() -> None:
    assert clean_text("pay\u200bpal \u202eevil\u202c", limit=50) == "paypal evil"


def test_dedup_key_treats_spellings_of_one_page_alike() -> None:
    assert dedup_key("HTTPS://Example.COM/a/") == dedup_key("https://example.com/a")
    assert dedup_key("https://example.com:443/a#frag") == dedup_key("https://example.com/a")
    assert dedup_key("https://example.com/a?x=1") != dedup_key("https://example.com/a?x=2")


def test_layout_folds_blank_line_runs_in_prose_but_keeps_code_verbatim() -> None:
    page = "Intro\n\n\n\nText\n\n```python\nimport os\n\n\ndef f():\n    pass\n```\n\n\n\nEnd"
    assert clean_layout(page, limit=1000) == (
        "Intro\n\nText\n\n```python\nimport os\n\n\ndef f():\n    pass\n```\n\nEnd"
    )
    assert clean_layout("a\n\n\n\nb  \n", limit=100) == "a\n\nb"
