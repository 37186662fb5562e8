"""Brave Answers' stream is bounded: one event and one whole stream each have a byte cap, and reading stays linear.

Through the real client against the fake Brave's real HTTP server: an endless ``data:`` line ends at the event cap
with UPSTREAM_ERROR, without the client ever holding the line; a stream longer than its cap is cut with what arrived,
its size counted decoded (a gzip stream by what it inflates to). In process: tiny network pieces cost time in
proportion to the bytes, an answer longer than any call can show is not held whole, and a body that is neither an
event stream nor JSON is named in its error. Brave's tags in the text: the same tokens however the text is cut, work
counted (never timed) in proportion to the text, and a JSON tag past its bound dropped, never held.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest

from brave_search_mcp.brave.answers_stream import MAX_PENDING_CHARS, TagReader, answer_payloads
from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.models import errors
from brave_search_mcp.models.answer import AnswerEnvelope
from brave_search_mcp.upstream.bodies import EVENT_CAP_BYTES, STREAM_CAP_RESPONSES
from brave_search_mcp.usecases.answer import KEEP_CHARS, AnswerArgs, ask
from brave_search_mcp.usecases.contract import StreamPost
from testkit.brave.http_server import FakeBraveServer
from tests.brave_client_support import settings

pytestmark = pytest.mark.anyio

CHAT = Endpoint.CHAT.value
MIN_RESPONSE_CAP = 16 * 1024  # the smallest BRAVE_SEARCH_MAX_RESPONSE_BYTES allows


def post(client: BraveClient) -> StreamPost:
    """The use case's port over the real client, as the composition root builds it."""

    def stream(path: str, body: dict[str, Any], *, deadline: float | None) -> AsyncIterator[str]:
        return client.stream_post(Endpoint(path), body, deadline=deadline)

    return stream


async def answer(stream: StreamPost) -> AnswerEnvelope:
    args = AnswerArgs(question="how big can it get?", max_chars=100_000)
    envelope, _ = await ask(args, stream, deadline=None, trace_id="t", server_version="v")
    return envelope


# -- through the real client and a real socket ----------------------------------------------------------------


async def test_an_unended_five_megabyte_data_line_ends_at_the_event_cap_without_being_held() -> None:
    with FakeBraveServer(rate_per_second=1000) as server:
        async with BraveClient(settings(base_url=server.base_url)) as client:
            await client.get(Endpoint.WEB, [("q", "warm up")])  # the pool and its TLS context: not what is measured
            server.fake.answers.stream_unended_line = 5_000_000
            tracemalloc.start()
            started = time.perf_counter()
            try:
                with anyio.fail_after(10), pytest.raises(errors.UpstreamError) as info:
                    await answer(post(client))
                elapsed = time.perf_counter() - started
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    error = info.value
    assert error.code == errors.ErrorCode.UPSTREAM_ERROR and error.retryable is False
    assert f"an event over the {EVENT_CAP_BYTES:,}-byte cap for one event" in error.message
    assert error.details["limit_bytes"] == EVENT_CAP_BYTES
    # Held at most the cap (1 MiB) and a network read, never the 5 MB line (the server's thread counts here too).
    assert peak < 2 * 1024 * 1024, peak
    assert elapsed < 5.0  # generous for a shared machine: it is tens of milliseconds (the 1 MiB it reads)


async def test_a_stream_over_its_cap_is_cut_keeping_what_arrived() -> None:
    cap = STREAM_CAP_RESPONSES * MIN_RESPONSE_CAP
    with FakeBraveServer(rate_per_second=1000) as server:
        server.fake.answers.stream_repeat = 200  # about 1,400 legal events, several times the cap
        async with BraveClient(settings(base_url=server.base_url, max_response_bytes=MIN_RESPONSE_CAP)) as client:
            with anyio.fail_after(10):
                envelope = await answer(post(client))
                with pytest.raises(errors.UpstreamError) as info:
                    async for _ in client.stream_post(Endpoint.CHAT, server.fake.answers.chat_requests[0]):
                        pass
    assert [w.code for w in envelope.warnings] == ["STREAM_INTERRUPTED"]
    assert f"more than the {cap:,}-byte cap for one answer's stream" in envelope.warnings[0].message
    assert envelope.answer.startswith("Short answer") and not envelope.meta.complete
    assert info.value.details == {"status": 200, "limit_bytes": cap, "attempts": 1}


async def test_a_gzip_stream_is_capped_by_what_it_inflates_to_not_its_wire_size() -> None:
    """About 4 MB of events that gzip to a few tens of KB (under the 128 KiB cap): cut at the cap all the same."""
    cap = STREAM_CAP_RESPONSES * MIN_RESPONSE_CAP
    with FakeBraveServer(rate_per_second=1000) as server:
        server.fake.answers.stream_gzip = True
        server.fake.answers.stream_repeat = 4000
        async with BraveClient(settings(base_url=server.base_url, max_response_bytes=MIN_RESPONSE_CAP)) as client:
            with anyio.fail_after(20):
                envelope = await answer(post(client))
        sent = server.fake.requests[-1]
    assert "gzip" in sent.headers["accept-encoding"]
    assert [w.code for w in envelope.warnings] == ["STREAM_INTERRUPTED"]
    assert f"more than the {cap:,}-byte cap for one answer's stream" in envelope.warnings[0].message
    assert envelope.answer.startswith("Short answer") and not envelope.meta.complete
    assert len(envelope.answer) < cap


async def test_a_gzip_stream_under_its_cap_is_decoded_once_and_read_whole() -> None:
    with FakeBraveServer(rate_per_second=1000) as server:
        server.fake.answers.stream_gzip = True
        server.fake.answers.stream_repeat = 200
        async with BraveClient(settings(base_url=server.base_url)) as client:
            with anyio.fail_after(10):
                envelope = await answer(post(client))
    assert envelope.meta.complete and envelope.warnings == []
    assert envelope.answer.count("Short answer") == 200
    assert envelope.meta.usage is not None and envelope.meta.usage.tokens_in == 1200


async def test_the_same_stream_under_its_cap_is_read_whole() -> None:
    with FakeBraveServer(rate_per_second=1000) as server:
        server.fake.answers.stream_repeat = 200
        async with BraveClient(settings(base_url=server.base_url)) as client:
            with anyio.fail_after(10):
                envelope = await answer(post(client))
    assert envelope.meta.complete and envelope.warnings == []
    assert envelope.answer.count("Short answer") > 1


# -- in process -------------------------------------------------------------------------------------------------


async def test_an_answer_of_millions_of_characters_keeps_only_what_a_call_can_show() -> None:
    """Six times ``KEEP_CHARS`` of text: the answer is cut to max_chars and says how long it was; while the stream
    lasted, the text beyond ``KEEP_CHARS`` was counted, never held (1.2 million characters came)."""
    delta, events = "many words " * 100, 6 * KEEP_CHARS // 1100
    payload = json.dumps({"choices": [{"delta": {"content": delta}}]})
    peaks: list[int] = []

    async def stream(path: str, body: dict[str, Any], *, deadline: float | None) -> AsyncIterator[str]:
        for _ in range(events):
            yield payload
        peaks.append(tracemalloc.get_traced_memory()[1])  # all the text has been read
        yield "[DONE]"

    tracemalloc.start()
    try:
        envelope = await answer(stream)
    finally:
        tracemalloc.stop()
    sent = events * len(delta)
    assert sent > 5 * KEEP_CHARS
    assert len(envelope.answer) <= 100_000 and envelope.meta.complete
    assert [w.code for w in envelope.warnings] == ["ANSWER_TRUNCATED"]
    assert f"The answer had {sent:,} characters" in envelope.warnings[0].message
    assert peaks[0] < 2 * KEEP_CHARS, peaks  # ASCII: a byte a character, and the stream's own few kilobytes


def served(data: bytes, piece: int, content_type: str = "text/event-stream") -> httpx2.Response:
    """``data`` as a response whose body arrives ``piece`` bytes at a time."""

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(data), piece):
            yield data[start : start + piece]

    request = httpx2.Request("POST", f"https://brave.test{CHAT}")
    return httpx2.Response(200, headers={"Content-Type": content_type}, content=pieces(), request=request)


def long_event(size: int) -> bytes:
    """One legal event: a JSON chunk whose text is ``size`` bytes, then the end of the stream."""
    text = "word " * (size // 5)
    return b'data: {"choices": [{"delta": {"content": "' + text.encode() + b'"}}]}\n\ndata: [DONE]\n\n'


async def read_seconds(data: bytes, piece: int) -> float:
    """The fastest of three reads of ``data`` in pieces of ``piece`` bytes (CPU time: other processes do not count)."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        payloads = [p async for p in answer_payloads(served(data, piece), 4 * 1024 * 1024)]
        best = min(best, time.process_time() - started)
        assert payloads[-1] == "[DONE]" and len(payloads[0]) > len(data) - 100
    return best


async def test_reading_seven_byte_pieces_costs_time_in_proportion_to_the_bytes() -> None:
    """Four times the bytes take about four times as long (a decoder re-scanning what it holds would take sixteen)."""
    for_small = await read_seconds(long_event(64 * 1024), 7)
    for_large = await read_seconds(long_event(256 * 1024), 7)
    assert for_large < 8 * for_small, (for_small, for_large)


@pytest.mark.parametrize(
    ("content_type", "says"),
    [("text/html; charset=utf-8", "text/html"), ("", "no content type")],
)
async def test_a_body_neither_an_event_stream_nor_json_is_named(content_type: str, says: str) -> None:
    response = served(b"<html>a proxy's page</html>", 1024, content_type)
    with pytest.raises(errors.UpstreamError) as info:
        [p async for p in answer_payloads(response, 4 * 1024 * 1024)]
    assert info.value.message == f"Brave Answers answered {says}, not an event stream."


async def test_a_json_answer_over_the_response_cap_is_refused() -> None:
    response = served(b'{"choices": [' + b" " * (MIN_RESPONSE_CAP + 1) + b"]}", 4096, "application/json")
    with pytest.raises(errors.ResponseTooLarge):
        [p async for p in answer_payloads(response, MIN_RESPONSE_CAP)]


# -- Brave's tags in the answer text ----------------------------------------------------------------------------


def read_tags(pieces: list[str]) -> tuple[list[tuple[str, str]], TagReader]:
    """The tokens a reader gives for ``pieces`` (adjacent text merged), and the reader (for its work done)."""
    out: list[tuple[str, str]] = []
    reader = TagReader(lambda kind, value: out.append((kind, value)))
    for piece in pieces:
        reader.feed(piece)
    reader.close()
    merged: list[tuple[str, str]] = []
    for kind, value in out:
        if kind == "text" and merged and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + value)
        else:
            merged.append((kind, value))
    return merged, reader


def cut(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def test_an_unclosed_citation_in_five_character_deltas_costs_work_in_proportion_to_its_length() -> None:
    """Counted, not timed: four times the content, four times the characters looked at (re-scanning what is held
    would be sixteen), and a few looks per character at most."""

    def work(size: int) -> int:
        tokens, reader = read_tags(cut("An answer <citation>" + "y" * size, 5))
        assert tokens == [("text", "An answer ")]  # the tag never ended: dropped
        return reader.scanned

    small, large = work(48 * 1024), work(192 * 1024)
    assert large <= 4.2 * small, (small, large)
    assert large <= 4 * 192 * 1024, large


@pytest.mark.parametrize("size", [None, 7])
def test_text_full_of_lone_angle_brackets_costs_work_in_proportion_to_its_length(size: int | None) -> None:
    """A blocking answer is one delta: its ``<`` that open no tag are each looked past once, not to the end."""

    def work(count: int) -> int:
        text = "1 < 2, " * count
        tokens, reader = read_tags([text] if size is None else cut(text, size))
        assert tokens == [("text", text)]
        return reader.scanned

    small, large = work(10_000), work(40_000)
    assert large <= 4.2 * small, (small, large)


TAGGED = (
    'Intro <citation>{"number": 1}</citation> middle <usage>{"a": 2}</usage><enum_start> x < y </a>'
    '<thinking>hidden</thinking>end<citation>{"never": "closed"'
)


def test_every_way_of_cutting_tagged_text_in_three_gives_the_same_tokens() -> None:
    whole, _ = read_tags([TAGGED])
    assert whole == [
        ("text", "Intro "),
        ("citation", '{"number": 1}'),
        ("text", " middle "),
        ("usage", '{"a": 2}'),
        ("enum_start", ""),
        ("text", " x < y </a>"),
        ("phase", "thinking"),
        ("text", "end"),
    ]
    for a in range(len(TAGGED) + 1):
        for b in range(a, len(TAGGED) + 1):
            assert read_tags([TAGGED[:a], TAGGED[a:b], TAGGED[b:]])[0] == whole, (a, b)


@pytest.mark.parametrize("size", [None, 4096, 5])
def test_a_json_tag_past_the_pending_bound_is_dropped_and_the_answer_goes_on(size: int | None) -> None:
    text = "Before <citation>" + "y" * MAX_PENDING_CHARS + "</citation> and after."
    tokens, _ = read_tags([text] if size is None else cut(text, size))
    assert tokens == [("text", "Before  and after.")]


def test_an_unclosed_json_tag_is_never_held_past_the_pending_bound() -> None:
    reader = TagReader(lambda kind, value: None)
    tracemalloc.start()
    try:
        reader.feed("<citation>")
        for n in range(MAX_PENDING_CHARS // 1024):
            reader.feed(f"{n:08}" * 512)  # 4 KiB, a new string each time (as the stream's are)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * MAX_PENDING_CHARS, peak  # a million characters came; at most the bound is kept
