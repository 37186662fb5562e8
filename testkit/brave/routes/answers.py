"""Chat completions (Brave's Answers): a strict body check, then a streamed answer that can misbehave on request.

Controls (on ``fake.answers``) say how the stream ends: reset, clean EOF, stall or an in-stream error after N
events; and how big it is: the answer's text repeated N times, or one ``data:`` line of N bytes never ended
(produced piece by piece, so the fake never holds it whole). Brave sends no X-RateLimit-* headers here, never
gzip, and accepts ``Authorization: Bearer <key>``; ``stream_gzip`` and ``stream_rate_headers`` make a stream that
does (as a proxy or a future Brave might), to hold the client to what it must do then.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from testkit.brave.exchange import Exchange
from testkit.brave.reply import Reply, gzip_stream

from .query_params import _err, number_range

CHAT_PATH = "/res/v1/chat/completions"
_CHAT_FIELDS = {
    "messages", "model", "stream", "country", "language", "safesearch", "max_completion_tokens", "enable_citations",
    "enable_entities", "enable_research", "research_allow_thinking", "web_search_options", "metadata",
    "research_maximum_number_of_tokens_per_query", "research_maximum_number_of_queries",
    "research_maximum_number_of_iterations", "research_maximum_number_of_seconds",
    "research_maximum_number_of_results_per_query",
}  # fmt: skip
_RESEARCH_RANGES = {
    "research_maximum_number_of_tokens_per_query": (1024, 16384),
    "research_maximum_number_of_queries": (1, 50),
    "research_maximum_number_of_iterations": (1, 5),
    "research_maximum_number_of_seconds": (1, 300),
    "research_maximum_number_of_results_per_query": (1, 60),
}
_SSE_HEADERS = [("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache")]


class AnswersRoute:
    """POST /res/v1/chat/completions; a key without the "answers" feature gets 400 OPTION_NOT_IN_PLAN."""

    paths = (CHAT_PATH,)
    methods: frozenset[str] | None = None
    bearer = True  # OpenAI clients send the key as a bearer token

    def __init__(self) -> None:
        self.stream_cut_after: int | None = None  # SSE events sent, then the connection is reset
        self.stream_eof_after: int | None = None  # SSE events sent, then a clean end without [DONE]
        self.stream_hang_after: int | None = None  # SSE events sent, then the stream stalls
        self.stream_hang_seconds = 30.0
        self.stream_error_after: int | None = None  # SSE events sent, then an in-stream error object and [DONE]
        self.stream_repeat = 1  # the answer's text deltas this many times over: a long stream of legal events
        self.stream_unended_line: int | None = None  # the stream is one ``data:`` line of this many bytes, no newline
        self.stream_gzip = False  # the (normal) stream gzip-compressed, when the client accepts gzip
        self.stream_rate_headers = False  # the stream carries the key's X-RateLimit-* headers
        self.chat_requests: list[dict[str, Any]] = []  # decoded bodies, for assertions

    def answer(self, ex: Exchange) -> Reply:
        """The answer to the one user message: streamed events, or one blocking completion."""
        refused = ex.not_in_plan("answers", "Search", headers=[])
        if refused is not None:
            return refused
        try:
            body = json.loads(ex.request.body or b"null")
        except ValueError:
            body = None
        errors = _chat_errors(body)
        if errors:
            return ex.validation(errors, headers=[], gzip=False)
        assert isinstance(body, dict)
        self.chat_requests.append(body)
        question = body["messages"][0]["content"]
        research = bool(body.get("enable_research"))
        deltas = answer_deltas(question, citations=bool(body.get("enable_citations")), research=research)
        deltas = [*deltas[:-1] * self.stream_repeat, deltas[-1]]
        if not body.get("stream", True):
            text = "".join(d for d in deltas if not d.startswith("<usage>"))
            blocking = {
                "id": _chat_id(question), "object": "chat.completion", "created": 1767225600, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1200, "completion_tokens": 96, "total_tokens": 1296},
            }  # fmt: skip
            return ex.json(200, blocking, headers=[], gzip=False)
        headers = [*_SSE_HEADERS, *(ex.rate_headers() if self.stream_rate_headers else [])]
        if self.stream_gzip and ex.gzip_ok:
            events = sse_events(question, body["model"], deltas)
            return Reply(200, [*headers, ("Content-Encoding", "gzip")], chunks=lambda: gzip_stream(_halves(events)))
        return self._stream(sse_events(question, body["model"], deltas), headers)

    def _stream(self, events: list[bytes], headers: list[tuple[str, str]]) -> Reply:
        if self.stream_unended_line is not None:
            size = self.stream_unended_line
            return Reply(200, list(headers), chunks=lambda: _unended_line(size))
        if self.stream_error_after is not None:
            error = {"error": {"code": "UPSTREAM_ERROR", "detail": "The answer model failed mid-answer."}}
            kept = events[: self.stream_error_after]
            events = [*kept, f"data: {json.dumps(error)}\n\n".encode(), b"data: [DONE]\n\n"]
        if self.stream_cut_after is not None:
            keep = sum(len(e) for e in events[: self.stream_cut_after])
            return Reply(200, list(headers), b"".join(events), transport_fault="reset", options={"keep": keep})
        if self.stream_hang_after is not None:
            first = max(1, sum(len(e) for e in events[: self.stream_hang_after]))
            options = {"chunk_size": first, "delay": self.stream_hang_seconds}
            return Reply(200, list(headers), b"".join(events), transport_fault="slow_body", options=options)
        if self.stream_eof_after is not None:
            return Reply(200, list(headers), b"".join(events[: self.stream_eof_after]))
        return Reply(200, list(headers), chunks=lambda: _halves(events))


def _chat_errors(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, dict):
        return [_err("model_attributes_type", "body", "body", "Input should be a valid dictionary", None)]
    errors = [_err("extra_forbidden", "body", k, "Extra inputs are not permitted", v) for k, v in body.items()
              if k not in _CHAT_FIELDS]  # fmt: skip
    messages = body.get("messages")
    if not (isinstance(messages, list) and len(messages) == 1 and isinstance(messages[0], dict)
            and messages[0].get("role") == "user" and isinstance(messages[0].get("content"), str)
            and messages[0]["content"].strip()):  # fmt: skip
        errors.append(_err("value_error", "body", "messages", "Value error, exactly one user message", messages))
    if body.get("model", "brave-pro") not in ("brave", "brave-pro"):
        errors.append(_err("enum", "body", "model", "Input should be 'brave' or 'brave-pro'", body.get("model")))
    stream = body.get("stream", True)
    if body.get("enable_research") and not stream:
        errors.append(
            _err("value_error", "body", "stream", "Blocking response doesn't support 'enable_research' option", False)
        )
    if body.get("enable_citations") and not stream:
        errors.append(
            _err("value_error", "body", "stream", "Blocking response doesn't support 'enable_citations' option", False)
        )
    if body.get("enable_research") and body.get("enable_citations"):
        errors.append(
            _err(
                "value_error",
                "body",
                "enable_citations",
                "Research mode doesn't support 'enable_citations' option",
                True,
            )
        )
    for name, (low, high) in _RESEARCH_RANGES.items():
        if name in body:
            problem = number_range(name, str(body[name]), low, high, where="body")
            errors += [problem] if problem else []
    return errors


def _chat_id(question: str) -> str:
    return "chatcmpl-" + hashlib.sha256(question.encode()).hexdigest()[:16]


def answer_deltas(question: str, *, citations: bool, research: bool) -> list[str]:
    topic = " ".join(question.split())[:80]
    cite = (
        '<citation>{"start_index":0,"end_index":60,"number":1,"url":"https://docs.example.org/guide",'
        '"favicon":"https://imgs.example/fav.png","snippet":"The guide explains the topic step by step."}</citation>'
    )
    cite2 = (
        '<citation>{"start_index":61,"end_index":120,"number":2,"url":"https://wiki.example.net/Topic",'
        '"snippet":"An encyclopedia entry on the topic – with history."}</citation>'
    )
    body = [
        f"Short answer about “{topic}”: ",
        "it works in three steps, described in the official guide.",
        *([cite[:40], cite[40:]] if citations else []),  # a tag split across two deltas
        " Step one prepares the input; ",
        "step two runs the work – carefully; step three checks the result.",
        *([cite2] if citations else []),
        "\n\nIn practice, most people only need step two.",
    ]
    usage = (
        '<usage>{"X-Request-Requests":1,"X-Request-Queries":2,"X-Request-Tokens-In":1200,'
        '"X-Request-Tokens-Out":96,"X-Request-Total-Cost":0.01128}</usage>'
    )
    if research:
        return ["<thinking>Planning searches for the question.</thinking>", '<progress>{"iteration":1}</progress>',
                "<answer>", *body, "</answer>", usage]  # fmt: skip
    return [*body, usage]


def sse_events(question: str, model: str, deltas: list[str]) -> list[bytes]:
    ident = _chat_id(question)
    events = []
    for index, delta in enumerate(deltas):
        choice: dict[str, Any] = {"index": 0, "delta": {"content": delta}}
        if index == 0:
            choice["delta"]["role"] = "assistant"
        if index == len(deltas) - 1:
            choice["finish_reason"] = "stop"
        chunk = {"id": ident, "object": "chat.completion.chunk", "created": 1767225600, "model": model,
                 "choices": [choice]}  # fmt: skip
        events.append(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
    events.append(b"data: [DONE]\n\n")
    return events


def _unended_line(size: int, piece: int = 64 * 1024) -> Iterator[bytes]:
    """``data: "xxx…`` of ``size`` bytes in all, in pieces, with no line end."""
    head = b'data: "'
    yield head
    left = size - len(head)
    while left > 0:
        yield b"x" * min(piece, left)
        left -= piece


def _halves(events: list[bytes]) -> Iterator[bytes]:
    """Each event in two writes, so lines (and UTF-8 characters) arrive split as on a real network."""
    for event in events:
        middle = len(event) // 2
        yield event[:middle]
        yield event[middle:]
