"""prepare_search: the rules, the defaults sent, the query (cleaned, cut, refused), count and offset."""

from __future__ import annotations

import pytest

from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.params import rules_for
from brave_search_mcp.models.errors import InvalidArgument, WarningCode
from brave_search_mcp.models.inputs import WebSearchArgs
from tests.brave.prepared import codes, only, prep, values

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


def test_bidi_and_zero_width_characters_leave_the_query_with_a_warning() -> None:
    """Issue 36: a right-to-left override can make a query read otherwise than it searches; they were removed
    silently. They still go, and a warning names them and what was searched."""
    prepared = prep(query="pay\u200bpal \u202eevil\u202c login")
    assert values(prepared, "q") == ["paypal evil login"]
    message = only(prepared, WarningCode.VALUE_NORMALIZED)
    assert "U+200B, U+202E, U+202C" in message and '"paypal evil login" was searched' in message
    assert prep(query="plain words").warnings == ()


def test_query_loses_lone_surrogates_that_would_break_utf8() -> None:
    prepared = prep(query="caf\ud800e au lait")
    assert prepared.query == "cafe au lait"
    prepared.query.encode("utf-8")


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


@pytest.mark.parametrize(
    "query", ["\u200b", "\u200b\u200d\ufeff", "\x00\x07", "\x00\x01\x7f", " \u202e\t\n", "\u2060\u200c"]
)
def test_a_query_of_only_invisible_characters_is_refused_never_sent(query: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        prep(query=query)
    assert caught.value.field == "query"
    assert caught.value.details["field"] == "query"


def test_a_single_word_over_the_limit_is_cut_with_a_warning_that_says_so() -> None:
    prepared = prep(query="x" * 450)
    assert values(prepared, "q") == ["x" * 400]
    message = only(prepared, WarningCode.QUERY_TRUNCATED)
    assert "450 characters is alone over the limit" in message and "inside that word" in message
    boundary = prep(query=" ".join(["word"] * 90))
    assert "at a word boundary" in only(boundary, WarningCode.QUERY_TRUNCATED)
