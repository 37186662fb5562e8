"""params.prepare_search: what reaches Brave, and the warning an agent gets for every repair."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.params import PreparedSearch, rules_for
from brave_search_mcp.brave.params import prepare_search as _prepare
from brave_search_mcp.config import Settings
from brave_search_mcp.models.errors import InvalidArgument, WarningCode
from brave_search_mcp.models.inputs import WebSearchArgs

SETTINGS = Settings(max_lines=120, max_bytes=32 * 1024)


def prep(**arguments: Any) -> PreparedSearch:
    arguments.setdefault("query", "hello world")
    return _prepare(WebSearchArgs.model_validate(arguments), SETTINGS)


def codes(prepared: PreparedSearch) -> list[str]:
    return [w.code for w in prepared.warnings]


def values(prepared: PreparedSearch, key: str) -> list[str]:
    return [value for name, value in prepared.params if name == key]


def only(prepared: PreparedSearch, code: WarningCode) -> str:
    messages = [w.message for w in prepared.warnings if w.code == code.value]
    assert len(messages) == 1, prepared.warnings
    return messages[0]


# ------------------------------------------------------------------------------------ rules and constants


def test_unknown_search_type_is_an_invalid_argument() -> None:
    with pytest.raises(InvalidArgument) as info:
        rules_for("maps")  # type: ignore[arg-type]
    assert info.value.field == "search_type"


# ------------------------------------------------------------------------------------ defaults


def test_plain_web_search_sends_the_minimum() -> None:
    prepared = prep()
    assert prepared.params == (("q", "hello world"), ("count", "10"), ("text_decorations", "false"))
    assert prepared.endpoint == Endpoint.WEB
    assert prepared.requested == 10
    assert prepared.offset == 0
    assert prepared.query == "hello world"
    assert prepared.max_lines == 120
    assert prepared.max_bytes == 32 * 1024
    assert prepared.text_decorations is False
    assert prepared.summary is False
    assert prepared.debug is False
    assert prepared.use_cache is True
    assert prepared.throttle is True
    assert prepared.warnings == ()


@pytest.mark.parametrize("search_type", ["news", "videos", "images"])
def test_other_types_send_no_text_decorations(search_type: str) -> None:
    prepared = prep(search_type=search_type)
    assert prepared.params == (("q", "hello world"), ("count", "10"))
    assert prepared.warnings == ()


def test_q_is_always_first() -> None:
    prepared = prep(country="DE", offset=2, freshness="pw", max_results=5)
    assert prepared.params[0] == ("q", "hello world")


def test_brave_spellings_are_accepted_as_aliases() -> None:
    prepared = prep(count=7, search_lang="de", ui_lang="de-DE", safesearch="strict")
    assert values(prepared, "count") == ["7"]
    assert values(prepared, "search_lang") == ["de"]
    assert values(prepared, "ui_lang") == ["de-DE"]
    assert values(prepared, "safesearch") == ["strict"]


# ------------------------------------------------------------------------------------ query


def test_query_is_cleaned_of_controls_and_extra_whitespace() -> None:
    prepared = prep(query="  hello\t\n  wor\x00ld\x1b  ")
    assert prepared.query == "hello world"
    assert values(prepared, "q") == ["hello world"]
    assert prepared.warnings == ()


def test_query_loses_lone_surrogates_that_would_break_utf8() -> None:
    prepared = prep(query="caf\ud800e au lait")
    assert prepared.query == "cafe au lait"
    prepared.query.encode("utf-8")


def test_query_of_only_control_characters_is_a_hard_error() -> None:
    with pytest.raises(InvalidArgument) as info:
        prep(query="\x00\x01\x7f")
    assert info.value.field == "query"
    assert info.value.details["field"] == "query"


def test_blank_query_is_rejected_by_the_model() -> None:
    with pytest.raises(ValueError, match="query must not be empty"):
        WebSearchArgs(query="   ")


def test_long_query_is_cut_at_a_word_boundary() -> None:
    words = [f"word{i:03d}" for i in range(60)]  # 7 chars each: 60 words, 479 chars
    prepared = prep(query=" ".join(words))
    assert prepared.query == " ".join(words[:50])
    message = only(prepared, WarningCode.QUERY_TRUNCATED)
    assert "query" in message
    assert "50 words" in message


def test_query_over_400_characters_is_cut_to_whole_words() -> None:
    query = " ".join(["abcdefghijklmnopqrstuvwxyz"] * 20)  # 20 words, 539 chars
    prepared = prep(query=query)
    assert len(prepared.query) <= 400
    assert prepared.query.split() == ["abcdefghijklmnopqrstuvwxyz"] * len(prepared.query.split())
    assert len(prepared.query.split()) == 14  # 14*26 + 13 = 377; 15 words would be 404
    assert WarningCode.QUERY_TRUNCATED in codes(prepared)


def test_a_single_giant_word_is_cut_hard() -> None:
    prepared = prep(query="x" * 1000)
    assert prepared.query == "x" * 400
    assert codes(prepared) == [WarningCode.QUERY_TRUNCATED]


def test_query_of_exactly_the_limits_is_untouched() -> None:
    query = " ".join(["abcdefg"] * 50)  # 50 words, 399 chars
    assert prep(query=query).warnings == ()


# ------------------------------------------------------------------------------------ count and offset


def test_count_above_the_type_maximum_is_clamped() -> None:
    prepared = prep(max_results=25)
    assert values(prepared, "count") == ["20"]
    assert prepared.requested == 20
    message = only(prepared, WarningCode.COUNT_CLAMPED)
    assert "max_results" in message
    assert "25" in message


@pytest.mark.parametrize(("search_type", "count"), [("news", 50), ("videos", 50), ("images", 200), ("web", 20)])
def test_count_at_the_type_maximum_passes(search_type: str, count: int) -> None:
    prepared = prep(search_type=search_type, max_results=count)
    assert values(prepared, "count") == [str(count)]
    assert prepared.warnings == ()


def test_images_count_is_clamped_at_200() -> None:
    prepared = prep(search_type="images", max_results=500)
    assert values(prepared, "count") == ["200"]
    assert codes(prepared) == [WarningCode.COUNT_CLAMPED]


def test_offset_is_sent_as_a_page_index() -> None:
    prepared = prep(offset=3)
    assert values(prepared, "offset") == ["3"]
    assert prepared.offset == 3


def test_offset_zero_is_not_sent() -> None:
    prepared = prep(offset=0)
    assert values(prepared, "offset") == []
    assert prepared.warnings == ()


def test_offset_above_nine_is_capped() -> None:
    prepared = prep(offset=30)
    assert values(prepared, "offset") == ["9"]
    assert prepared.offset == 9
    message = only(prepared, WarningCode.OFFSET_CAPPED)
    assert "offset" in message
    assert "30" in message


@pytest.mark.parametrize("offset", [0, 4])
def test_offset_is_ignored_for_images(offset: int) -> None:
    prepared = prep(search_type="images", offset=offset)
    assert values(prepared, "offset") == []
    assert prepared.offset == 0
    assert "offset" in only(prepared, WarningCode.OFFSET_IGNORED)


# ------------------------------------------------------------------------------------ country and languages


@pytest.mark.parametrize(("given", "sent"), [("de", "DE"), ("De", "DE"), (" us ", "US"), ("all", "ALL")])
def test_country_any_case_is_sent_upper_case(given: str, sent: str) -> None:
    prepared = prep(country=given)
    assert values(prepared, "country") == [sent]
    assert prepared.warnings == ()


def test_unknown_country_is_dropped_with_advice() -> None:
    prepared = prep(country="VN")
    assert values(prepared, "country") == []
    message = only(prepared, WarningCode.INVALID_COUNTRY)
    assert '"VN"' in message
    assert "ALL" in message
    assert "brave_web_search_help" in message


def test_uk_is_normalized_to_gb() -> None:
    prepared = prep(country="uk")
    assert values(prepared, "country") == ["GB"]
    assert codes(prepared) == [WarningCode.VALUE_NORMALIZED]


@pytest.mark.parametrize(
    ("given", "sent"),
    [("EN", "en"), ("pt_BR", "pt-br"), ("PT-PT", "pt-pt"), ("zh-Hans", "zh-hans"), ("en_GB", "en-gb")],
)
def test_search_language_spelling_is_fixed_silently(given: str, sent: str) -> None:
    prepared = prep(search_language=given)
    assert values(prepared, "search_lang") == [sent]
    assert prepared.warnings == ()


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        ("zh", "zh-hans"),
        ("zh-CN", "zh-hans"),
        ("zh_sg", "zh-hans"),
        ("zh-TW", "zh-hant"),
        ("zh-hk", "zh-hant"),
        ("en-US", "en"),
        ("en-ca", "en"),
        ("en_AU", "en"),
        ("iw", "he"),
    ],
)
def test_search_language_aliases_are_normalized_with_a_warning(given: str, sent: str) -> None:
    prepared = prep(search_language=given)
    assert values(prepared, "search_lang") == [sent]
    message = only(prepared, WarningCode.VALUE_NORMALIZED)
    assert "search_language" in message
    assert sent in message


@pytest.mark.parametrize("given", ["pt", "klingon", "en-xx", ""])
def test_unknown_or_ambiguous_search_language_is_dropped(given: str) -> None:
    prepared = prep(search_language=given)
    assert values(prepared, "search_lang") == []
    assert "search_language" in only(prepared, WarningCode.INVALID_SEARCH_LANGUAGE)


@pytest.mark.parametrize(("given", "sent"), [("en_us", "en-US"), ("DE-de", "de-DE"), ("zh-cn", "zh-CN")])
def test_ui_language_case_is_fixed_silently(given: str, sent: str) -> None:
    prepared = prep(ui_language=given)
    assert values(prepared, "ui_lang") == [sent]
    assert prepared.warnings == ()


@pytest.mark.parametrize(
    ("given", "sent"),
    [("en", "en-US"), ("de", "de-DE"), ("PT", "pt-BR"), ("nb", "no-NO"), ("no", "no-NO"), ("el", "el-GR")],
)
def test_bare_ui_language_gets_its_obvious_market(given: str, sent: str) -> None:
    prepared = prep(ui_language=given)
    assert values(prepared, "ui_lang") == [sent]
    message = only(prepared, WarningCode.VALUE_NORMALIZED)
    assert "ui_language" in message
    assert sent in message


@pytest.mark.parametrize("given", ["en-XX", "xx", "en-US-x", "english"])
def test_unknown_ui_language_is_dropped(given: str) -> None:
    prepared = prep(ui_language=given)
    assert values(prepared, "ui_lang") == []
    assert "ui_language" in only(prepared, WarningCode.INVALID_UI_LANGUAGE)


# ------------------------------------------------------------------------------------ safe search and freshness


def test_safe_search_not_given_is_not_sent() -> None:
    for search_type in ("web", "news", "videos", "images"):
        assert values(prep(search_type=search_type), "safesearch") == []


def test_moderate_image_search_becomes_strict() -> None:
    prepared = prep(search_type="images", safe_search="moderate")
    assert values(prepared, "safesearch") == ["strict"]
    message = only(prepared, WarningCode.SAFE_SEARCH_ADJUSTED)
    assert "safe_search" in message
    assert "moderate" in message


@pytest.mark.parametrize(("search_type", "value"), [("images", "off"), ("news", "moderate"), ("web", "off")])
def test_allowed_safe_search_is_sent(search_type: str, value: str) -> None:
    prepared = prep(search_type=search_type, safe_search=value)
    assert values(prepared, "safesearch") == [value]
    assert prepared.warnings == ()


@pytest.mark.parametrize(
    ("given", "sent"),
    [("pd", "pd"), (" PW ", "pw"), ("py", "py"), ("2024-02-29to2024-03-01", "2024-02-29to2024-03-01")],
)
def test_valid_freshness_is_sent(given: str, sent: str) -> None:
    prepared = prep(freshness=given)
    assert values(prepared, "freshness") == [sent]
    assert prepared.warnings == ()


def test_same_day_range_is_valid() -> None:
    assert values(prep(freshness="2025-01-01to2025-01-01"), "freshness") == ["2025-01-01to2025-01-01"]


def test_freshness_range_with_spaces_is_normalized() -> None:
    prepared = prep(freshness="2025-01-01 to 2025-02-01")
    assert values(prepared, "freshness") == ["2025-01-01to2025-02-01"]
    assert codes(prepared) == [WarningCode.VALUE_NORMALIZED]


@pytest.mark.parametrize(
    "given",
    [
        "2025-02-30to2025-03-01",  # not a real date
        "2023-02-29to2023-03-01",  # not a leap year
        "2025-03-01to2025-02-01",  # start after end
        "20250101to20250201",
        "2025-1-1to2025-2-1",
        "yesterday",
        "pdx",
        "",
    ],
)
def test_invalid_freshness_is_dropped(given: str) -> None:
    prepared = prep(freshness=given)
    assert values(prepared, "freshness") == []
    message = only(prepared, WarningCode.INVALID_FRESHNESS)
    assert "freshness" in message


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


def test_summarizer_is_never_sent_in_result_filter() -> None:
    prepared = prep(result_filter=["web", "summarizer"], summary=True)
    assert values(prepared, "result_filter") == ["web"]
    assert values(prepared, "summary") == ["1"]
    assert prepared.summary is True
    assert prepared.warnings == ()


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


INLINE = "$discard\n$site=docs.rs"


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


# ------------------------------------------------------------------------------------ output limits and debug


def test_output_limits_default_to_settings() -> None:
    prepared = _prepare(WebSearchArgs(query="x"), Settings(max_lines=50, max_bytes=8192))
    assert (prepared.max_lines, prepared.max_bytes) == (50, 8192)


@pytest.mark.parametrize(
    ("given", "expected"),
    [({"max_lines": 5}, (20, 32768)), ({"max_lines": 1000}, (300, 32768)), ({"max_bytes": 10**7}, (120, 98304))],
)
def test_output_limits_are_clamped(given: dict[str, int], expected: tuple[int, int]) -> None:
    prepared = prep(**given)
    assert (prepared.max_lines, prepared.max_bytes) == expected
    message = only(prepared, WarningCode.OUTPUT_LIMIT_CLAMPED)
    assert next(iter(given)) in message


def test_output_limits_inside_the_range_are_kept() -> None:
    prepared = prep(max_lines=20, max_bytes=98304)
    assert (prepared.max_lines, prepared.max_bytes) == (20, 98304)
    assert prepared.warnings == ()


def test_debug_controls_without_debug_are_ignored_with_one_warning() -> None:
    prepared = prep(include_raw_payload=True, disable_cache=True, disable_throttle=True, include_request_url=True)
    assert codes(prepared) == [WarningCode.DEBUG_OPTION_IGNORED]
    assert "disable_cache" in prepared.warnings[0].message
    assert prepared.use_cache is True
    assert prepared.throttle is True
    assert prepared.include_raw_payload is False
    assert prepared.include_request_url is False


def test_debug_enables_its_controls() -> None:
    prepared = prep(debug=True, include_raw_payload=True, disable_cache=True, disable_throttle=True)
    assert prepared.debug is True
    assert prepared.include_raw_payload is True
    assert prepared.include_request_url is False
    assert prepared.use_cache is False
    assert prepared.throttle is False
    assert prepared.warnings == ()


# ------------------------------------------------------------------------------------ messages and order


def test_messages_show_sanitized_capped_values() -> None:
    prepared = prep(country="\x1b[31m" + "Z" * 100)
    message = only(prepared, WarningCode.INVALID_COUNTRY)
    assert "\x1b" not in message
    assert "Z" * 59 not in message
    assert "…" in message


def test_warnings_come_in_a_stable_order() -> None:
    arguments: dict[str, Any] = {
        "query": "x " * 60,
        "search_type": "images",
        "max_results": 900,
        "offset": 2,
        "country": "VN",
        "search_language": "zz",
        "safe_search": "moderate",
        "freshness": "pw",
        "max_lines": 1,
        "disable_cache": True,
    }
    expected = [
        WarningCode.QUERY_TRUNCATED,
        WarningCode.COUNT_CLAMPED,
        WarningCode.OFFSET_IGNORED,
        WarningCode.INVALID_COUNTRY,
        WarningCode.INVALID_SEARCH_LANGUAGE,
        WarningCode.SAFE_SEARCH_ADJUSTED,
        WarningCode.PARAM_IGNORED,
        WarningCode.OUTPUT_LIMIT_CLAMPED,
        WarningCode.DEBUG_OPTION_IGNORED,
    ]
    assert codes(prep(**arguments)) == expected
    assert prep(**arguments) == prep(**arguments)


def test_full_web_request_param_order_is_stable() -> None:
    prepared = prep(
        summary=True,
        goggles=[INLINE],
        result_filter=["web"],
        extra_snippets=True,
        spellcheck=True,
        units="metric",
        freshness="pd",
        safe_search="off",
        ui_language="en-GB",
        search_language="en",
        country="GB",
        offset=1,
        max_results=3,
    )
    assert [name for name, _ in prepared.params] == [
        "q",
        "count",
        "offset",
        "country",
        "search_lang",
        "ui_lang",
        "safesearch",
        "freshness",
        "units",
        "spellcheck",
        "extra_snippets",
        "result_filter",
        "goggles",
        "text_decorations",
        "summary",
    ]


@pytest.mark.parametrize("query", ["\u200b", "\u200b\u200d\ufeff", "\x00\x07", " \u202e\t\n", "\u2060\u200c"])
def test_a_query_of_only_invisible_characters_is_refused_never_sent(query: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        prep(query=query)
    assert caught.value.details["field"] == "query"


def test_a_single_word_over_the_limit_is_cut_with_a_warning_that_says_so() -> None:
    prepared = prep(query="x" * 450)
    assert values(prepared, "q") == ["x" * 400]
    message = only(prepared, WarningCode.QUERY_TRUNCATED)
    assert "450 characters is alone over the limit" in message and "inside that word" in message
    boundary = prep(query=" ".join(["word"] * 90))
    assert "at a word boundary" in only(boundary, WarningCode.QUERY_TRUNCATED)
