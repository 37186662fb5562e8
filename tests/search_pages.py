"""Brave answers and search envelopes built for the parse and render tests (tests/brave/, tests/render/)."""

from __future__ import annotations

from typing import Any

from brave_search_mcp.brave.results import parse_answer, pick_sections
from brave_search_mcp.models.envelopes import DIRECT_ANSWERS, Result, Section, WarningItem
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.models.search import SearchEnvelope, SearchMeta
from testkit.brave import FIXTURES_DIR

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
    return SearchEnvelope(
        summary="", sections=sections, meta=meta, warnings=warnings or [], summarizer_key=summarizer_key
    )


MAX_PICKED = 10_000


def parsed_envelope(search_type: SearchType, data: dict[str, Any], **kwargs: Any) -> SearchEnvelope:
    parsed = parse_answer(search_type, data)
    sections, picked = pick_sections(parsed, limit=MAX_PICKED)  # everything, as a large max_results would show
    return envelope_for(
        sections,
        search_type=search_type,
        warnings=[*parsed.warnings, *picked],
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
    """The results' URLs (the direct answers, shown unnumbered above them, are not results)."""
    return [r.url for s in envelope.sections if s.key not in DIRECT_ANSWERS for r in s.results]
