"""The compact text: the summary line, numbered results across sections, headers, warnings."""

from __future__ import annotations

from brave_search_mcp.models.envelopes import Result, Section, WarningItem
from brave_search_mcp.models.search import SearchEnvelope
from brave_search_mcp.render.compact import fit_to_limits
from tests.search_pages import (
    envelope_for,
    full_web_answer,
    make_results,
    numbered_urls,
    parsed_envelope,
    structured_urls,
    web_item,
)

# ------------------------------------------------------------------------------------ summary line


def summary_line(envelope: SearchEnvelope) -> str:
    """The first line of the rendered answer (the summary), with room to spare."""
    fitted, text = fit_to_limits(envelope, 300, 98_304)
    assert text.split("\n")[0] == fitted.summary
    return fitted.summary


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
    assert lines[0] == '7 results for "hello world": 2 web, 1 news, 1 video, 1 discussion, 1 faq, 1 location ' + (
        "(offset 0, more available)."
    )
    assert lines[1:3] == ["## Infobox", "- Computer program"]  # not a result: above them, unnumbered
    assert [s.key for s in envelope.sections][-1] == "infobox"  # structured: after the results
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
