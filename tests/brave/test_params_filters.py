"""prepare_search: result_filter, goggles and the boolean flags, per search type."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from brave_search_mcp.models.errors import InvalidArgument, WarningCode
from brave_search_mcp.models.inputs import WebSearchArgs
from tests.brave.prepared import INLINE, codes, only, prep, values

# ------------------------------------------------------------------------------------ result_filter


def test_result_filter_is_lower_cased_and_comma_joined() -> None:
    prepared = prep(result_filter=[" Web ", "NEWS", "web"])
    assert values(prepared, "result_filter") == ["web,news"]
    assert prepared.warnings == ()


def test_result_filter_given_as_a_string_is_refused_not_coerced() -> None:
    """The schema says array: a string is a wrong type, never silently split (issue 11 item 7)."""
    with pytest.raises(ValidationError, match="result_filter"):
        WebSearchArgs.model_validate({"query": "q", "result_filter": "web, faq"})


def test_unknown_result_filter_entries_are_dropped() -> None:
    prepared = prep(result_filter=["web", "images", "bogus"])
    assert values(prepared, "result_filter") == ["web"]
    message = only(prepared, WarningCode.INVALID_RESULT_FILTER)
    assert '"images"' in message
    assert '"bogus"' in message


def test_result_filter_without_a_valid_entry_is_a_hard_error() -> None:
    with pytest.raises(InvalidArgument) as info:
        prep(result_filter=["images", "maps"])
    assert info.value.field == "result_filter"
    assert info.value.details["invalid_values"] == ["images", "maps"]
    assert "web" in info.value.message


def test_empty_result_filter_means_all_sections() -> None:
    prepared = prep(result_filter=[])
    assert values(prepared, "result_filter") == []
    assert prepared.warnings == ()


def test_with_a_summary_no_result_filter_is_sent_and_the_named_sections_are_picked() -> None:
    """Issue 37 item 7: a filter hides Brave's summarizer key unless it names "summarizer", and naming it drops the
    web results (Brave #272); so with a summary the whole answer is asked for and the named sections are shown."""
    for named in (["web", "summarizer"], ["web"]):
        prepared = prep(result_filter=[*named, "news"], summary=True)
        assert values(prepared, "result_filter") == []
        assert values(prepared, "summary") == ["1"]
        assert (prepared.summary, prepared.sections) == (True, ("web", "news"))
        assert prepared.warnings == ()
    plain = prep(result_filter=["web", "news"])
    assert values(plain, "result_filter") == ["web,news"]
    assert plain.sections == ("web", "news")
    assert prep().sections is None


def test_summarizer_filter_alone_becomes_summary() -> None:
    prepared = prep(result_filter=["summarizer"])
    assert values(prepared, "result_filter") == []
    assert values(prepared, "summary") == ["1"]
    assert prepared.summary is True
    assert "summarizer" in only(prepared, WarningCode.VALUE_NORMALIZED)


@pytest.mark.parametrize("search_type", ["news", "videos", "images"])
def test_result_filter_is_ignored_outside_web(search_type: str) -> None:
    prepared = prep(search_type=search_type, result_filter=["bogus"])
    assert values(prepared, "result_filter") == []
    assert "result_filter" in only(prepared, WarningCode.PARAM_IGNORED)


# ------------------------------------------------------------------------------------ goggles


def test_goggles_keep_https_urls_and_inline_rules() -> None:
    url = "https://raw.githubusercontent.com/brave/goggles-quickstart/main/goggles/rust_programming.goggle"
    prepared = prep(goggles=[url, INLINE, "! a comment line"])
    assert values(prepared, "goggles") == [url, INLINE, "! a comment line"]
    assert prepared.warnings == ()


@pytest.mark.parametrize(
    "bad", ["http://example.com/g.goggle", "file:///etc/passwd", "javascript:alert(1)", "rust", "https://", "ftp://x"]
)
def test_unsafe_or_bare_goggles_are_dropped(bad: str) -> None:
    prepared = prep(goggles=[bad, "https://example.com/ok.goggle"])
    assert values(prepared, "goggles") == ["https://example.com/ok.goggle"]
    assert "goggles" in only(prepared, WarningCode.INVALID_GOGGLES)


def test_more_than_three_goggles_are_cut_to_three() -> None:
    urls = [f"https://example.com/{i}.goggle" for i in range(5)]
    prepared = prep(goggles=urls)
    assert values(prepared, "goggles") == urls[:3]
    message = only(prepared, WarningCode.INVALID_GOGGLES)
    assert "2 extra" in message


def test_goggles_work_for_news_but_not_videos() -> None:
    assert values(prep(search_type="news", goggles=[INLINE]), "goggles") == [INLINE]
    prepared = prep(search_type="videos", goggles=[INLINE])
    assert values(prepared, "goggles") == []
    assert "goggles" in only(prepared, WarningCode.PARAM_IGNORED)


# ------------------------------------------------------------------------------------ flags


def test_booleans_are_sent_as_lower_case_words() -> None:
    prepared = prep(spellcheck=False, extra_snippets=True, units="imperial")
    assert values(prepared, "spellcheck") == ["false"]
    assert values(prepared, "extra_snippets") == ["true"]
    assert values(prepared, "units") == ["imperial"]


def test_text_decorations_true_is_kept_and_rendered() -> None:
    prepared = prep(text_decorations=True)
    assert values(prepared, "text_decorations") == ["true"]
    assert prepared.text_decorations is True


def test_text_decorations_false_is_sent_once() -> None:
    assert values(prep(text_decorations=False), "text_decorations") == ["false"]


def test_text_decorations_are_ignored_for_news() -> None:
    prepared = prep(search_type="news", text_decorations=True)
    assert values(prepared, "text_decorations") == []
    assert prepared.text_decorations is False
    assert "text_decorations" in only(prepared, WarningCode.PARAM_IGNORED)


def test_summary_is_sent_for_web() -> None:
    prepared = prep(summary=True)
    assert values(prepared, "summary") == ["1"]
    assert prepared.summary is True


def test_summary_is_ignored_outside_web() -> None:
    prepared = prep(search_type="news", summary=True)
    assert values(prepared, "summary") == []
    assert prepared.summary is False
    assert "summary" in only(prepared, WarningCode.PARAM_IGNORED)


def test_image_search_ignores_each_unsupported_parameter_once() -> None:
    prepared = prep(
        search_type="images",
        ui_language="en-US",
        freshness="pw",
        units="metric",
        extra_snippets=True,
        goggles=[INLINE],
        spellcheck=True,
        country="US",
    )
    ignored = [w.message for w in prepared.warnings if w.code == WarningCode.PARAM_IGNORED]
    assert len(ignored) == 5
    for name in ("ui_language", "freshness", "units", "extra_snippets", "goggles"):
        assert sum(name in message for message in ignored) == 1
    sent = {name for name, _ in prepared.params}
    assert sent == {"q", "count", "spellcheck", "country"}


def test_videos_ignore_web_only_parameters() -> None:
    prepared = prep(search_type="videos", units="metric", extra_snippets=False, offset=2)
    assert codes(prepared) == [WarningCode.PARAM_IGNORED, WarningCode.PARAM_IGNORED]
    assert values(prepared, "offset") == ["2"]
