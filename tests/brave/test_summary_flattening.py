"""Flattening a summary, as ``fetch_summary`` hands it over: inline references, lists, cleanup, references numbered
and capped, long text capped."""

from __future__ import annotations

from typing import Any

import pytest

from brave_search_mcp.models.summary import Reference
from tests.brave.summary_source import K2, KANCH, complete, iref, item, run, run_error, tok

pytestmark = pytest.mark.anyio


async def flattened(messages: Any, *, inline_references: bool) -> tuple[str, list[Reference]]:
    """The text and references of Brave's summary messages as ``fetch_summary`` hands them over."""
    body = {"type": "summarizer", "status": "complete", "summary": messages}
    summary, _, _ = await run([body], inline_references=inline_references)
    return summary.text, summary.references


async def test_inline_references_on_puts_urls_in_the_text() -> None:
    messages = [tok("K2 is 8,611 m tall."), iref(K2, 1), tok(" It is in the Karakoram.")]

    text, refs = await flattened(messages, inline_references=True)

    assert text == f"K2 is 8,611 m tall. ({K2}) It is in the Karakoram."
    assert refs == [Reference(number=1, url=K2)]


async def test_inline_reference_urls_survive_text_cleanup_untouched() -> None:
    url = "https://example.com/search?q=a&copy=1&amp=2&lt;x"
    messages = [tok("Stray \x000\x00 marker &amp; <i>tag</i>."), iref(url, 1)]

    text, refs = await flattened(messages, inline_references=True)

    assert text == f"Stray 0 marker & tag. ({url})"
    assert refs == [Reference(number=1, url=url)]


async def test_inline_references_off_keeps_the_text_clean() -> None:
    messages = [tok("K2 is 8,611 m tall."), iref(K2, 1), tok(" It is in the Karakoram.")]

    text, refs = await flattened(messages, inline_references=False)

    assert text == "K2 is 8,611 m tall. It is in the Karakoram."
    assert "http" not in text
    assert refs == [Reference(number=1, url=K2)]


async def test_fetch_summary_honours_inline_references() -> None:
    body = complete(tok("K2 is tall."), iref(K2, 4))

    with_refs, _, _ = await run([body], inline_references=True)
    without, _, _ = await run([body])

    assert with_refs.text == f"K2 is tall. ({K2})"
    assert without.text == "K2 is tall."
    assert with_refs.references == without.references == [Reference(number=4, url=K2)]


async def test_ordered_list_is_numbered() -> None:
    messages = [
        tok("The highest peaks after Everest are:"),
        {"type": "enum_start", "data": "ol"},
        item("K2", K2, "8,611 m, Karakoram"),
        item("Kangchenjunga", KANCH),
        item(text="Lhotse, 8,516 m"),
        {"type": "enum_end"},
        tok(" All are in Asia."),
    ]

    text, refs = await flattened(messages, inline_references=False)

    assert text == (
        "The highest peaks after Everest are:\n"
        "1. K2: 8,611 m, Karakoram\n"
        "2. Kangchenjunga\n"
        "3. Lhotse, 8,516 m\n"
        "All are in Asia."
    )
    assert refs == [Reference(number=1, url=K2, title="K2"), Reference(number=2, url=KANCH, title="Kangchenjunga")]


async def test_unordered_list_uses_dashes_and_numbering_restarts_per_list() -> None:
    messages = [
        tok("Options:"),
        {"type": "enum_start", "data": "ul"},
        item("pip", text="the default installer"),
        item("uv"),
        {"type": "enum_end"},
        tok("Steps:"),
        {"type": "enum_start", "data": "ol"},
        item("install"),
        {"type": "enum_end"},
        {"type": "enum_start", "data": "ol"},
        item("run"),
        {"type": "enum_end"},
    ]

    text, _ = await flattened(messages, inline_references=False)

    assert text == "Options:\n- pip: the default installer\n- uv\nSteps:\n1. install\n1. run"


async def test_malformed_messages_are_ignored() -> None:
    messages: list[Any] = [
        None,
        5,
        "a bare string",
        ["a", "list"],
        {"data": "no type"},
        {"type": "token", "data": 42},
        {"type": "token"},
        tok("Kept"),
        {"type": "mystery", "data": "not shown"},
        {"type": "enum_item", "data": "a string, not an entity"},
        {"type": "enum_item", "data": {"name": 7, "text": None, "url": K2}},
        {"type": "inline_reference", "data": "not a dict"},
        {"type": "inline_reference", "data": {"url": "javascript:alert(1)", "number": 1}},
        {"type": "inline_reference", "data": {"number": 2}},
        {"type": "enum_end"},
        tok(" text."),
    ]

    text, refs = await flattened(messages, inline_references=True)

    assert text == "Kept text."
    assert refs == []


@pytest.mark.parametrize("messages", [None, {"type": "token", "data": "x"}, "token", 3])
async def test_non_list_summary_flattens_to_nothing(messages: Any) -> None:
    error, _, _ = await run_error([{"type": "summarizer", "status": "complete", "summary": messages}])
    assert "no summary text" in error.message


async def test_html_is_stripped_and_spaces_collapsed_but_list_lines_kept() -> None:
    messages = [
        tok("<strong>K2</strong>   is\t tall &amp; cold; 3 < 4 and 5 > 2. <str"),
        tok("ong>Split tag</strong> done."),
        {"type": "enum_start", "data": "ul"},
        item("<b>Everest</b>", text="8,849&nbsp;m"),
        {"type": "enum_end"},
    ]

    text, _ = await flattened(messages, inline_references=False)

    assert text == "K2 is tall & cold; 3 < 4 and 5 > 2. Split tag done.\n- Everest: 8,849 m"


async def test_references_keep_brave_numbers_then_number_the_rest_and_drop_duplicates() -> None:
    a, b, c, d = (f"https://example.com/{name}" for name in "abcd")
    messages = [
        tok("Text."),
        iref(a, 2),
        iref(b),
        iref("https://EXAMPLE.com/a/", 7),  # same page as a: dropped
        {"type": "enum_start", "data": "ul"},
        item("Page A", a),  # duplicate, but lends its title
        item("Page C", c),
        {"type": "enum_end"},
        iref(d, 2),  # number already taken: numbered after the highest number
        iref(c, 9),  # seen before as an enum item: Brave's number wins
    ]

    _, refs = await flattened(messages, inline_references=False)

    assert refs == [
        Reference(number=2, url=a, title="Page A"),
        Reference(number=9, url=c, title="Page C"),
        Reference(number=10, url=b),
        Reference(number=11, url=d),
    ]
    assert len({r.url.lower().rstrip("/") for r in refs}) == len(refs)


async def test_context_urls_follow_summary_references_without_duplicates() -> None:
    other = "https://example.org/list"
    body = complete(
        tok("K2."),
        iref(K2, 1),
        enrichments={
            "raw": "K2 raw text " * 50,
            "context": [
                {"title": "K2 - Wikipedia", "url": K2},
                {"title": "<b>List</b> of peaks", "url": other, "meta_url": {"hostname": "example.org"}},
                {"title": "no url"},
                "junk",
            ],
        },
    )

    summary, _, _ = await run([body])

    assert summary.references == [
        Reference(number=1, url=K2, title="K2 - Wikipedia"),
        Reference(number=2, url=other, title="List of peaks"),
    ]


async def test_references_are_capped_at_twenty() -> None:
    messages = [
        {"type": "enum_start", "data": "ol"},
        *(item(f"Page {n}", f"https://example.com/{n}") for n in range(30)),
        {"type": "enum_end"},
    ]

    text, refs = await flattened(messages, inline_references=False)

    assert [r.number for r in refs] == list(range(1, 21))
    assert refs[-1].url == "https://example.com/19"
    assert text.count("\n") == 29  # all items still in the text


async def test_long_text_is_capped_at_8000_characters() -> None:
    messages = [tok("word " * 5000)]

    text, _ = await flattened(messages, inline_references=False)

    assert len(text) <= 8000
    assert len(text) > 7700
    assert text.endswith("…")
    assert "wor…" not in text  # cut between words
