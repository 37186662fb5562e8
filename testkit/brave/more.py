"""The fake's LLM-context, local and Answers endpoints: Brave-like validation, plan errors and a streamed answer.

``FakeBrave`` routes these paths here after its own token and rate checks. Behaviour is steered by
explicit controls on ``fake.more`` (never by magic query words): which plan features the key lacks,
queries that find nothing, and how the Answers stream misbehaves (reset, clean EOF or stall after N
events). Bodies are this project's own data, shaped like Brave's documentation (reference/brave-api.md §5).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .more_data import context_body, place_items, web_locations

if TYPE_CHECKING:
    from .brave import FakeBrave, RecordedRequest, Reply, _KeyState

LLM_PATH = "/res/v1/llm/context"
PLACE_PATH = "/res/v1/local/place_search"
POIS_PATH = "/res/v1/local/pois"
DESCRIPTIONS_PATH = "/res/v1/local/descriptions"
CHAT_PATH = "/res/v1/chat/completions"
PATHS: Mapping[str, str] = {
    LLM_PATH: "llm_context",
    PLACE_PATH: "local",
    POIS_PATH: "local",
    DESCRIPTIONS_PATH: "local",
    CHAT_PATH: "answers",
}
_Allowed = Mapping[str, tuple[int, int] | None]
_LLM_PARAMS: _Allowed = {
    "q": None, "country": None, "search_lang": None, "count": (1, 50), "maximum_number_of_urls": (1, 50),
    "maximum_number_of_tokens": (1024, 32768), "maximum_number_of_snippets": (1, 256),
    "maximum_number_of_tokens_per_url": (512, 8192), "maximum_number_of_snippets_per_url": (1, 100),
    "context_threshold_mode": None, "enable_local": None, "goggles": None, "freshness": None, "safesearch": None,
    "spellcheck": None, "enable_source_metadata": None,
}  # fmt: skip
_PLACE_PARAMS: _Allowed = {
    "q": None, "latitude": None, "longitude": None, "location": None, "radius": None, "count": (1, 50),
    "country": None, "search_lang": None, "ui_lang": None, "units": None, "safesearch": None, "spellcheck": None,
    "geoloc": None,
}  # fmt: skip
_POIS_PARAMS: _Allowed = {"ids": None, "search_lang": None, "ui_lang": None, "units": None}
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
_MAX_Q = (600, 75)  # the newest LLM-context reference; other endpoints 400/50
_SSE_HEADERS = [("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache")]


@dataclass(eq=False)
class MoreControls:
    """Explicit controls of the extra endpoints; queries compare case-insensitively, whitespace folded."""

    plan_lacks: set[str] = field(default_factory=set)  # "local", "answers", "llm_context" → 400 OPTION_NOT_IN_PLAN
    no_places_for: set[str] = field(default_factory=set)  # place-search queries answered with no result
    no_context_for: set[str] = field(default_factory=set)  # LLM-context queries with empty grounding
    stream_cut_after: int | None = None  # SSE events sent, then the connection is reset
    stream_eof_after: int | None = None  # SSE events sent, then a clean end without [DONE]
    stream_hang_after: int | None = None  # SSE events sent, then the stream stalls
    stream_hang_seconds: float = 30.0
    stream_error_after: int | None = None  # SSE events sent, then an in-stream error object and [DONE]
    chat_requests: list[dict[str, Any]] = field(default_factory=list)  # decoded bodies, for assertions


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def _err(kind: str, where: str, name: str, msg: str, value: Any) -> dict[str, Any]:
    return {"type": kind, "loc": [where, name], "msg": msg, "input": value}


def _range(name: str, value: str, low: int, high: int, *, where: str = "query") -> dict[str, Any] | None:
    try:
        number = int(value)
    except ValueError:
        return _err("int_parsing", where, name, "Input should be a valid integer", value)
    if number < low:
        return _err("greater_than_equal", where, name, f"Input should be greater than or equal to {low}", value)
    if number > high:
        return _err("less_than_equal", where, name, f"Input should be less than or equal to {high}", value)
    return None


def _check_query_params(
    params: list[tuple[str, str]], allowed: Mapping[str, tuple[int, int] | None]
) -> tuple[dict[str, str], list[str], list[dict[str, Any]]]:
    from .brave import COUNTRIES, SEARCH_LANGS  # the one copy of Brave's lists in the fake

    values: dict[str, str] = {}
    ids: list[str] = []
    errors: list[dict[str, Any]] = []
    for name, value in params:
        if name not in allowed:
            errors.append(_err("extra_forbidden", "query", name, "Extra inputs are not permitted", value))
        elif name == "ids":
            ids.append(value)
        else:
            values[name] = value
    for name, bounds in allowed.items():
        if name not in values:
            continue
        value = values[name]
        problem = _range(name, value, *bounds) if bounds else None
        if name == "country" and value.upper() not in COUNTRIES:
            problem = _err("enum", "query", name, "Input should be a supported country", value)
        if name == "search_lang" and value not in SEARCH_LANGS:
            problem = _err("enum", "query", name, "Input should be a supported language", value)
        if name == "context_threshold_mode" and value not in ("strict", "balanced", "lenient", "disabled"):
            problem = _err(
                "enum", "query", name, "Input should be 'strict', 'balanced', 'lenient' or 'disabled'", value
            )
        if name in ("units",) and value not in ("metric", "imperial"):
            problem = _err("enum", "query", name, "Input should be 'metric' or 'imperial'", value)
        if name in ("latitude", "longitude", "radius"):
            problem = _float(name, value)
        if problem is not None:
            errors.append(problem)
    return values, ids, errors


def _float(name: str, value: str) -> dict[str, Any] | None:
    try:
        number = float(value)
    except ValueError:
        return _err("float_parsing", "query", name, "Input should be a valid number", value)
    limit = {"latitude": 90.0, "longitude": 180.0}.get(name)
    if (limit is not None and abs(number) > limit) or (name == "radius" and number < 0):
        return _err("value_error", "query", name, f"Value error, {name} is out of range", value)
    return None


def _q_error(q: str | None, *, required: bool, limits: tuple[int, int] = (400, 50)) -> dict[str, Any] | None:
    if q is None:
        return _err("missing", "query", "q", "Field required", None) if required else None
    if not q.strip():
        return _err("string_too_short", "query", "q", "String should have at least 1 character", q)
    if len(q) > limits[0] or len(q.split()) > limits[1]:
        return _err(
            "string_too_long", "query", "q", f"Query should have at most {limits[0]} chars / {limits[1]} words", q
        )
    return None


@dataclass(eq=False)
class MoreBrave(MoreControls):
    """Answers the extra endpoints for one ``FakeBrave`` (which checked the token and the rate first)."""

    def __post_init__(self) -> None:
        self._places = place_items()
        self._by_id = {item["id"]: item for item in (*self._places, *web_locations())}

    def answer(self, fake: FakeBrave, record: RecordedRequest, state: _KeyState, gzip_ok: bool) -> Reply:
        """One request to an extra path, answered as Brave would."""
        kind = PATHS[record.path]
        is_chat = record.path == CHAT_PATH
        rate: list[tuple[str, str]] | None = (
            [] if is_chat else None
        )  # Brave sends no X-RateLimit-* headers on chat completions
        if kind in self.plan_lacks:
            meta = {"component": "authentication", "plan": "Search" if kind == "answers" else "Free"}
            detail = "The option is not subscribed in the plan."
            return fake._error(400, "OPTION_NOT_IN_PLAN", detail, meta, state, gzip_ok, rate_headers=rate)
        if is_chat:
            return self._chat(fake, record, state)
        if record.method != "GET":
            return fake._error(405, "METHOD_NOT_ALLOWED", "Method Not Allowed", {}, state, gzip_ok)
        allowed: dict[str, _Allowed] = {LLM_PATH: _LLM_PARAMS, PLACE_PATH: _PLACE_PARAMS, POIS_PATH: _POIS_PARAMS}
        values, ids, errors = _check_query_params(record.params, allowed.get(record.path, {"ids": None}))
        if record.path == LLM_PATH:
            problem = _q_error(values.get("q"), required=True, limits=_MAX_Q)
        elif record.path == PLACE_PATH:
            problem = _q_error(values.get("q"), required=False)
            has_coords = "latitude" in values or "longitude" in values
            if has_coords and not ("latitude" in values and "longitude" in values):
                problem = _err("value_error", "query", "latitude", "Value error, give latitude and longitude", None)
            elif not has_coords and "location" not in values:
                problem = _err(
                    "value_error", "query", "location", "Value error, location or coordinates required", None
                )
        else:
            problem = None
            if not 1 <= len(ids) <= 20:
                problem = _err(
                    "value_error", "query", "ids", "Value error, between 1 and 20 ids are required", len(ids)
                )
        errors += [problem] if problem else []
        if errors:
            return fake._validation(errors, state, gzip_ok)
        state.used_month += 1
        if record.path == LLM_PATH:
            body = self._context(values, record.headers)
        elif record.path == PLACE_PATH:
            body = self._place_search(values)
        elif record.path == POIS_PATH:
            body = {"type": "local_pois", "results": [self._by_id.get(i) for i in ids]}
        else:
            body = {"type": "local_descriptions", "results": [_description(self._by_id.get(i)) for i in ids]}
        return fake._json_reply(200, body, state, gzip_ok)

    def _context(self, values: Mapping[str, str], headers: Mapping[str, str]) -> dict[str, Any]:
        q = values["q"]
        if _fold(q) in {_fold(item) for item in self.no_context_for}:
            return {"grounding": {"generic": [], "map": []}, "sources": {}}
        local = values.get("enable_local") in ("true", "1") or (
            values.get("enable_local") is None and any(name.startswith("x-loc-") for name in headers)
        )
        return context_body(q, local=local, urls=int(values.get("maximum_number_of_urls", "20")))

    def _place_search(self, values: Mapping[str, str]) -> dict[str, Any]:
        q = values.get("q", "")
        count = int(values.get("count", "20"))
        empty = _fold(q) in {_fold(item) for item in self.no_places_for}
        return {
            "type": "locations",
            "query": {"original": q, "altered": None, "spellcheck_off": False, "show_strict_warning": False},
            "results": [] if empty else [dict(item) for item in self._places[:count]],
            "location": {"name": values.get("location", "coordinates"), "country": "PT"},
        }

    # ------------------------------------------------------------------ chat completions

    def _chat(self, fake: FakeBrave, record: RecordedRequest, state: _KeyState) -> Reply:
        from .brave import Reply

        try:
            body = json.loads(record.body or b"null")
        except ValueError:
            body = None
        errors = _chat_errors(body)
        if errors:
            return fake._error(
                422, "VALIDATION", "Unable to validate request parameter(s)", {"errors": errors}, state, False,
                rate_headers=[],
            )  # fmt: skip
        assert isinstance(body, dict)
        self.chat_requests.append(body)
        question = body["messages"][0]["content"]
        research = bool(body.get("enable_research"))
        deltas = _answer_deltas(question, citations=bool(body.get("enable_citations")), research=research)
        if not body.get("stream", True):
            text = "".join(d for d in deltas if not d.startswith("<usage>"))
            blocking = {
                "id": _chat_id(question), "object": "chat.completion", "created": 1767225600, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1200, "completion_tokens": 96, "total_tokens": 1296},
            }  # fmt: skip
            return fake._json_reply(200, blocking, state, False, rate_headers=[])
        events = _sse_events(question, body["model"], deltas)
        c = self
        if c.stream_error_after is not None:
            error = {"error": {"code": "UPSTREAM_ERROR", "detail": "The answer model failed mid-answer."}}
            kept = events[: c.stream_error_after]
            events = [*kept, f"data: {json.dumps(error)}\n\n".encode(), b"data: [DONE]\n\n"]
        if c.stream_cut_after is not None:
            keep = sum(len(e) for e in events[: c.stream_cut_after])
            return Reply(200, list(_SSE_HEADERS), b"".join(events), transport_fault="reset", options={"keep": keep})
        if c.stream_hang_after is not None:
            first = max(1, sum(len(e) for e in events[: c.stream_hang_after]))
            options = {"chunk_size": first, "delay": c.stream_hang_seconds}
            return Reply(200, list(_SSE_HEADERS), b"".join(events), transport_fault="slow_body", options=options)
        if c.stream_eof_after is not None:
            return Reply(200, list(_SSE_HEADERS), b"".join(events[: c.stream_eof_after]))
        return Reply(200, list(_SSE_HEADERS), chunks=lambda: _halves(events))


def bearer_token(path: str, headers: dict[str, str]) -> str | None:
    """Chat completions also take ``Authorization: Bearer <key>`` (what OpenAI clients send); it is not recorded."""
    if path != CHAT_PATH:
        return None
    scheme, _, token = headers.pop("authorization", "").partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


def _description(item: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if item is None:
        return None
    town = item.get("postal_address", {}).get("addressLocality", "town")
    text = f"## About\n{item['title']} is a **local favourite** in {town}."
    return {"type": "local_description", "id": item["id"], "description": text}


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
            problem = _range(name, str(body[name]), low, high, where="body")
            errors += [problem] if problem else []
    return errors


def _chat_id(question: str) -> str:
    return "chatcmpl-" + hashlib.sha256(question.encode()).hexdigest()[:16]


def _answer_deltas(question: str, *, citations: bool, research: bool) -> list[str]:
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


def _sse_events(question: str, model: str, deltas: list[str]) -> list[bytes]:
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


def _halves(events: list[bytes]) -> Iterator[bytes]:
    """Each event in two writes, so lines (and UTF-8 characters) arrive split as on a real network."""
    for event in events:
        middle = len(event) // 2
        yield event[:middle]
        yield event[middle:]
