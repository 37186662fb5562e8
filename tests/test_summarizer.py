"""Summarizer polling and flattening: waits, deadlines, errors and the text an agent ends up reading."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from brave_search_mcp.brave.client import BraveClient, BraveResponse, Params
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.summarizer import (
    MAX_POLLS,
    PollSchedule,
    SummarizerSource,
    Summary,
    fetch_summary,
    flatten_summary,
)
from brave_search_mcp.models.errors import (
    AuthFailed,
    BraveSearchError,
    ErrorCode,
    InvalidArgument,
    NetworkError,
    NotInPlan,
    QuotaExceeded,
    RateLimited,
    SummaryUnavailable,
    UpstreamTimeout,
)
from brave_search_mcp.models.summary import Reference
from testkit.clock import FakeClock

from .conftest import BRAVE_BODIES

pytestmark = pytest.mark.anyio

JSON_KEY = '{"query": "what is \\"k2\\"?", "country": "us", "language": "en", "results_hash": "a&b=c+d/e%20"}'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ---------------------------------------------------------------------------------------------
# Fakes


@dataclass
class Call:
    """One poll as the fake source saw it."""

    endpoint: Endpoint
    params: list[tuple[str, str]]
    use_cache: bool
    throttle: bool
    at: float


@dataclass
class FakeSource:
    """Answers polls from a script; the last entry repeats. An exception entry is raised instead."""

    script: list[Any]
    clock: FakeClock
    request_seconds: float = 0.0
    calls: list[Call] = field(default_factory=list)

    async def get(
        self, endpoint: Endpoint, params: Params, *, use_cache: bool = True, throttle: bool = True
    ) -> BraveResponse:
        self.calls.append(Call(endpoint, list(params), use_cache, throttle, self.clock.now))
        self.clock.now += self.request_seconds
        item = self.script[min(len(self.calls), len(self.script)) - 1]
        if isinstance(item, BaseException):
            raise item
        return BraveResponse(
            data=item,
            status=200,
            cached=False,
            attempts=1,
            duration_ms=1.0,
            request_target=("http://127.0.0.1/res/v1/summarizer/search", ()),
            body_bytes=len(json.dumps(item)),
            rate_limit=None,
        )


def _brave_client_is_a_source(client: BraveClient) -> SummarizerSource:
    """Checked by mypy only: the real client must fit the protocol the poller uses."""
    return client


PENDING: dict[str, Any] = {"type": "summarizer", "status": "pending"}


def tok(text: str) -> dict[str, Any]:
    return {"type": "token", "data": text}


def complete(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "summarizer", "status": "complete", "summary": list(messages), **extra}


SIMPLE = complete(tok("K2 is the second highest mountain."), title="Second highest mountain")


async def run(
    script: list[Any],
    *,
    key: str = "test-summary-key",
    schedule: PollSchedule | None = None,
    request_seconds: float = 0.0,
    **kwargs: Any,
) -> tuple[Summary, FakeSource, FakeClock]:
    clock = FakeClock()
    source = FakeSource(script, clock, request_seconds)
    summary = await fetch_summary(
        source, key, schedule=schedule or PollSchedule(), clock=clock, sleep=clock.sleep, **kwargs
    )
    return summary, source, clock


async def run_error(script: list[Any], **kwargs: Any) -> tuple[BraveSearchError, FakeSource, FakeClock]:
    clock = FakeClock()
    source = FakeSource(script, clock, kwargs.pop("request_seconds", 0.0))
    with pytest.raises(BraveSearchError) as info:
        await fetch_summary(source, "test-summary-key", clock=clock, sleep=clock.sleep, **kwargs)
    return info.value, source, clock


# ---------------------------------------------------------------------------------------------
# Polling


async def test_pending_then_complete_waits_with_growing_intervals() -> None:
    summary, source, clock = await run([PENDING, PENDING, {"type": "summarizer"}, SIMPLE])

    assert summary.text == "K2 is the second highest mountain."
    assert summary.status == "complete"
    assert summary.polls == 4
    assert len(source.calls) == 4
    assert clock.sleeps == [0.25, 0.5, 1.0]  # first poll at once, then one wait before each later poll
    assert all(later > earlier for earlier, later in zip(clock.sleeps, clock.sleeps[1:], strict=False))
    gaps = [b.at - a.at for a, b in zip(source.calls, source.calls[1:], strict=False)]
    assert all(gap >= 0.25 for gap in gaps)


async def test_intervals_stop_growing_at_max_interval() -> None:
    _, _, clock = await run([PENDING] * 6 + [SIMPLE])

    assert clock.sleeps == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]


async def test_first_delay_is_waited_before_the_first_poll() -> None:
    schedule = PollSchedule(first_delay=0.1, initial_interval=0.3, factor=1.5, max_interval=1.0)

    summary, source, clock = await run([PENDING, PENDING, SIMPLE], schedule=schedule)

    assert clock.sleeps == [0.1, 0.3, pytest.approx(0.45)]
    assert source.calls[0].at == pytest.approx(1000.1)
    assert summary.polls == 3


async def test_complete_on_first_poll_never_sleeps() -> None:
    summary, _, clock = await run([SIMPLE])

    assert clock.sleeps == []
    assert summary.polls == 1


async def test_failed_is_terminal_and_says_so() -> None:
    error, source, _ = await run_error([PENDING, {"type": "summarizer", "status": "failed"}, SIMPLE])

    assert isinstance(error, SummaryUnavailable)
    assert error.code is ErrorCode.SUMMARY_UNAVAILABLE
    assert error.message == "Unable to retrieve a Summarizer summary."
    assert error.details == {"reason": "failed", "polls": 2}
    assert len(source.calls) == 2  # no poll after "failed"


async def test_deadline_stops_polling_without_oversleeping() -> None:
    error, source, clock = await run_error([PENDING])

    assert isinstance(error, SummaryUnavailable)
    assert error.retryable is True
    assert error.message == "Unable to retrieve a Summarizer summary. (reason: the summary was not ready within 20 s)"
    assert error.details["reason"] == "deadline"
    assert error.details["polls"] == len(source.calls)
    assert sum(clock.sleeps) <= 20.0
    assert clock.now - 1000.0 <= 20.0
    assert 5 <= len(source.calls) <= 15  # 0, .25, .75, 1.75, 3.75, then every 2 s up to 20 s
    assert all(0 < wait <= 2.0 for wait in clock.sleeps)


async def test_deadline_counts_time_spent_in_requests() -> None:
    error, source, _ = await run_error([PENDING], request_seconds=3.0)

    assert isinstance(error, SummaryUnavailable)
    assert error.details["reason"] == "deadline"
    assert all(call.at - 1000.0 <= 20.0 for call in source.calls)
    assert len(source.calls) < 8  # fewer polls than with instant answers


async def test_custom_deadline_is_named_in_the_message() -> None:
    schedule = PollSchedule(deadline=2.5)

    error, source, clock = await run_error([PENDING], schedule=schedule)

    assert "within 2.5 s" in error.message
    assert sum(clock.sleeps) <= 2.5
    assert len(source.calls) == 4  # at 0, .25, .75, 1.75; the next 2 s wait would pass 2.5 s


async def test_first_delay_beyond_the_deadline_gives_up_without_polling() -> None:
    error, source, clock = await run_error([SIMPLE], schedule=PollSchedule(first_delay=5.0, deadline=1.0))

    assert error.details["reason"] == "deadline"
    assert source.calls == []
    assert clock.sleeps == []


async def test_poll_count_is_capped_even_with_a_generous_deadline() -> None:
    schedule = PollSchedule(initial_interval=0.001, factor=1.0, max_interval=0.001, deadline=10_000.0)

    error, source, clock = await run_error([PENDING], schedule=schedule)

    assert isinstance(error, SummaryUnavailable)
    assert error.details["reason"] == "max_polls"
    assert len(source.calls) == MAX_POLLS == 100
    assert len(clock.sleeps) == MAX_POLLS - 1


@pytest.mark.parametrize(
    "body",
    [
        {"type": "summarizer", "status": "complete"},
        complete(),
        complete({"type": "enum_start", "data": "ol"}, {"type": "enum_end"}),
        complete(tok("   "), tok("<b></b>")),
        complete(title="Only a title", followups=["a follow-up"]),
        {"type": "summarizer", "status": "complete", "summary": "plain string, not messages"},
    ],
)
async def test_complete_without_usable_summary_is_empty(body: dict[str, Any]) -> None:
    error, _, _ = await run_error([body])

    assert isinstance(error, SummaryUnavailable)
    assert error.details == {"reason": "empty", "polls": 1}
    assert error.message.startswith("Unable to retrieve a Summarizer summary.")


@pytest.mark.parametrize("body", [["not", "a", "dict"], "text", None])
async def test_non_object_body_is_empty(body: Any) -> None:
    error, source, _ = await run_error([body])

    assert isinstance(error, SummaryUnavailable)
    assert error.details["reason"] == "empty"
    assert len(source.calls) == 1


async def test_params_carry_the_key_verbatim_and_no_flags_by_default() -> None:
    _, source, _ = await run([PENDING, SIMPLE], key=JSON_KEY)

    for call in source.calls:
        assert call.endpoint is Endpoint.SUMMARIZER
        assert call.params == [("key", JSON_KEY)]


@pytest.mark.parametrize(
    ("entity_info", "inline_references", "extra"),
    [
        (True, False, [("entity_info", "1")]),
        (False, True, [("inline_references", "1")]),
        (True, True, [("entity_info", "1"), ("inline_references", "1")]),
        (False, False, []),
    ],
)
async def test_flags_are_sent_only_when_true(
    entity_info: bool, inline_references: bool, extra: list[tuple[str, str]]
) -> None:
    _, source, _ = await run([SIMPLE], key=JSON_KEY, entity_info=entity_info, inline_references=inline_references)

    assert source.calls[0].params == [("key", JSON_KEY), *extra]


async def test_polls_bypass_the_cache_but_go_through_the_throttle() -> None:
    _, source, _ = await run([PENDING, PENDING, SIMPLE])

    assert [(c.use_cache, c.throttle) for c in source.calls] == [(False, True)] * 3


@pytest.mark.parametrize("key", ["", "   "])
async def test_blank_key_is_rejected_before_any_poll(key: str) -> None:
    clock = FakeClock()
    source = FakeSource([SIMPLE], clock)

    with pytest.raises(InvalidArgument) as info:
        await fetch_summary(source, key, clock=clock, sleep=clock.sleep)

    assert info.value.details["field"] == "key"
    assert source.calls == []


@pytest.mark.parametrize(
    ("status", "brave_code", "detail", "meta"),
    [
        (400, "OPTION_NOT_IN_PLAN", "The option is not subscribed in the plan.", {"component": "authentication"}),
        (403, "RESOURCE_NOT_ALLOWED", "The user is not authorized to access this resource.", {"component": "api"}),
    ],
)
async def test_not_in_plan_names_the_plan_needed(
    status: int, brave_code: str, detail: str, meta: dict[str, str]
) -> None:
    original = NotInPlan(detail, status=status, brave_code=brave_code, details=meta)

    error, source, _ = await run_error([original])

    assert isinstance(error, NotInPlan)
    assert error.code is ErrorCode.NOT_IN_PLAN
    assert '"Pro AI"' in error.message
    assert "legacy" in error.message
    assert detail in error.message
    assert error.details == {**original.details, "plan_needed": "Pro AI"}
    assert error.details["status"] == status
    assert error.details["brave_code"] == brave_code
    assert error.status == status
    assert error.brave_code == brave_code
    assert error.retryable is False
    assert error.__cause__ is original
    assert len(source.calls) == 1


@pytest.mark.parametrize(
    "original",
    [
        AuthFailed("The provided subscription token is invalid.", status=422, brave_code="SUBSCRIPTION_TOKEN_INVALID"),
        RateLimited("Request rate limit exceeded for plan.", status=429, brave_code="RATE_LIMITED"),
        QuotaExceeded("Request quota limit exceeded for plan.", status=429, brave_code="QUOTA_LIMITED"),
        UpstreamTimeout("Brave did not answer within 15 s."),
        NetworkError("Connection refused."),
    ],
)
async def test_other_errors_propagate_unchanged(original: BraveSearchError) -> None:
    error, source, _ = await run_error([PENDING, original])

    assert error is original
    assert error.message == original.args[0]
    assert "plan_needed" not in error.details
    assert len(source.calls) == 2


def test_schedule_rejects_back_to_back_polling_and_nonsense() -> None:
    with pytest.raises(ValueError, match="initial_interval"):
        PollSchedule(initial_interval=0)
    with pytest.raises(ValueError, match="factor"):
        PollSchedule(factor=0.5)
    with pytest.raises(ValueError, match="max_interval"):
        PollSchedule(initial_interval=3.0, max_interval=2.0)
    with pytest.raises(ValueError, match="deadline"):
        PollSchedule(deadline=0)
    with pytest.raises(ValueError, match="first_delay"):
        PollSchedule(first_delay=-1)


# ---------------------------------------------------------------------------------------------
# Flattening


def iref(url: str, number: int | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"type": "inline_reference", "url": url, "start_index": 0, "end_index": 10}
    if number is not None:
        data["number"] = number
    return {"type": "inline_reference", "data": data}


def item(name: str | None = None, url: str | None = None, text: str | None = None) -> dict[str, Any]:
    fields = {"name": name, "url": url, "text": text}
    data: dict[str, Any] = {"uuid": "00000000-0000-0000-0000-000000000000"}
    data.update({key: value for key, value in fields.items() if value is not None})
    return {"type": "enum_item", "data": data}


K2 = "https://en.wikipedia.org/wiki/K2"
KANCH = "https://en.wikipedia.org/wiki/Kangchenjunga"


def test_inline_references_on_puts_urls_in_the_text() -> None:
    messages = [tok("K2 is 8,611 m tall."), iref(K2, 1), tok(" It is in the Karakoram.")]

    text, refs = flatten_summary(messages, inline_references=True)

    assert text == f"K2 is 8,611 m tall. ({K2}) It is in the Karakoram."
    assert refs == [Reference(number=1, url=K2)]


def test_inline_reference_urls_survive_text_cleanup_untouched() -> None:
    url = "https://example.com/search?q=a&copy=1&amp=2&lt;x"
    messages = [tok("Stray \x000\x00 marker &amp; <i>tag</i>."), iref(url, 1)]

    text, refs = flatten_summary(messages, inline_references=True)

    assert text == f"Stray 0 marker & tag. ({url})"
    assert refs == [Reference(number=1, url=url)]


def test_inline_references_off_keeps_the_text_clean() -> None:
    messages = [tok("K2 is 8,611 m tall."), iref(K2, 1), tok(" It is in the Karakoram.")]

    text, refs = flatten_summary(messages, inline_references=False)

    assert text == "K2 is 8,611 m tall. It is in the Karakoram."
    assert "http" not in text
    assert refs == [Reference(number=1, url=K2)]


async def test_fetch_summary_honours_inline_references() -> None:
    body = complete(tok("K2 is tall."), iref(K2, 4))

    with_refs, _, _ = await run([body], inline_references=True)
    without, _, _ = await run([body])

    assert with_refs.text == f"K2 is tall. ({K2})"
    assert without.text == "K2 is tall."
    assert with_refs.references == without.references == [Reference(number=4, url=K2)]


def test_ordered_list_is_numbered() -> None:
    messages = [
        tok("The highest peaks after Everest are:"),
        {"type": "enum_start", "data": "ol"},
        item("K2", K2, "8,611 m, Karakoram"),
        item("Kangchenjunga", KANCH),
        item(text="Lhotse, 8,516 m"),
        {"type": "enum_end"},
        tok(" All are in Asia."),
    ]

    text, refs = flatten_summary(messages, inline_references=False)

    assert text == (
        "The highest peaks after Everest are:\n"
        "1. K2: 8,611 m, Karakoram\n"
        "2. Kangchenjunga\n"
        "3. Lhotse, 8,516 m\n"
        "All are in Asia."
    )
    assert refs == [Reference(number=1, url=K2, title="K2"), Reference(number=2, url=KANCH, title="Kangchenjunga")]


def test_unordered_list_uses_dashes_and_numbering_restarts_per_list() -> None:
    messages = [
        tok("Options:"),
        {"type": "enum_start", "data": "ul"},
        item("pip", text="the default installer"),
        item("uv"),
        {"type": "enum_end"},
        tok("Steps:"),
        {"type": "enum_start", "data": "ol"},
        item("install"),
        {"type": "enum_end"},
        {"type": "enum_start", "data": "ol"},
        item("run"),
        {"type": "enum_end"},
    ]

    text, _ = flatten_summary(messages, inline_references=False)

    assert text == "Options:\n- pip: the default installer\n- uv\nSteps:\n1. install\n1. run"


def test_malformed_messages_are_ignored() -> None:
    messages: list[Any] = [
        None,
        5,
        "a bare string",
        ["a", "list"],
        {"data": "no type"},
        {"type": "token", "data": 42},
        {"type": "token"},
        tok("Kept"),
        {"type": "mystery", "data": "not shown"},
        {"type": "enum_item", "data": "a string, not an entity"},
        {"type": "enum_item", "data": {"name": 7, "text": None, "url": K2}},
        {"type": "inline_reference", "data": "not a dict"},
        {"type": "inline_reference", "data": {"url": "javascript:alert(1)", "number": 1}},
        {"type": "inline_reference", "data": {"number": 2}},
        {"type": "enum_end"},
        tok(" text."),
    ]

    text, refs = flatten_summary(messages, inline_references=True)

    assert text == "Kept text."
    assert refs == []


@pytest.mark.parametrize("messages", [None, {"type": "token", "data": "x"}, "token", 3])
def test_non_list_summary_flattens_to_nothing(messages: Any) -> None:
    assert flatten_summary(messages, inline_references=True) == ("", [])


def test_html_is_stripped_and_spaces_collapsed_but_list_lines_kept() -> None:
    messages = [
        tok("<strong>K2</strong>   is\t tall &amp; cold; 3 < 4 and 5 > 2. <str"),
        tok("ong>Split tag</strong> done."),
        {"type": "enum_start", "data": "ul"},
        item("<b>Everest</b>", text="8,849&nbsp;m"),
        {"type": "enum_end"},
    ]

    text, _ = flatten_summary(messages, inline_references=False)

    assert text == "K2 is tall & cold; 3 < 4 and 5 > 2. Split tag done.\n- Everest: 8,849 m"


def test_references_keep_brave_numbers_then_number_the_rest_and_drop_duplicates() -> None:
    a, b, c, d = (f"https://example.com/{name}" for name in "abcd")
    messages = [
        tok("Text."),
        iref(a, 2),
        iref(b),
        iref("https://EXAMPLE.com/a/", 7),  # same page as a: dropped
        {"type": "enum_start", "data": "ul"},
        item("Page A", a),  # duplicate, but lends its title
        item("Page C", c),
        {"type": "enum_end"},
        iref(d, 2),  # number already taken: numbered after the highest number
        iref(c, 9),  # seen before as an enum item: Brave's number wins
    ]

    _, refs = flatten_summary(messages, inline_references=False)

    assert refs == [
        Reference(number=2, url=a, title="Page A"),
        Reference(number=9, url=c, title="Page C"),
        Reference(number=10, url=b),
        Reference(number=11, url=d),
    ]
    assert len({r.url.lower().rstrip("/") for r in refs}) == len(refs)


async def test_context_urls_follow_summary_references_without_duplicates() -> None:
    other = "https://example.org/list"
    body = complete(
        tok("K2."),
        iref(K2, 1),
        enrichments={
            "raw": "K2 raw text " * 50,
            "context": [
                {"title": "K2 - Wikipedia", "url": K2},
                {"title": "<b>List</b> of peaks", "url": other, "meta_url": {"hostname": "example.org"}},
                {"title": "no url"},
                "junk",
            ],
        },
    )

    summary, _, _ = await run([body])

    assert summary.references == [
        Reference(number=1, url=K2, title="K2 - Wikipedia"),
        Reference(number=2, url=other, title="List of peaks"),
    ]


def test_references_are_capped_at_twenty() -> None:
    messages = [
        {"type": "enum_start", "data": "ol"},
        *(item(f"Page {n}", f"https://example.com/{n}") for n in range(30)),
        {"type": "enum_end"},
    ]

    text, refs = flatten_summary(messages, inline_references=False)

    assert [r.number for r in refs] == list(range(1, 21))
    assert refs[-1].url == "https://example.com/19"
    assert text.count("\n") == 29  # all items still in the text


def test_long_text_is_capped_at_8000_characters() -> None:
    messages = [tok("word " * 5000)]

    text, _ = flatten_summary(messages, inline_references=False)

    assert len(text) <= 8000
    assert len(text) > 7700
    assert text.endswith("…")
    assert "wor…" not in text  # cut between words


# ---------------------------------------------------------------------------------------------
# The rest of a complete answer


async def test_title_and_followups_are_cleaned_and_capped() -> None:
    body = complete(
        tok("Body."),
        title="  <b>What is</b>   K2 &amp; why?  ",
        followups=["<i>how tall</i> is k2", 5, None, "", "how tall is k2", *(f"question {n}" for n in range(20))],
    )

    summary, _, _ = await run([body])

    assert summary.title == "What is K2 & why?"
    assert summary.followups == ["how tall is k2", *(f"question {n}" for n in range(9))]


async def test_missing_title_and_followups_are_empty() -> None:
    summary, _, _ = await run([complete(tok("Body."), title=["not", "text"], followups="not a list")])

    assert summary.title is None
    assert summary.followups == []
    assert summary.enrichments is None
    assert summary.entities_infos is None


async def test_enrichments_keep_only_a_compact_subset() -> None:
    body = complete(
        tok("Body."),
        enrichments={
            "raw": "raw text " * 100,
            "images": [{"url": "https://img.example.com/1.jpg", "type": "image"}],
            "entities": [{"uuid": "x", "name": "K2"}],
            "qa": [
                {"answer": f"<b>answer</b> {n}", "score": 0.9, "highlight": {"start": 0, "end": 1}} for n in range(5)
            ]
            + [{"score": 1.0}],
            "context": [{"title": f"Page {n}", "url": f"https://example.com/{n}", "meta_url": {}} for n in range(15)],
        },
    )

    summary, _, _ = await run([body])

    assert summary.enrichments is not None
    assert set(summary.enrichments) == {"context", "qa"}
    assert summary.enrichments["qa"] == ["answer 0", "answer 1", "answer 2"]
    assert summary.enrichments["context"] == [
        {"title": f"Page {n}", "url": f"https://example.com/{n}"} for n in range(10)
    ]
    assert len(summary.references) == 15  # every context page is a reference, even past the 10 kept above
    assert "raw text" not in json.dumps(summary.enrichments)


async def test_entities_infos_only_when_requested() -> None:
    infos = {"K2": {"provider": "wikipedia", "description": "Second-highest mountain."}}
    body = complete(tok("Body."), entities_infos=infos)

    requested, source, _ = await run([body], entity_info=True)
    not_requested, _, _ = await run([body])

    assert requested.entities_infos == infos
    assert not_requested.entities_infos is None
    assert ("entity_info", "1") in source.calls[0].params


async def test_large_entities_infos_keep_the_leading_entries_that_fit() -> None:
    infos = {f"Entity {n}": {"provider": "wikipedia", "description": "x" * 300} for n in range(40)}

    summary, _, _ = await run([complete(tok("Body."), entities_infos=infos)], entity_info=True)

    assert summary.entities_infos is not None
    kept = list(summary.entities_infos)
    assert 5 < len(kept) < 40
    assert kept == [f"Entity {n}" for n in range(len(kept))]
    assert len(json.dumps(summary.entities_infos, separators=(",", ":")).encode()) <= 4096


async def test_a_real_shaped_answer_reads_well() -> None:
    body = json.loads((BRAVE_BODIES / "summarizer_complete.json").read_text(encoding="utf-8"))
    ganymede = "https://en.wikipedia.org/wiki/Ganymede_(moon)"

    summary, _, _ = await run([PENDING, body], entity_info=True, inline_references=True)

    assert summary.title == body["title"]
    assert summary.text.startswith("The largest moon of Jupiter is Ganymede, 5,268 km across")
    assert "\n1. Ganymede: 5,268 km" in summary.text
    assert "\n2. Callisto: 4,821 km" in summary.text
    assert summary.references[0] == Reference(number=1, url=ganymede, title="Ganymede")
    assert len({r.url for r in summary.references}) == len(summary.references)
    assert summary.followups == body["followups"]
    assert summary.entities_infos == body["entities_infos"]
    assert summary.enrichments is not None
    assert "raw" not in summary.enrichments
    assert summary.polls == 2
