"""parse_answer: Brave JSON of every search type to clean sections, tolerant of bad shapes, never crashing."""

from __future__ import annotations

from typing import Any

import pytest

from brave_search_mcp.brave.results import ParsedAnswer, parse_answer, pick_sections
from brave_search_mcp.models.envelopes import Result, Section
from brave_search_mcp.models.errors import ParseError, WarningCode
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.render.text import dedup_key as normalize_url
from tests.search_pages import full_web_answer, web_item

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


def test_duplicates_across_page_sections_are_dropped_and_counted_per_section() -> None:
    data = full_web_answer()
    data["videos"]["results"].append({"title": "again", "url": "https://www.site2.example/page#t=1"})
    parsed = parse_answer("web", data)
    urls = [r.url for s in parsed.sections for r in s.results if s.key in ("web", "news", "videos", "discussions")]
    assert len(urls) == len({normalize_url(u) for u in urls})
    assert parsed.duplicates == {"news": 1, "videos": 1}
    assert [w for w in parsed.warnings if w.code == WarningCode.DEDUPLICATED] == []  # the pick says what it hid


def test_an_faq_or_infobox_about_a_web_results_page_is_not_a_duplicate() -> None:
    """Issue 37: Brave's infobox is usually the first web result's page, and FAQ entries come from result pages;
    they say something else about the page, so they stay and no DEDUPLICATED warning blames them."""
    page = web_item(1)
    data = {
        "web": {"results": [page]},
        "faq": {"results": [{"question": "Q?", "answer": "A.", "title": "T", "url": page["url"]}]},
        "infobox": {"results": [{"title": "Thing", "url": page["url"], "long_desc": "About it."}]},
    }
    parsed = parse_answer("web", data)
    assert [s.key for s in parsed.sections] == ["web", "faq", "infobox"]
    assert parsed.duplicates == {}


def test_duplicate_within_one_section_is_dropped() -> None:
    parsed = parse_answer("web", {"web": {"results": [web_item(1), web_item(1)]}})
    assert len(parsed.sections[0].results) == 1
    assert parsed.duplicates == {"web": 1}


def test_no_duplicate_warning_when_nothing_was_dropped() -> None:
    parsed = parse_answer("web", {"web": {"results": [web_item(1), web_item(2)]}})
    assert (parsed.warnings, parsed.duplicates) == ([], {})


def _answer(**sizes: int) -> ParsedAnswer:
    sections = [
        Section(key=key, label=key, results=[Result(title=f"{key} {n}", url=f"https://{key}.example/{n}")
                                             for n in range(size)])
        for key, size in sizes.items()
    ]  # fmt: skip
    return ParsedAnswer(sections=sections, duplicates={"news": 2})


def test_max_results_bounds_the_total_web_first_the_rest_as_room_allows() -> None:
    """Issue 37 item 2: max_results 3 shows 3 results, not 12; a short web section lets the others fill in."""
    shown, warnings = pick_sections(_answer(web=10, news=3, videos=3), limit=3)
    assert [(s.key, len(s.results), s.section_limit_reached) for s in shown] == [("web", 3, True)]
    assert warnings == []  # news' repeats were never going to be shown
    shown, warnings = pick_sections(_answer(web=2, news=3, videos=3), limit=4)
    assert [(s.key, len(s.results)) for s in shown] == [("web", 2), ("news", 2)]
    assert [w.message for w in warnings] == ["Dropped 2 duplicate results (same URL in an earlier section)."]


def test_sections_named_in_result_filter_get_max_results_each() -> None:
    shown, warnings = pick_sections(_answer(web=10, news=3, videos=3, faq=1), limit=2, named=("web", "videos"))
    assert [(s.key, len(s.results)) for s in shown] == [("web", 2), ("videos", 2)]
    assert warnings == []
    shown, _ = pick_sections(_answer(web=1), limit=5, named=("news",))
    assert shown == []  # nothing of what was named: the use case answers NO_RESULTS


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


def test_a_count_sent_as_thousands_of_digits_is_ignored_not_a_crash() -> None:
    """Python refuses int() on over 4,300 digits; a hostile body must not turn that into INTERNAL_ERROR."""
    item = {"url": "https://a.example/v", "title": "v", "video": {"views": "0" * 5000}}
    parsed = parse_answer("videos", {"type": "videos", "results": [item]})
    assert parsed.sections[0].results[0].views is None
