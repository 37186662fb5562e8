"""brave_answer: the streamed, cited answer survives any chunking, deadlines, broken streams and every Brave error."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from brave_search_mcp.brave.answers_stream import answer_payloads
from brave_search_mcp.models import errors
from brave_search_mcp.models.answer import AnswerEnvelope
from brave_search_mcp.models.errors import ErrorCode
from brave_search_mcp.usecases.answer import AnswerArgs, deadline_seconds, prepare
from brave_search_mcp.usecases.answer import ask as run
from brave_search_mcp.usecases.contract import StreamPost
from testkit.brave.adapters import HttpUpstream
from testkit.brave.brave import FakeBrave
from testkit.brave.faults import fault_cases
from testkit.brave.http_server import FakeBraveServer
from testkit.brave.routes.answers import answer_deltas, sse_events
from tests.fuzz.checks import examples

from .conftest import BRAVE_BODIES
from .test_answer_stream import read_tags

QUESTION = "how do I start with the tool?"
MAX_RESPONSE_BYTES = 4 * 1024 * 1024


@pytest.fixture
async def upstream(fake: FakeBrave) -> AsyncIterator[HttpUpstream]:
    async with httpx2.AsyncClient(base_url="http://brave.test", transport=fake.mock_transport()) as http:
        yield HttpUpstream(http)


async def ask(upstream: HttpUpstream, deadline: float | None = None, **args: Any) -> tuple[AnswerEnvelope, str]:
    return await run(
        AnswerArgs(question=args.pop("question", QUESTION), **args),
        upstream.stream,
        deadline=deadline,
        trace_id="trace-1",
        server_version="0.0.test",
    )


def codes(envelope: AnswerEnvelope) -> list[str]:
    return [w.code for w in envelope.warnings]


# ------------------------------------------------------------------------------------ happy path


@pytest.mark.anyio
async def test_streamed_answer_has_numbered_sources_usage_and_sends_brave_body(
    fake: FakeBrave, upstream: HttpUpstream
) -> None:
    envelope, text = await ask(upstream)
    assert envelope.meta.complete is True
    assert envelope.answer.startswith("Short answer about “how do I start with the tool?”: it works in three steps")
    assert "official guide.[1]" in envelope.answer  # the marker sits where Brave's citation tag was
    assert "checks the result.[2]" in envelope.answer
    assert "<citation>" not in text and "<usage>" not in text
    assert [(s.number, s.url) for s in envelope.sources] == [
        (1, "https://docs.example.org/guide"),
        (2, "https://wiki.example.net/Topic"),
    ]
    assert "Sources:\n[1] https://docs.example.org/guide — The guide explains the topic step by step." in text
    assert envelope.meta.usage is not None
    assert (envelope.meta.usage.queries, envelope.meta.usage.tokens_in, envelope.meta.usage.total_cost) == (
        2,
        1200,
        0.01128,
    )
    assert "Usage: 1 request, 2 search queries, 1,200 tokens in, 96 tokens out, cost $0.01128." in text
    assert envelope.meta.finish_reason == "stop"
    sent = fake.answers.chat_requests[-1]
    assert sent["model"] == "brave" and sent["stream"] is True and sent["enable_citations"] is True
    assert sent["messages"] == [{"role": "user", "content": QUESTION}]


@pytest.mark.anyio
async def test_country_and_language_are_checked_and_sent_in_braves_spelling(
    fake: FakeBrave, upstream: HttpUpstream
) -> None:
    envelope, _ = await ask(upstream, country="de", language="zh", safe_search="strict")
    sent = fake.answers.chat_requests[-1]
    assert (sent["country"], sent["language"], sent["safesearch"]) == ("de", "zh-hans", "strict")
    assert codes(envelope) == ["VALUE_NORMALIZED"]
    envelope, _ = await ask(upstream, country="VN")
    assert "country" not in fake.answers.chat_requests[-1]
    assert codes(envelope) == ["INVALID_COUNTRY"]


@pytest.mark.anyio
async def test_research_mode_skips_thinking_drops_citations_and_gets_its_own_deadline(
    fake: FakeBrave, upstream: HttpUpstream
) -> None:
    envelope, text = await ask(upstream, research=True, research_maximum_number_of_queries=99)
    sent = fake.answers.chat_requests[-1]
    assert sent["enable_research"] is True and sent["enable_citations"] is False
    assert sent["research_maximum_number_of_queries"] == 50
    assert codes(envelope) == ["PARAM_IGNORED", "COUNT_CLAMPED"]
    assert "Planning searches" not in text and "iteration" not in text
    assert envelope.answer.startswith("Short answer about")
    assert envelope.meta.research is True
    assert deadline_seconds(AnswerArgs(question="q"), 60.0) == 60.0
    assert deadline_seconds(AnswerArgs(question="q", research=True), 60.0) == 210.0
    assert deadline_seconds(AnswerArgs(question="q", research=True, research_maximum_number_of_seconds=900), 60) == 330
    assert deadline_seconds(AnswerArgs(question="q", research=True, research_maximum_number_of_seconds=5), 60) == 60


def test_research_budgets_without_research_are_not_sent() -> None:
    body, warnings = prepare(AnswerArgs(question="q", research_maximum_number_of_iterations=3))
    assert "research_maximum_number_of_iterations" not in body
    assert [w.code for w in warnings] == ["PARAM_IGNORED"]


@pytest.mark.anyio
async def test_progress_is_reported_and_a_failing_progress_callback_costs_nothing(upstream: HttpUpstream) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    await run(
        AnswerArgs(question="q", research=True),
        upstream.stream,
        deadline=None,
        progress=progress,
        trace_id="t",
        server_version="v",
    )
    messages = [m or "" for _, _, m in seen]
    assert any("thinking" in m for m in messages) and any("answer" in m for m in messages)

    async def broken(done: float, total: float | None, message: str | None) -> None:
        raise RuntimeError("client went away")

    envelope, _ = await run(
        AnswerArgs(question="q"), upstream.stream, deadline=None, progress=broken, trace_id="t", server_version="v"
    )
    assert envelope.meta.complete


@pytest.mark.anyio
async def test_long_answer_is_cut_to_max_chars_and_keeps_only_sources_it_still_cites() -> None:
    cite = '<citation>{"number": %d, "url": "https://s%d.example/"}</citation>'
    deltas = ["Intro sentence." + cite % (1, 1), " filler text" * 300, "Late claim." + cite % (2, 2)]
    data = b"".join(sse_events("q", "brave", deltas))
    envelope = await _answer_from(data, [])
    assert len(envelope.answer) > 3000 and codes(envelope) == [] and len(envelope.sources) == 2
    short, _ = await run(
        AnswerArgs(question="q", max_chars=1000), _fixed(data), deadline=None, trace_id="t", server_version="v"
    )
    assert len(short.answer) <= 1000 and short.answer.endswith("…")
    assert codes(short) == ["ANSWER_TRUNCATED"]
    assert [s.number for s in short.sources] == [1]
    tiny, _ = await run(
        AnswerArgs(question="q", max_chars=10), _fixed(data), deadline=None, trace_id="t", server_version="v"
    )
    assert codes(tiny) == ["OUTPUT_LIMIT_CLAMPED", "ANSWER_TRUNCATED"] and len(tiny.answer) <= 500


def _fixed(data: bytes, cuts: list[int] | None = None, content_type: str = "text/event-stream") -> StreamPost:
    """A StreamPost answering ``data`` (cut at ``cuts``) read as the client reads a response: ``answer_payloads``."""

    async def stream(path: str, body: dict[str, Any], *, deadline: float | None) -> AsyncIterator[str]:
        async def pieces() -> AsyncIterator[bytes]:
            for piece in _pieces(data, cuts or []):
                yield piece

        request = httpx2.Request("POST", f"http://brave.test{path}")
        response = httpx2.Response(200, headers={"Content-Type": content_type}, content=pieces(), request=request)
        async for payload in answer_payloads(response, MAX_RESPONSE_BYTES):
            yield payload

    return stream


def test_inputs_are_strict() -> None:
    with pytest.raises(ValidationError):
        AnswerArgs(question="   ")
    with pytest.raises(ValidationError):
        AnswerArgs.model_validate({"question": "q", "model": "brave-pro"})
    with pytest.raises(ValidationError):
        AnswerArgs.model_validate({"question": "q", "query": "q"})
    assert AnswerArgs.model_validate({"query": "alias works"}).question == "alias works"


@pytest.mark.parametrize("question", ["\x1b", "\x00 \x07\t"])
def test_a_question_of_control_characters_only_is_refused_not_sent_empty(question: str) -> None:
    """Found by the argument fuzz (issue 36): it passed the blank check, was cleaned to "" and sent, and Brave
    answered 422 UPSTREAM_VALIDATION ("exactly one user message")."""
    with pytest.raises(errors.InvalidArgument, match="question must not be empty"):
        prepare(AnswerArgs(question=question))


# ------------------------------------------------------------------------- broken streams, deadlines


@pytest.mark.anyio
async def test_stream_reset_midway_returns_what_arrived_with_a_warning(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.answers.stream_cut_after = 3
    envelope, text = await ask(upstream)
    assert envelope.meta.complete is False
    assert codes(envelope) == ["STREAM_INTERRUPTED"]
    assert envelope.answer.startswith("Short answer about") and "step three" not in envelope.answer
    assert "STREAM_INTERRUPTED" in text


@pytest.mark.anyio
async def test_stream_ending_without_done_is_partial(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.answers.stream_eof_after = 2
    envelope, _ = await ask(upstream)
    assert codes(envelope) == ["STREAM_INTERRUPTED"]
    assert "without [DONE]" in envelope.warnings[0].message
    assert envelope.meta.complete is False


@pytest.mark.anyio
async def test_in_stream_error_keeps_the_text_or_becomes_an_error(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.answers.stream_error_after = 2
    envelope, _ = await ask(upstream)
    assert codes(envelope) == ["STREAM_INTERRUPTED"]
    assert "failed mid-answer" in envelope.warnings[0].message
    fake.answers.stream_error_after = 0
    with pytest.raises(errors.UpstreamError) as info:
        await ask(upstream)
    assert info.value.retryable


@pytest.mark.anyio
async def test_deadline_ends_a_stalled_stream_with_the_partial_answer(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.answers.stream_hang_after = 2
    with anyio.fail_after(5):
        envelope, _ = await ask(upstream, deadline=anyio.current_time() + 0.1)
    assert codes(envelope) == ["DEADLINE_REACHED"]
    assert envelope.answer.startswith("Short answer about")
    assert envelope.meta.complete is False


@pytest.mark.anyio
async def test_deadline_with_no_text_is_a_timeout_error(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.answers.stream_hang_after = 0
    with anyio.fail_after(5), pytest.raises(errors.UpstreamTimeout) as info:
        await ask(upstream, deadline=anyio.current_time() + 0.1)
    assert info.value.code is ErrorCode.TIMEOUT and info.value.retryable


# ------------------------------------------------------------------------------------ Brave errors


@pytest.mark.anyio
async def test_plan_without_answers_says_which_plan(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.plan_lacks = {"answers"}
    with pytest.raises(errors.NotInPlan) as info:
        await ask(upstream)
    assert "Answers plan" in info.value.message and info.value.details["plan_needed"] == "Answers"
    assert not info.value.retryable


@pytest.mark.parametrize(
    ("fault", "code"),
    fault_cases(
        "400_not_in_plan",
        "403",
        "404_subscription",
        "422_token",
        "422_validation",
        "429",
        "429_quota",
        "503",
        "403_bare",
        "refused",
    ),
)
@pytest.mark.anyio
async def test_each_brave_error_becomes_its_envelope_code(
    fake: FakeBrave, upstream: HttpUpstream, fault: str, code: ErrorCode
) -> None:
    fake.inject(fault, path="/chat/completions")
    with pytest.raises(errors.BraveSearchError) as info:
        await ask(upstream)
    assert info.value.code is code


@pytest.mark.anyio
async def test_unknown_key_and_bearer_auth(fake: FakeBrave) -> None:
    async with httpx2.AsyncClient(base_url="http://brave.test", transport=fake.mock_transport()) as http:
        with pytest.raises(errors.AuthFailed):
            await ask(HttpUpstream(http, key="not-a-key"))
        body = {"model": "brave", "stream": False, "messages": [{"role": "user", "content": "q"}]}
        answer = await http.post(
            "/res/v1/chat/completions", json=body, headers={"Authorization": "Bearer test-key-not-real"}
        )
    assert answer.status_code == 200 and answer.json()["object"] == "chat.completion"
    assert "authorization" not in fake.requests[-1].headers  # the key is never recorded


@pytest.mark.anyio
async def test_fake_rejects_what_brave_rejects(fake: FakeBrave) -> None:
    async with httpx2.AsyncClient(base_url="http://brave.test", transport=fake.mock_transport()) as http:
        bad = {"model": "gpt", "messages": [], "enable_research": True, "enable_citations": True, "x": 1}
        answer = await http.post(
            "/res/v1/chat/completions", json=bad, headers={"X-Subscription-Token": "test-key-not-real"}
        )
    problems = {e["loc"][1] for e in answer.json()["error"]["meta"]["errors"]}
    assert answer.status_code == 422 and problems == {"x", "messages", "model", "enable_citations"}
    assert "x-ratelimit-limit" not in answer.headers


# ------------------------------------------------------------------------ incremental parsing


def _stream_bytes() -> bytes:
    return b"".join(
        sse_events("chunking test ö–✓", "brave", answer_deltas("chunking ö–✓", citations=True, research=False))
    )


def _pieces(data: bytes, cuts: list[int]) -> Iterator[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    start = 0
    for point in [*points, len(data)]:
        yield data[start:point]
        start = point


async def _answer_from(data: bytes, cuts: list[int]) -> AnswerEnvelope:
    stream = _fixed(data, cuts)
    envelope, _ = await run(AnswerArgs(question="q"), stream, deadline=None, trace_id="t", server_version="v")
    return envelope


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=40))
def test_any_chunking_of_the_stream_gives_the_same_answer(cuts: list[int]) -> None:
    data = _stream_bytes()
    whole = anyio.run(_answer_from, data, [])
    split = anyio.run(_answer_from, data, cuts)
    assert split.answer == whole.answer and split.sources == whole.sources and split.meta.usage == whole.meta.usage
    assert "ö–✓" in whole.answer and "\ufffd" not in whole.answer


@given(text=st.text(alphabet='ab<>/citn{}"1:é', max_size=60), cuts=st.lists(st.integers(0, 80), max_size=8))
def test_tag_reader_gives_the_same_tokens_however_text_is_split(text: str, cuts: list[int]) -> None:
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert read_tags(pieces)[0] == read_tags([text])[0]


@pytest.mark.anyio
async def test_events_are_read_across_crlf_splits_comments_and_multiline_data() -> None:
    data = b": keep-alive\r\ndata: one\r\ndata: two\r\n\r\ndata: [DONE]\n\ndata: cut"
    cuts = [len(b": keep-alive\r"), len(b": keep-alive\r\ndata: one\r\ndata: two\r"), len(data) - 5]
    stream = _fixed(data, cuts)
    assert [payload async for payload in stream("/res/v1/chat/completions", {}, deadline=None)] == [
        "one\ntwo",
        "[DONE]",
    ]


@pytest.mark.anyio
async def test_a_stream_in_the_documented_shape_parses() -> None:
    data = (BRAVE_BODIES / "chat_completions_stream.txt").read_bytes()
    envelope = await _answer_from(data, [7, 100, 333])
    assert envelope.answer == (
        "The deepest lake in the world is Lake Baikal in Siberia.[1] Its deepest point is 1,642 m below the surface.[2]"
    )
    assert [s.url for s in envelope.sources] == [
        "https://www.britannica.com/place/Lake-Baikal",
        "https://baikal-research.example/depth-survey",
    ]
    assert envelope.meta.usage is not None and envelope.meta.usage.tokens_in == 5120


# ------------------------------------------------------------------------------ real sockets


@pytest.mark.anyio
async def test_over_a_real_socket_streams_and_breaks() -> None:
    with FakeBraveServer(rate_per_second=1000) as server:
        async with httpx2.AsyncClient(base_url=server.base_url) as http:
            upstream = HttpUpstream(http)
            envelope, _ = await ask(upstream)
            assert envelope.meta.complete and len(envelope.sources) == 2
            server.fake.answers.stream_cut_after = 4
            envelope, _ = await ask(upstream)
            assert codes(envelope) == ["STREAM_INTERRUPTED"] and envelope.answer.startswith("Short answer")
            server.fake.answers.stream_cut_after = None
            server.fake.answers.stream_hang_after = 2
            with anyio.fail_after(5):
                envelope, _ = await ask(upstream, deadline=anyio.current_time() + 0.15)
            assert codes(envelope) == ["DEADLINE_REACHED"]
    assert json.dumps(envelope.dump())  # the envelope is JSON-ready


@pytest.mark.anyio
async def test_a_blocking_json_answer_is_read_too() -> None:
    blocking = {
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "K2 is second."}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
    }
    data = json.dumps(blocking).encode()
    envelope, text = await run(
        AnswerArgs(question="q"), _fixed(data, [9], "application/json"), deadline=None, trace_id="t", server_version="v"
    )
    assert envelope.answer == "K2 is second." and envelope.meta.complete
    assert envelope.meta.usage is not None and envelope.meta.usage.total_tokens == 14
    assert "Usage: 10 tokens in, 4 tokens out." in text


def test_tool_texts_are_short_enough_for_every_turn() -> None:
    from brave_search_mcp.tools.registry import all_tools
    from brave_search_mcp.usecases import answer, llm_context, local_search, summarize

    for tool in (llm_context.SPEC, local_search.SPEC, answer.SPEC):
        assert len(tool.description) <= 200, tool.name
        assert 100 <= len(tool.help) <= 600, tool.name
    for tool in all_tools():
        assert len(tool.description) <= 250 and len(tool.guide) <= 120, tool.name
    assert "brave_answer" in summarize.SPEC.help  # legacy summarizer users are pointed at its successor
