"""fit_to_limits: the text always fits its line and byte bounds, cut by whole results, structured and text in step."""

from __future__ import annotations

import json
from typing import Any

import pytest

from brave_search_mcp.models.envelopes import Result, Section, WarningItem
from brave_search_mcp.models.errors import WarningCode
from brave_search_mcp.models.search import SearchEnvelope
from brave_search_mcp.render import compact as render
from brave_search_mcp.render.compact import fit_to_limits
from tests.search_pages import (
    HELLO_WORLD_PAGE,
    envelope_for,
    make_results,
    numbered_urls,
    parsed_envelope,
    structured_urls,
    within,
)

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
    assert text.split("\n")[0] == fitted.summary
    shown = ", ".join(f"{len(s.results)} {s.key}" for s in fitted.sections)  # what is shown, not what was found
    assert fitted.summary == f'{fitted.meta.returned} results for "hello world": {shown} (offset 0, more available).'
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


def test_a_summarizer_key_longer_than_the_byte_budget_leaves_no_room_for_a_result() -> None:
    """Found by the body fuzzer: the text says it shows none and why; the envelope keeps the key (and the answer is
    a success, not an error: raising the bounds shows the results)."""
    envelope = web_envelope(3, summarizer_key="0" * 5000)
    fitted, text = fit_to_limits(envelope, 20, 4096)
    assert within(text, 20, 4096)
    assert fitted.meta.returned == 0
    assert fitted.summarizer_key == "0" * 5000
    assert text.split("\n")[-1].startswith("! OUTPUT_TRUNCATED: Showing 0 of 3 results")


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
