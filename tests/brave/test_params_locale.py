"""prepare_search: country, search and UI languages, safe search and freshness, repaired or dropped with advice."""

from __future__ import annotations

import pytest

from brave_search_mcp.models.errors import WarningCode
from tests.brave.prepared import codes, only, prep, values

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
