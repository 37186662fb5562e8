"""SearXNG's own sections through the tools: result_filter names what SearXNG has (answers, infobox, suggestions),
direct answers show above the results whatever max_results says, and help and errors list the sections the chain
in force can answer with."""

from __future__ import annotations

import pytest

from brave_search_mcp.tools.boundary import ToolOutcome
from testkit.brave.brave import FakeBrave
from testkit.searxng import FakeSearxng
from tests.test_searxng_tools import codes, tools

pytestmark = pytest.mark.anyio


async def test_result_filter_names_the_sections_searxng_has_and_applies_them() -> None:
    searxng = FakeSearxng(results_per_page=4, pages=1)
    searxng.answers = [{"answer": "sha256 hash digest: 2cf24dba", "url": None, "engine": "plugin: hash_plugin"}]
    searxng.infoboxes = [{"infobox": "Hello", "id": "https://en.example.org/hello", "content": "A greeting."}]
    async with tools("searxng", searxng) as boundary:
        answers = await boundary.call("brave_web_search", {"query": "sha256 hello", "result_filter": ["answers"]})
        three = await boundary.call(
            "brave_web_search",
            {"query": "sha256 hello", "result_filter": ["web", "infobox", "answers"], "max_results": 2},
        )
        lacking = await boundary.call("brave_web_search", {"query": "q", "result_filter": ["web", "discussions"]})
        none = await boundary.call("brave_web_search", {"query": "q", "result_filter": ["faq", "bogus"]})
    assert not answers.is_error, answers.text
    assert [s["key"] for s in answers.structured["sections"]] == ["answers"]
    assert "sha256 hash digest: 2cf24dba" in answers.text and codes(answers) == []
    assert [s["key"] for s in three.structured["sections"]] == ["web", "infobox", "answers"]
    assert len(three.structured["sections"][0]["results"]) == 2 and codes(three) == []
    assert [s["key"] for s in lacking.structured["sections"]] == ["web"]
    assert [(w["code"], w["message"]) for w in lacking.structured["warnings"]] == [
        (
            "INVALID_RESULT_FILTER",
            'result_filter "discussions": SearXNG\'s answers have no such section; shown: web (it has web, infobox, '
            "answers, suggestions).",
        )
    ]
    assert not none.is_error and "every section it has is shown" in none.structured["warnings"][0]["message"]


async def test_searxng_s_sections_are_valid_only_where_searxng_may_answer() -> None:
    searxng = FakeSearxng()
    brave = FakeBrave(rate_per_second=1000)
    async with tools("brave", searxng, brave) as alone, tools("brave,searxng", searxng, brave) as chain:
        refused = await alone.call("brave_web_search", {"query": "q", "result_filter": ["answers"]})
        by_brave = await chain.call("brave_web_search", {"query": "q", "result_filter": ["web", "answers"]})
    assert refused.structured["error"]["code"] == "INVALID_ARGUMENT"
    assert by_brave.structured["meta"]["provider"] == "brave" and not by_brave.is_error
    assert [s["key"] for s in by_brave.structured["sections"]] == ["web"]
    assert 'result_filter "answers": Brave has no such section; it shows the others named.' in [
        w["message"] for w in by_brave.structured["warnings"]
    ]


async def test_answers_infoboxes_and_suggestions_show_above_the_results_whatever_max_results_says() -> None:
    """Issue 43 item 11: a default search (max_results 10, a full page of web results) dropped them."""
    searxng = FakeSearxng()
    searxng.answers = [{"answer": "42", "url": None, "engine": "plugin: calculator"}]
    searxng.infoboxes = [{"infobox": "Douglas Adams", "id": "https://en.wikipedia.org/wiki/Douglas_Adams",
                          "content": "English author " * 400, "engine": "wikipedia"}]  # fmt: skip
    searxng.suggestions = ["hitchhiker's guide", "deep thought"]
    async with tools("searxng", searxng) as boundary:
        outcome = await boundary.call("brave_web_search", {"query": "answer to everything", "max_results": 1})
    assert not outcome.is_error, outcome.text
    keys = [(s["key"], len(s["results"])) for s in outcome.structured["sections"]]
    assert keys == [("web", 1), ("infobox", 1), ("answers", 1), ("suggestions", 2)]
    assert outcome.structured["meta"]["returned"] == 1  # they are not results
    lines = outcome.text.split("\n")
    assert lines[0].startswith('1 web result for "answer to everything"')
    assert lines[1:3] == ["## Infobox", "- Douglas Adams"]
    assert "- 42" not in lines and "42" in lines and "- deep thought" in lines
    assert [line for line in lines if line.startswith("1. ")] == [lines[lines.index("## Web results") + 1]]
    assert len("\n".join(lines[: lines.index("## Web results")]).encode()) < 2_600  # bounded, a long infobox too


async def test_the_summary_line_counts_an_answers_only_filter_as_answers() -> None:
    searxng = FakeSearxng(results_per_page=4, pages=1)
    searxng.answers = [{"answer": "sha256 hash digest: 2cf24dba", "url": None, "engine": "plugin: hash_plugin"}]
    async with tools("searxng", searxng) as boundary:
        answers = await boundary.call("brave_web_search", {"query": "sha256 hello", "result_filter": ["answers"]})
    assert answers.text.splitlines()[0].startswith('1 answer for "sha256 hello"'), answers.text


async def test_help_with_brave_and_searxng_lists_the_result_filter_sections_of_both() -> None:
    async with tools("brave,searxng", FakeSearxng()) as chain, tools("brave", FakeSearxng()) as alone:
        both = await chain.call("brave_web_search_help", {"topic": "params"})
        brave = await alone.call("brave_web_search_help", {"topic": "params"})

    def values(outcome: ToolOutcome) -> list[str]:
        entries = outcome.structured["parameters"]["brave_web_search"]
        return next(e["values"] for e in entries if e["name"] == "result_filter")

    assert {"answers", "suggestions", "discussions", "web"} <= set(values(both))
    assert "answers" not in values(brave)  # Brave alone refuses it: help does not offer it


async def test_a_filter_naming_only_empty_sections_does_not_say_nothing_was_found() -> None:
    searxng = FakeSearxng(results_per_page=4, pages=1)  # web results, but no direct answer for this query
    async with tools("searxng", searxng) as boundary:
        outcome = await boundary.call("brave_web_search", {"query": "plain words", "result_filter": ["answers"]})
    error = outcome.structured["error"]
    assert error["code"] == "NO_RESULTS"
    assert error["message"].startswith('No answers for "plain words" (result_filter); the search found other')
    assert "rephrase" not in outcome.text and "result_filter" in error["details"]["what_to_do"]


async def test_a_result_filter_without_a_valid_entry_lists_searxng_s_sections_when_searxng_alone_serves() -> None:
    async with tools("searxng", FakeSearxng()) as boundary:
        refused = await boundary.call("brave_web_search", {"query": "q", "result_filter": ["bogus"]})
    error = refused.structured["error"]
    assert (error["code"], error["details"]["field"]) == ("INVALID_ARGUMENT", "result_filter")
    assert error["message"].endswith("use some of: answers, infobox, suggestions, web."), error["message"]
