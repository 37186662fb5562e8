"""prepare_search: output limits and debug controls, the messages' values, and a stable order of warnings and params."""

from __future__ import annotations

from typing import Any

import pytest

from brave_search_mcp.brave.params import prepare_search as _prepare
from brave_search_mcp.config import Settings
from brave_search_mcp.models.errors import WarningCode
from brave_search_mcp.models.inputs import WebSearchArgs
from tests.brave.prepared import INLINE, codes, only, prep

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
    assert prepared.warnings[0].message.endswith("only apply with debug: true; they were ignored.")
    alone = prep(disable_cache=True).warnings[0].message
    assert alone == "disable_cache only applies with debug: true; it was ignored."


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
        "goggles",
        "text_decorations",
        "summary",
    ]  # no result_filter with a summary (see test_params_filters); without one it goes before goggles:
    names = [name for name, _ in prep(result_filter=["web"], extra_snippets=True, goggles=[INLINE]).params]
    assert names[names.index("extra_snippets") :] == ["extra_snippets", "result_filter", "goggles", "text_decorations"]
