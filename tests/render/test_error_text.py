"""Error envelopes and summaries as text: code, retryability, advice, details; the summary and its sources."""

from __future__ import annotations

from typing import Any

import pytest

from brave_search_mcp.models.envelopes import ErrorBody, ErrorEnvelope, ErrorMeta, WarningItem
from brave_search_mcp.models.errors import ERROR_ADVICE, ErrorCode
from brave_search_mcp.models.summary import Reference, SummaryEnvelope, SummaryMeta
from brave_search_mcp.render.compact import render_error_text, render_summary_text

# ------------------------------------------------------------------------------------ error and summary text


def error_envelope(code: ErrorCode, retryable: bool = False, **details: Any) -> ErrorEnvelope:
    return ErrorEnvelope(
        error=ErrorBody(code=code.value, message="Something failed.", retryable=retryable, details=details),
        meta=ErrorMeta(server_version="0.0.0", trace_id="trace-1"),
    )


@pytest.mark.parametrize("code", list(ErrorCode))
def test_error_text_names_code_retryability_and_advice(code: ErrorCode) -> None:
    text = render_error_text(error_envelope(code, retryable=code == ErrorCode.RATE_LIMITED))
    assert text.startswith(f"{code.value}: Something failed. (")
    assert ERROR_ADVICE[code] in text
    assert ("(retryable)" in text) is (code == ErrorCode.RATE_LIMITED)
    assert ("(not retryable)" in text) is (code != ErrorCode.RATE_LIMITED)
    assert "\n" not in text


def test_error_text_shows_useful_details_compactly() -> None:
    text = render_error_text(
        error_envelope(
            ErrorCode.UPSTREAM_VALIDATION,
            status=422,
            brave_code="VALIDATION",
            retry_after_seconds=1.5,
            errors=[{"loc": ["query", "count"], "msg": "Input should be less than or equal to 20"}, {"msg": "x"}],
            nested={"not": "dumped"},
        )
    )
    assert text.endswith(
        "[status=422; brave_code=VALIDATION; retry_after_seconds=1.5; "
        "error=query.count: Input should be less than or equal to 20]"
    )
    assert "{" not in text
    assert "Traceback" not in text


def test_error_text_for_invalid_argument_names_the_field() -> None:
    text = render_error_text(
        error_envelope(
            ErrorCode.INVALID_ARGUMENT,
            field="result_filter",
            invalid_values=["maps"],
            errors=[{"field": "result_filter", "message": "result_filter: no valid entry"}],
        )
    )
    assert "field=result_filter" in text
    assert "error=result_filter: no valid entry" in text
    assert "invalid_values=maps" in text


def test_error_text_with_an_unknown_code_still_renders() -> None:
    envelope = ErrorEnvelope(
        error=ErrorBody(code="SOMETHING_NEW", message="line one\nline two\x1b[0m", retryable=True),
        meta=ErrorMeta(server_version="0", trace_id="t"),
    )
    assert render_error_text(envelope) == "SOMETHING_NEW: line one line two (retryable)"


def test_summary_text() -> None:
    envelope = SummaryEnvelope(
        summary_text="Hello world is a first program.",
        title="Hello world",
        references=[Reference(number=1, url="https://a.example/"), Reference(number=2, url="https://b.example/")],
        followups=["Who wrote it first?"],
        meta=SummaryMeta(trace_id="t", server_version="0"),
        warnings=[WarningItem(code="SUMMARY_NOT_AVAILABLE", message="none")],
    )
    assert render_summary_text(envelope).split("\n") == [
        "Hello world",
        "Hello world is a first program.",
        "Sources:",
        "[1] https://a.example/",
        "[2] https://b.example/",
        "Follow-up: Who wrote it first?",
        "! SUMMARY_NOT_AVAILABLE: none",
    ]


def test_summary_text_without_title_or_sources() -> None:
    envelope = SummaryEnvelope(summary_text="Just text.", meta=SummaryMeta(trace_id="t", server_version="0"))
    assert render_summary_text(envelope) == "Just text."
