"""formatting: Brave JSON to clean sections, and envelopes to compact text that always fits its bounds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from brave_search_mcp.brave.results import parse_answer
from brave_search_mcp.models.envelopes import ErrorBody, ErrorEnvelope, ErrorMeta, Result, Section, WarningItem
from brave_search_mcp.models.errors import ERROR_ADVICE, ErrorCode, ParseError, WarningCode
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.models.search import SearchEnvelope, SearchMeta
from brave_search_mcp.models.summary import Reference, SummaryEnvelope, SummaryMeta
from brave_search_mcp.render import compact as render
from brave_search_mcp.render.compact import fit_to_limits, render_error_text, render_summary_text, summary_line
from brave_search_mcp.render.text import clean_text
from brave_search_mcp.render.text import dedup_key as normalize_url
from testkit.brave.brave import FIXTURES_DIR

HELLO_WORLD_PAGE = FIXTURES_DIR / "web_hello_world.json"  # the project's page with a real answer's sizes, markup, ages


def web_item(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "type": "search_result",
        "title": f"Result <strong>{n}</strong>",
        "url": f"https://www.site{n}.example/page",
        "description": f"Snippet &quot;{n}&quot; with <strong>hello</strong>",
        "age": f"{n} days ago",
        "meta_url": {"hostname": f"www.site{n}.example"},
        **extra,
    }


def full_web_answer() -> dict[str, Any]:
    """A web answer with every section, built from the documented schema."""
    return {
        "type": "search",
        "query": {"original": "helo world", "altered": "hello world", "more_results_available": True},
        "web": {"type": "search", "results": [web_item(1), web_item(2, extra_snippets=["<b>one</b>", "two"])]},
        "news": {
            "type": "news",
            "results": [
                {
                    "title": "Big news",
                    "url": "https://news.example/a",
                    "description": "Something happened",
                    "age": "1 hour ago",
                    "breaking": True,
                    "meta_url": {"hostname": "news.example"},
                    "thumbnail": {"src": "https://imgs.example/t.jpg"},
                },
                {"title": "Dup of web 1", "url": "HTTPS://WWW.SITE1.EXAMPLE/page/", "description": "dup"},
            ],
        },
        "videos": {
            "type": "videos",
            "results": [
                {
                    "title": "A video",
                    "url": "https://video.example/watch?v=1",
                    "description": "Watch it",
                    "age": "March 30, 2018",
                    "video": {"duration": "01:56", "views": 6588953, "creator": "Louie", "publisher": "YouTube"},
                    "thumbnail": {"src": "https://imgs.example/v.jpg"},
                }
            ],
        },
        "discussions": {
            "type": "search",
            "results": [
                {
                    "type": "discussion",
                    "title": "Why hello world? : r/learn",
                    "url": "https://www.reddit.com/r/learn/1",
                    "description": "",
                    "age": "November 2, 2024",
                    "data": {
                        "forum_name": "r/learn",
                        "num_answers": 87,
                        "score": "0.92",
                        "title": "Why hello world?",
                        "question": "Is there a reason?",
                        "top_comment": "It proves the toolchain works.",
                    },
                }
            ],
        },
        "faq": {
            "type": "faq",
            "results": [
                {
                    "question": "What is <strong>hello world</strong>?",
                    "answer": "A first program.",
                    "title": "FAQ page",
                    "url": "https://faq.example/q",
                }
            ],
        },
        "infobox": {
            "type": "graph",
            "results": [
                {
                    "type": "infobox",
                    "label": "Computer program",
                    "long_desc": "A program that prints a greeting.",
                    "description": "short",
                    "website_url": "https://info.example/",
                    "url": "https://ignored.example/",
                    "attributes": [[f"k{i}", f"v{i}"] for i in range(10)],
                }
            ],
        },
        "locations": {
            "type": "locations",
            "results": [
                {
                    "type": "location_result",
                    "title": "Cafe Hello",
                    "url": "https://maps.example/cafe",
                    "postal_address": {"displayAddress": "1 Main St, Springfield"},
                    "contact": {"telephone": "+1 555 0100"},
                    "rating": {"ratingValue": 4.5, "bestRating": 5, "reviewCount": 120},
                }
            ],
        },
        "summarizer": {"type": "summarizer", "key": '{"query": "hello world"}'},
    }


def envelope_for(
    sections: list[Section],
    *,
    search_type: SearchType = "web",
    query: str = "hello world",
    has_more: bool = False,
    offset: int = 0,
    warnings: list[WarningItem] | None = None,
    summarizer_key: str | None = None,
) -> SearchEnvelope:
    returned = sum(len(s.results) for s in sections)
    meta = SearchMeta(
        query=query,
        search_type=search_type,
        requested=10,
        returned=returned,
        offset=offset,
        has_more=has_more,
        trace_id="trace-1",
        server_version="0.0.0",
    )
    envelope = SearchEnvelope(
        summary="", sections=sections, meta=meta, warnings=warnings or [], summarizer_key=summarizer_key
    )
    envelope.summary = summary_line(envelope)
    return envelope


def parsed_envelope(search_type: SearchType, data: dict[str, Any], **kwargs: Any) -> SearchEnvelope:
    parsed = parse_answer(search_type, data)
    return envelope_for(
        parsed.sections,
        search_type=search_type,
        warnings=parsed.warnings,
        summarizer_key=parsed.summarizer_key,
        **kwargs,
    )


def make_results(n: int, snippet: str = "a short snippet") -> list[Result]:
    return [Result(title=f"Title {i}", url=f"https://e.example/{i}", snippet=snippet) for i in range(n)]


def within(text: str, max_lines: int, max_bytes: int) -> bool:
    return len(text.split("\n")) <= max_lines and len(text.encode("utf-8")) <= max_bytes


def numbered_urls(text: str) -> list[str]:
    """The URL line after each numbered title line, as the model would read them."""
    lines = text.split("\n")
    return [lines[i + 1].split(" | ")[0] for i, line in enumerate(lines[:-1]) if line.split(". ", 1)[0].isdigit()]


def structured_urls(envelope: SearchEnvelope) -> list[str]:
    return [r.url for s in envelope.sections for r in s.results]


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


# ------------------------------------------------------------------------------------ parse_answer: web


def test_web_sections_come_in_order_with_labels() -> None:
    parsed = parse_answer("web", full_web_answer())
    assert [(s.key, s.label) for s in parsed.sections] == [
        ("web", "Web results"),
        ("news", "News results"),
        ("videos", "Video results"),
        ("discussions", "Discussions"),
        ("faq", "FAQ"),
        ("infobox", "Infobox"),
        ("locations", "Locations"),
    ]


def test_web_result_fields_are_clean() -> None:
    web = parse_answer("web", full_web_answer()).sections[0].results
    first, second = web
    assert first.title == "Result 1"
    assert first.url == "https://www.site1.example/page"
    assert first.snippet == 'Snippet "1" with hello'
    assert first.age == "1 days ago"
    assert first.site == "site1.example"
    assert first.extra_snippets is None
    assert second.extra_snippets == ["one", "two"]


def test_text_decorations_render_highlights_in_results() -> None:
    web = parse_answer("web", full_web_answer(), text_decorations=True).sections[0].results
    assert web[0].title == "Result **1**"
    assert web[0].snippet == 'Snippet "1" with **hello**'


def test_web_age_falls_back_to_page_age_and_source_to_the_url_host() -> None:
    item = {"title": "T", "url": "https://www.host.example/x", "page_age": "2024-12-27T15:49:55"}
    result = parse_answer("web", {"web": {"results": [item]}}).sections[0].results[0]
    assert result.age == "2024-12-27T15:49:55"
    assert result.site == "host.example"


def test_extra_snippets_are_capped_at_five_and_300_chars() -> None:
    item = web_item(1, extra_snippets=["x" * 500, "", 7, *[f"s{i}" for i in range(8)]])
    result = parse_answer("web", {"web": {"results": [item]}}).sections[0].results[0]
    assert result.extra_snippets is not None
    assert len(result.extra_snippets) == 5
    assert len(result.extra_snippets[0]) == 300
    assert result.extra_snippets[1:] == ["7", "s0", "s1", "s2"]


def test_news_inside_web_answer_has_breaking_and_no_thumbnail() -> None:
    news = parse_answer("web", full_web_answer()).sections[1].results
    assert len(news) == 1
    assert news[0].breaking is True
    assert news[0].site == "news.example"
    assert news[0].thumbnail is None


def test_video_fields() -> None:
    video = parse_answer("web", full_web_answer()).sections[2].results[0]
    assert (video.duration, video.views, video.creator, video.publisher) == ("01:56", 6588953, "Louie", "YouTube")
    assert video.thumbnail == "https://imgs.example/v.jpg"
    assert video.age == "March 30, 2018"


def test_discussion_fields() -> None:
    item = parse_answer("web", full_web_answer()).sections[3].results[0]
    assert item.title == "Why hello world?"
    assert item.forum == "r/learn"
    assert item.answers == 87
    assert item.votes == "0.92"
    assert item.question == "Is there a reason?"
    assert item.snippet == "It proves the toolchain works."  # empty description falls back to top_comment


def test_faq_fields() -> None:
    item = parse_answer("web", full_web_answer()).sections[4].results[0]
    assert item.title == "What is hello world?"
    assert item.question == "What is hello world?"
    assert item.snippet == "A first program."
    assert item.answer == "A first program."
    assert item.url == "https://faq.example/q"


def test_infobox_fields() -> None:
    item = parse_answer("web", full_web_answer()).sections[5].results[0]
    assert item.title == "Computer program"
    assert item.snippet == "A program that prints a greeting."
    assert item.url == "https://info.example/"
    assert item.attributes == [[f"k{i}", f"v{i}"] for i in range(8)]


def test_location_fields() -> None:
    item = parse_answer("web", full_web_answer()).sections[6].results[0]
    assert item.title == "Cafe Hello"
    assert item.address == "1 Main St, Springfield"
    assert item.phone == "+1 555 0100"
    assert item.rating == "4.5/5 (120 reviews)"


def test_rating_without_best_or_reviews() -> None:
    item = {"title": "P", "url": "https://p.example/", "rating": {"ratingValue": 4, "reviewCount": 1}}
    result = parse_answer("web", {"locations": {"results": [item]}}).sections[0].results[0]
    assert result.rating == "4 (1 review)"


def test_duplicates_across_sections_are_dropped_with_one_warning() -> None:
    data = full_web_answer()
    data["videos"]["results"].append({"title": "again", "url": "https://www.site2.example/page#t=1"})
    parsed = parse_answer("web", data)
    urls = [r.url for s in parsed.sections for r in s.results]
    assert len(urls) == len({normalize_url(u) for u in urls})
    dedup = [w for w in parsed.warnings if w.code == WarningCode.DEDUPLICATED]
    assert [w.message for w in dedup] == ["Dropped 2 duplicate results (same URL in an earlier section)."]


def test_duplicate_within_one_section_is_dropped() -> None:
    parsed = parse_answer("web", {"web": {"results": [web_item(1), web_item(1)]}})
    assert len(parsed.sections[0].results) == 1
    assert [w.message for w in parsed.warnings] == ["Dropped 1 duplicate result (same URL in an earlier section)."]


def test_no_duplicate_warning_when_nothing_was_dropped() -> None:
    parsed = parse_answer("web", {"web": {"results": [web_item(1), web_item(2)]}})
    assert parsed.warnings == []


def test_altered_query_is_reported() -> None:
    parsed = parse_answer("web", full_web_answer())
    assert parsed.altered_query == "hello world"
    altered = [w for w in parsed.warnings if w.code == WarningCode.QUERY_ALTERED]
    assert len(altered) == 1
    assert '"hello world"' in altered[0].message
    assert '"helo world"' in altered[0].message
    assert "spellcheck" in altered[0].message


@pytest.mark.parametrize("altered", ["", "  ", None, 5, "same"])
def test_unaltered_query_gives_no_warning(altered: Any) -> None:
    parsed = parse_answer("web", {"query": {"original": "same", "altered": altered}})
    assert parsed.altered_query is None
    assert parsed.warnings == []


def test_more_available_and_summarizer_key() -> None:
    parsed = parse_answer("web", full_web_answer())
    assert parsed.more_available is True
    assert parsed.summarizer_key == '{"query": "hello world"}'
    bare = parse_answer("web", {"query": {"more_results_available": "yes"}, "summarizer": {"key": 5}})
    assert bare.more_available is None
    assert bare.summarizer_key is None


# ------------------------------------------------------------------------------------ parse_answer: other types


def test_news_answer() -> None:
    data = {
        "type": "news",
        "results": [
            {"title": "A", "url": "https://a.example/1", "age": "2 hours ago", "breaking": False},
            {"title": "B", "url": "https://b.example/2", "breaking": "yes", "page_age": "2024-01-01T00:00:00"},
        ],
    }
    parsed = parse_answer("news", data)
    assert [(s.key, s.label) for s in parsed.sections] == [("news", "News results")]
    first, second = parsed.sections[0].results
    assert first.breaking is None
    assert second.breaking is None
    assert first.age == "2 hours ago"
    assert second.age == "2024-01-01T00:00:00"


def test_videos_answer_tolerates_an_empty_video_object() -> None:
    data = {"type": "videos", "results": [{"title": "V", "url": "https://v.example/", "video": {}}]}
    result = parse_answer("videos", data).sections[0].results[0]
    assert (result.duration, result.views, result.creator) == (None, None, None)


def test_image_answer_fields() -> None:
    data = {
        "type": "images",
        "results": [
            {
                "title": "Pic",
                "url": "https://page.example/p",
                "source": "page.example",
                "thumbnail": {"src": "https://imgs.example/t.jpg", "width": 500, "height": 300},
                "properties": {"url": "https://cdn.example/full.jpg", "width": 1000, "height": 600},
            },
            {
                "title": "Pic 2",
                "url": "https://page.example/p",  # same page, different image: kept
                "thumbnail": {"src": "https://imgs.example/t2.jpg", "width": 250, "height": 100},
                "properties": {"url": "https://cdn.example/two.jpg", "width": "wide"},
            },
        ],
    }
    first, second = parse_answer("images", data).sections[0].results
    assert first.image_url == "https://cdn.example/full.jpg"
    assert first.thumbnail == "https://imgs.example/t.jpg"
    assert (first.width, first.height) == (1000, 600)
    assert first.site == "page.example"
    assert first.snippet == ""
    assert (second.width, second.height) == (250, 100)
    assert second.site == "page.example"


# ------------------------------------------------------------------------------------ parse_answer: bad shapes


@pytest.mark.parametrize("data", [[], "text", 5, None])
def test_non_object_answer_is_a_parse_error(data: Any) -> None:
    with pytest.raises(ParseError):
        parse_answer("web", data)


@pytest.mark.parametrize(
    ("search_type", "answer_type"), [("web", "news"), ("news", "search"), ("images", "ErrorResponse"), ("web", 3)]
)
def test_contradicting_answer_type_is_a_parse_error(search_type: SearchType, answer_type: Any) -> None:
    with pytest.raises(ParseError, match="expected"):
        parse_answer(search_type, {"type": answer_type, "results": []})


def test_missing_type_is_tolerated() -> None:
    parsed = parse_answer("news", {"results": [{"title": "t", "url": "https://x.example/"}]})
    assert len(parsed.sections[0].results) == 1


def test_wrong_types_are_skipped_or_coerced_never_raised() -> None:
    data = {
        "type": "search",
        "query": ["not", "a", "dict"],
        "web": {
            "results": [
                "a string",
                None,
                {"title": 42, "url": "https://num.example/", "description": ["x"], "age": {"no": 1}},
                {"title": "no url"},
                {"title": "ftp", "url": "ftp://files.example/"},
                {"title": "spaces", "url": "https://bad example/"},
                {"title": "bad port", "url": "https://x.example:notaport/"},
                {"title": "", "url": "https://www.untitled.example/a", "meta_url": "nope"},
            ]
        },
        "news": {"results": {"not": "a list"}},
        "videos": [],
        "faq": {"results": [{"question": None, "answer": 3, "url": "https://faq.example/"}]},
        "infobox": {"results": [{"label": "L", "attributes": [["only-key"], "x", [1, 2], ["k", None]]}]},
        "locations": {
            "results": [{"title": "P", "provider_url": "https://p.example/", "rating": {"ratingValue": "5"}}]
        },
        "summarizer": "key",
    }
    parsed = parse_answer("web", data)
    web = parsed.sections[0].results
    assert [r.title for r in web] == ["42", "untitled.example"]
    assert web[0].snippet == ""
    assert web[0].age is None
    keys = [s.key for s in parsed.sections]
    assert keys == ["web", "faq", "locations"]  # the infobox had no url
    assert parsed.sections[1].results[0].snippet == "3"
    assert parsed.sections[2].results[0].rating is None
    assert parsed.summarizer_key is None


def test_empty_answer_has_no_sections() -> None:
    parsed = parse_answer("web", {"type": "search"})
    assert parsed.sections == []
    assert parsed.more_available is None


# ------------------------------------------------------------------------------------ summary line


def test_summary_line_single_section_plural() -> None:
    envelope = envelope_for([Section(key="web", label="Web results", results=make_results(10))], has_more=True)
    assert summary_line(envelope) == '10 web results for "hello world" (offset 0, more available).'


def test_summary_line_singular_without_more() -> None:
    envelope = envelope_for([Section(key="web", label="Web results", results=make_results(1))], offset=2)
    assert summary_line(envelope) == '1 web result for "hello world" (offset 2).'


def test_summary_line_news_and_videos() -> None:
    news = envelope_for([Section(key="news", label="News", results=make_results(3))], search_type="news")
    assert summary_line(news) == '3 news results for "hello world" (offset 0).'
    videos = envelope_for([Section(key="videos", label="V", results=make_results(2))], search_type="videos")
    assert summary_line(videos) == '2 video results for "hello world" (offset 0).'


def test_summary_line_images_has_no_offset() -> None:
    images = envelope_for([Section(key="images", label="I", results=make_results(4))], search_type="images")
    assert summary_line(images) == '4 image results for "hello world".'
    images.meta.has_more = True
    assert summary_line(images) == '4 image results for "hello world" (more available).'


def test_summary_line_several_sections() -> None:
    sections = [
        Section(key="web", label="Web results", results=make_results(10)),
        Section(key="news", label="News", results=make_results(2)),
    ]
    envelope = envelope_for(sections, query="x")
    assert summary_line(envelope) == '12 results for "x": 10 web, 2 news (offset 0).'


def test_summary_line_with_no_results() -> None:
    assert summary_line(envelope_for([])) == '0 web results for "hello world" (offset 0).'


# ------------------------------------------------------------------------------------ rendering


def test_single_web_section_renders_without_header() -> None:
    data = {"type": "search", "web": {"results": [web_item(1), web_item(2, extra_snippets=["more"])]}}
    envelope, text = fit_to_limits(parsed_envelope("web", data), 120, 32768)
    assert text.split("\n") == [
        '2 web results for "hello world" (offset 0).',
        "1. Result 1 · 1 days ago",
        "https://www.site1.example/page",
        'Snippet "1" with hello',
        "2. Result 2 · 2 days ago",
        "https://www.site2.example/page",
        'Snippet "2" with hello',
        "  + more",
    ]
    assert envelope.meta.returned == 2
    assert envelope.warnings == []


def test_source_is_shown_when_it_differs_from_the_url_host() -> None:
    result = Result(title="T", url="https://cdn.example/x", snippet="s", site="publisher.example", age="today")
    _, text = fit_to_limits(envelope_for([Section(key="web", label="Web results", results=[result])]), 120, 32768)
    assert text.split("\n")[1] == "1. T · today · publisher.example"


def test_full_answer_renders_every_section_type() -> None:
    envelope, text = fit_to_limits(parsed_envelope("web", full_web_answer(), has_more=True), 300, 98304)
    lines = text.split("\n")
    assert lines[0] == '8 results for "hello world": 2 web, 1 news, 1 video, 1 discussion, 1 faq, 1 infobox, ' + (
        "1 location (offset 0, more available)."
    )
    assert "## Web results" in lines
    assert "## Locations" in lines
    assert "" not in lines  # no blank lines
    assert "3. Big news · BREAKING · 1 hour ago" in lines
    assert "4. A video · 01:56 · 6,588,953 views · Louie · March 30, 2018" in lines
    assert "5. Why hello world? · r/learn · 87 answers · November 2, 2024 · reddit.com" not in lines
    assert "5. Why hello world? · r/learn · 87 answers · November 2, 2024" in lines
    assert "6. What is hello world?" in lines
    assert "A first program." in lines
    assert "k0: v0; k1: v1; k2: v2; k3: v3; k4: v4; k5: v5; k6: v6; k7: v7" in lines
    assert "1 Main St, Springfield · +1 555 0100 · 4.5/5 (120 reviews)" in lines
    assert lines[-3] == 'Summarizer key: {"query": "hello world"}'
    assert lines[-2].startswith("! QUERY_ALTERED: ")
    assert lines[-1] == "! DEDUPLICATED: Dropped 1 duplicate result (same URL in an earlier section)."
    assert numbered_urls(text) == structured_urls(envelope)


def test_a_lone_section_other_than_the_search_type_gets_a_header() -> None:
    envelope = envelope_for([Section(key="news", label="News results", results=make_results(1))])
    _, text = fit_to_limits(envelope, 120, 32768)
    assert text.split("\n")[1] == "## News results"


def test_numbering_runs_across_sections() -> None:
    sections = [
        Section(key="web", label="Web results", results=make_results(2)),
        Section(key="faq", label="FAQ", results=[Result(title="Q?", url="https://q.example/", snippet="A.")]),
    ]
    _, text = fit_to_limits(envelope_for(sections), 120, 32768)
    assert "3. Q?" in text.split("\n")


def test_image_results_show_size_and_image_url() -> None:
    image = Result(
        title="Pic", url="https://page.example/p", image_url="https://cdn.example/i.jpg", width=640, height=480
    )
    _, text = fit_to_limits(
        envelope_for([Section(key="images", label="I", results=[image])], search_type="images"), 120, 32768
    )
    assert text.split("\n")[1:] == ["1. Pic · 640x480", "https://page.example/p | image: https://cdn.example/i.jpg"]


def test_warning_lines_are_capped_at_300_characters() -> None:
    warning = WarningItem(code="VALUE_NORMALIZED", message="m" * 1000)
    _, text = fit_to_limits(envelope_for([], warnings=[warning]), 120, 32768)
    last = text.split("\n")[-1]
    assert last.startswith("! VALUE_NORMALIZED: mmm")
    assert len(last) == 300


def test_at_most_twenty_warnings_are_rendered() -> None:
    warnings = [WarningItem(code="VALUE_NORMALIZED", message=f"w{i}") for i in range(30)]
    envelope, text = fit_to_limits(envelope_for([], warnings=warnings), 300, 98304)
    assert sum(line.startswith("! ") for line in text.split("\n")) == 20
    assert len(envelope.warnings) == 30


# ------------------------------------------------------------------------------------ fit_to_limits


def web_envelope(n: int, snippet: str = "a short snippet", **kwargs: Any) -> SearchEnvelope:
    return envelope_for([Section(key="web", label="Web results", results=make_results(n, snippet))], **kwargs)


def test_output_that_fits_is_unchanged() -> None:
    envelope = web_envelope(10)
    fitted, text = fit_to_limits(envelope, 120, 32768)
    assert fitted.sections == envelope.sections
    assert fitted.meta.returned == 10
    assert fitted.meta.has_more is False
    assert all(w.code != WarningCode.OUTPUT_TRUNCATED for w in fitted.warnings)
    assert len(text.split("\n")) == 31


def test_exactly_at_the_byte_limit_is_not_cut_and_one_byte_less_is() -> None:
    envelope = web_envelope(40, "s" * 150)
    _, full = fit_to_limits(envelope, 300, 98304)
    size = len(full.encode())
    fitted, text = fit_to_limits(envelope, 300, size)
    assert text == full
    assert fitted.meta.returned == 40
    fitted, text = fit_to_limits(envelope, 300, size - 1)
    assert fitted.meta.returned < 40
    assert len(text.encode()) <= size - 1
    assert any(w.code == WarningCode.OUTPUT_TRUNCATED for w in fitted.warnings)


def test_exactly_at_the_line_limit_is_not_cut_and_one_line_less_is() -> None:
    envelope = web_envelope(20)
    _, full = fit_to_limits(envelope, 300, 98304)
    count = len(full.split("\n"))
    assert count == 61
    assert fit_to_limits(envelope, count, 98304)[1] == full
    fitted, text = fit_to_limits(envelope, count - 1, 98304)
    assert len(text.split("\n")) == 59  # 1 summary + 19 results of 3 lines + 1 truncation warning
    assert fitted.meta.returned == 19


def test_cut_keeps_structured_and_text_in_agreement() -> None:
    sections = [
        Section(key="web", label="Web results", results=make_results(15, "w" * 200)),
        Section(
            key="news",
            label="News results",
            results=[Result(title=f"N{i}", url=f"https://n.example/{i}", snippet="n" * 200) for i in range(10)],
        ),
        Section(key="faq", label="FAQ", results=[Result(title="Q", url="https://q.example/", snippet="A")]),
    ]
    envelope = envelope_for(sections, has_more=False)
    fitted, text = fit_to_limits(envelope, 300, 5000)
    assert within(text, 300, 5000)
    assert numbered_urls(text) == structured_urls(fitted)
    assert fitted.meta.returned == len(structured_urls(fitted))
    assert fitted.meta.has_more is True
    assert text.split("\n")[0] == fitted.summary == summary_line(fitted)
    assert [s.key for s in fitted.sections] == ["web", "news"][: len(fitted.sections)]
    assert fitted.sections[-1].section_limit_reached is True
    assert all(not s.section_limit_reached for s in fitted.sections[:-1])
    truncated = [w for w in fitted.warnings if w.code == WarningCode.OUTPUT_TRUNCATED]
    assert len(truncated) == 1
    assert truncated[0].message == (
        f"Showing {fitted.meta.returned} of 26 results to fit max_lines=300/max_bytes=5000; "
        "raise them (max 300 lines / 98304 bytes) or request fewer results."
    )
    assert text.split("\n")[-1] == f"! OUTPUT_TRUNCATED: {truncated[0].message}"


def test_a_section_emptied_by_the_cut_is_removed() -> None:
    sections = [
        Section(key="web", label="Web results", results=make_results(5)),
        Section(key="news", label="News results", results=make_results(5, "x" * 300)),
    ]
    for index, result in enumerate(sections[1].results):
        result.url = f"https://news.example/{index}"
    envelope = envelope_for(sections)
    _, full = fit_to_limits(envelope, 300, 98304)
    header_at = full.split("\n").index("## News results")
    budget = len("\n".join(full.split("\n")[:header_at]).encode()) + 200
    fitted, text = fit_to_limits(envelope, 300, budget)
    assert [s.key for s in fitted.sections] == ["web"]
    assert "## News results" not in text
    assert "## Web results" not in text  # one section matching the search type: no header
    assert text.split("\n")[0].startswith('5 web results for "hello world"')


def test_a_single_huge_result_is_dropped_whole() -> None:
    result = Result(
        title="T" * 200,
        url="https://big.example/" + "p" * 3000,
        snippet="字" * 400,
        extra_snippets=["字" * 300] * 5,
    )
    envelope = envelope_for([Section(key="web", label="Web results", results=[result])])
    fitted, text = fit_to_limits(envelope, 120, 4096)
    assert within(text, 120, 4096)
    assert fitted.sections == []
    assert fitted.meta.returned == 0
    assert "p" * 100 not in text
    assert text.split("\n")[0] == '0 web results for "hello world" (offset 0, more available).'
    assert "Showing 0 of 1 results" in text


def test_many_small_results_are_cut_to_fit() -> None:
    envelope = web_envelope(500)
    fitted, text = fit_to_limits(envelope, 300, 98304)
    assert within(text, 300, 98304)
    assert fitted.meta.returned == (300 - 2) // 3
    assert numbered_urls(text) == structured_urls(fitted)


def test_input_envelope_is_not_mutated() -> None:
    envelope = web_envelope(50)
    before = envelope.model_dump()
    fit_to_limits(envelope, 20, 4096)
    assert envelope.model_dump() == before


def test_truncation_renders_each_result_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = render._render_result

    def counting(result: Result, number: int) -> list[str]:
        nonlocal calls
        calls += 1
        return real(result, number)

    monkeypatch.setattr(render, "_render_result", counting)
    envelope = web_envelope(2000, "snippet " * 40)
    fitted, text = fit_to_limits(envelope, 300, 98304)
    assert calls == 2000
    assert within(text, 300, 98304)
    assert 0 < fitted.meta.returned < 2000


def test_too_many_warnings_for_the_line_budget_are_shed() -> None:
    warnings = [WarningItem(code="VALUE_NORMALIZED", message=f"warning {i}") for i in range(20)]
    envelope = web_envelope(5, warnings=warnings, summarizer_key="k" * 50)
    fitted, text = fit_to_limits(envelope, 20, 4096)
    lines = text.split("\n")
    assert len(lines) <= 20
    assert lines[-1].startswith("! OUTPUT_TRUNCATED: Showing 0 of 5 results")
    assert fitted.meta.returned == 0
    assert len(fitted.warnings) == 21  # structured keeps every warning


def test_summary_line_is_cut_as_a_last_resort() -> None:
    envelope = web_envelope(3, query="q" * 400)
    fitted, text = fit_to_limits(envelope, 20, 300)
    assert within(text, 20, 300)
    assert text.split("\n")[-1].startswith("! OUTPUT_TRUNCATED")
    assert text.split("\n")[0].endswith("…")
    assert fitted.summary.startswith("0 web results")


def test_degenerate_limits_still_hold() -> None:
    envelope = web_envelope(3, warnings=[WarningItem(code="X", message="y" * 100)])
    for max_lines, max_bytes in [(1, 10), (2, 1), (1, 1000), (5, 0)]:
        _, text = fit_to_limits(envelope, max_lines, max_bytes)
        assert within(text, max_lines, max_bytes)


def test_a_real_sized_hello_world_page_costs_at_most_260_bytes_per_result() -> None:
    page = json.loads(HELLO_WORLD_PAGE.read_text(encoding="utf-8"))
    data = {"type": "search", "query": page["query"], "web": {"results": page["web"]["results"][:10]}}
    envelope = parsed_envelope("web", data, has_more=True)
    fitted, text = fit_to_limits(envelope, 120, 32768)
    assert fitted.meta.returned == 10
    lines = text.split("\n")
    body = "\n".join(lines[1:]) + "\n"
    per_result = len(body.encode()) / 10
    assert per_result <= 260, per_result
    assert all(r.age for r in fitted.sections[0].results[:4])
    assert "<strong>" not in text
    assert "&quot;" not in text


# ------------------------------------------------------------------------------------ error and summary text


def error_envelope(code: ErrorCode, retryable: bool = False, **details: Any) -> ErrorEnvelope:
    return ErrorEnvelope(
        error=ErrorBody(code=code.value, message="Something failed.", retryable=retryable, details=details),
        meta=ErrorMeta(server_version="0.0.0", trace_id="trace-1"),
    )


@pytest.mark.parametrize("code", list(ErrorCode))
def test_error_text_names_code_retryability_and_advice(code: ErrorCode) -> None:
    text = render_error_text(error_envelope(code, retryable=code == ErrorCode.RATE_LIMITED))
    assert text.startswith(f"{code.value}: Something failed. (")
    assert ERROR_ADVICE[code] in text
    assert ("(retryable)" in text) is (code == ErrorCode.RATE_LIMITED)
    assert ("(not retryable)" in text) is (code != ErrorCode.RATE_LIMITED)
    assert "\n" not in text


def test_error_text_shows_useful_details_compactly() -> None:
    text = render_error_text(
        error_envelope(
            ErrorCode.UPSTREAM_VALIDATION,
            status=422,
            brave_code="VALIDATION",
            retry_after_seconds=1.5,
            errors=[{"loc": ["query", "count"], "msg": "Input should be less than or equal to 20"}, {"msg": "x"}],
            nested={"not": "dumped"},
        )
    )
    assert text.endswith(
        "[status=422; brave_code=VALIDATION; retry_after_seconds=1.5; "
        "error=query.count: Input should be less than or equal to 20]"
    )
    assert "{" not in text
    assert "Traceback" not in text


def test_error_text_for_invalid_argument_names_the_field() -> None:
    text = render_error_text(
        error_envelope(
            ErrorCode.INVALID_ARGUMENT,
            field="result_filter",
            invalid_values=["maps"],
            errors=[{"field": "result_filter", "message": "result_filter: no valid entry"}],
        )
    )
    assert "field=result_filter" in text
    assert "error=result_filter: no valid entry" in text
    assert "invalid_values=maps" in text


def test_error_text_with_an_unknown_code_still_renders() -> None:
    envelope = ErrorEnvelope(
        error=ErrorBody(code="SOMETHING_NEW", message="line one\nline two\x1b[0m", retryable=True),
        meta=ErrorMeta(server_version="0", trace_id="t"),
    )
    assert render_error_text(envelope) == "SOMETHING_NEW: line one line two (retryable)"


def test_summary_text() -> None:
    envelope = SummaryEnvelope(
        summary_text="Hello world is a first program.",
        title="Hello world",
        references=[Reference(number=1, url="https://a.example/"), Reference(number=2, url="https://b.example/")],
        followups=["Who wrote it first?"],
        meta=SummaryMeta(trace_id="t", server_version="0"),
        warnings=[WarningItem(code="SUMMARY_NOT_AVAILABLE", message="none")],
    )
    assert render_summary_text(envelope).split("\n") == [
        "Hello world",
        "Hello world is a first program.",
        "Sources:",
        "[1] https://a.example/",
        "[2] https://b.example/",
        "Follow-up: Who wrote it first?",
        "! SUMMARY_NOT_AVAILABLE: none",
    ]


def test_summary_text_without_title_or_sources() -> None:
    envelope = SummaryEnvelope(summary_text="Just text.", meta=SummaryMeta(trace_id="t", server_version="0"))
    assert render_summary_text(envelope) == "Just text."


def test_a_count_sent_as_thousands_of_digits_is_ignored_not_a_crash() -> None:
    """Python refuses int() on over 4,300 digits; a hostile body must not turn that into INTERNAL_ERROR."""
    item = {"url": "https://a.example/v", "title": "v", "video": {"views": "0" * 5000}}
    parsed = parse_answer("videos", {"type": "videos", "results": [item]})
    assert parsed.sections[0].results[0].views is None
