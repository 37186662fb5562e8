"""brave_answer: Brave Answers (``/res/v1/chat/completions``, model ``brave``) streamed into a cited answer.

The stream is read incrementally and never trusted to finish: the call's deadline ends it with what
arrived (``DEADLINE_REACHED``), a stream cut mid-way keeps what arrived (``STREAM_INTERRUPTED``), and
only a stream that produced no answer text at all becomes an error envelope. Research mode gets its
own, longer deadline derived from its time budget.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import anyio
from pydantic import AliasChoices, Field, field_validator

from brave_search_mcp._version import __version__
from brave_search_mcp.brave.answers_stream import TagReader, json_object
from brave_search_mcp.brave.arguments import Collector
from brave_search_mcp.brave.facts import PARAM_RANGES, PLAN_NEEDED, Endpoint
from brave_search_mcp.clock import Clock
from brave_search_mcp.config import Settings
from brave_search_mcp.models.answer import AnswerEnvelope, AnswerMeta, AnswerUsage, Citation
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import (
    BraveSearchError,
    NetworkError,
    NotInPlan,
    UpstreamError,
    UpstreamTimeout,
    WarningCode,
)
from brave_search_mcp.models.inputs import SafeSearch, StrictInput
from brave_search_mcp.render.answer_text import render_answer
from brave_search_mcp.render.text import clean_block, clean_text, cut, http_url, site_of
from brave_search_mcp.usecases.contract import Call, CliShape, Ports, Progress, StreamPost, ToolSpec

logger = logging.getLogger(__name__)

MODEL = "brave"
DEFAULT_MAX_CHARS = 8_000
MIN_MAX_CHARS = 500
MAX_MAX_CHARS = 100_000
# Answer text kept while the stream lasts: twice the most any call can show (the cleaning drops markup and runs of
# spaces); what comes after is counted, not kept, so a stream of millions of characters holds no more than this.
KEEP_CHARS = 2 * MAX_MAX_CHARS
MAX_QUESTION_CHARS = 2_000
MAX_QUESTION_WORDS = 400
MAX_SOURCES = 50
SNIPPET_LIMIT = 300
PROGRESS_EVERY = 16  # events between progress notifications (the first event and phase changes notify at once)
RESEARCH_DEFAULT_SECONDS = 180
RESEARCH_GRACE_SECONDS = 30.0  # Brave's research budget plus time to write the answer
_MARKER = re.compile(r"\[(\d+)\]")
_USAGE_KEYS = {
    "X-Request-Requests": "requests",
    "X-Request-Queries": "queries",
    "X-Request-Tokens-In": "tokens_in",
    "X-Request-Tokens-Out": "tokens_out",
}


class AnswerArgs(StrictInput):
    """Arguments of ``brave_answer``: a question, where to look, and whether to research at length."""

    ALIASES: ClassVar[dict[str, tuple[str, ...]]] = {"question": ("query",), "safe_search": ("safesearch",)}

    question: str = Field(validation_alias=AliasChoices("question", "query"), description="The question to answer.")
    country: str | None = Field(None, description="2-letter country to search from, e.g. US.")
    language: str | None = Field(None, description="Answer language, e.g. en, de.")
    safe_search: SafeSearch | None = Field(None, validation_alias=AliasChoices("safe_search", "safesearch"))
    research: bool = Field(False, description="Multi-search research mode: slower (minutes), more thorough.")
    research_allow_thinking: bool | None = None
    research_maximum_number_of_tokens_per_query: int | None = Field(None, ge=1, description="1024-16384.")
    research_maximum_number_of_queries: int | None = Field(None, ge=1, description="1-50 (default 20).")
    research_maximum_number_of_iterations: int | None = Field(None, ge=1, description="1-5 (default 4).")
    research_maximum_number_of_seconds: int | None = Field(None, ge=1, description="1-300 (default 180).")
    research_maximum_number_of_results_per_query: int | None = Field(None, ge=1, description="1-60.")
    enable_citations: bool = Field(True, description="Numbered sources (not available in research mode).")
    max_chars: int = Field(DEFAULT_MAX_CHARS, ge=1, description="Cap on the answer text (500-100000).")

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must not be empty")
        return value


def prepare(args: AnswerArgs) -> tuple[dict[str, Any], list[WarningItem]]:
    """The chat-completions body for ``args`` (streamed, model ``brave``) and the warnings about changes."""
    out = Collector()
    question = out.query("question", args.question, max_chars=MAX_QUESTION_CHARS, max_words=MAX_QUESTION_WORDS)
    out.country(args.country, lower=True)
    out.language(args.language, field="language", param="language")
    body: dict[str, Any] = {
        "model": MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": question}],
        **dict(out.params),
    }
    if args.safe_search is not None:
        body["safesearch"] = args.safe_search
    citations = args.enable_citations
    if args.research:
        if citations:
            citations = False
            out.warn(
                WarningCode.PARAM_IGNORED, "Brave's research mode has no citations; enable_citations was not sent."
            )
        body["enable_research"] = True
        if args.research_allow_thinking is not None:
            body["research_allow_thinking"] = args.research_allow_thinking
        for name, (low, high) in PARAM_RANGES[Endpoint.CHAT].items():
            value = out.clamp(name, getattr(args, name), low, high)
            if value is not None:
                body[name] = value
    else:
        given = [
            name
            for name in (*PARAM_RANGES[Endpoint.CHAT], "research_allow_thinking")
            if getattr(args, name) is not None
        ]
        if given:
            out.warn(WarningCode.PARAM_IGNORED, f"{', '.join(given)} apply only with research: true; not sent.")
    body["enable_citations"] = citations
    return body, out.warnings


def deadline_seconds(args: AnswerArgs, default: float) -> float:
    """How long a call may take: ``default``, or research's own time budget plus time to write the answer."""
    if not args.research:
        return default
    low, high = PARAM_RANGES[Endpoint.CHAT]["research_maximum_number_of_seconds"]
    budget = min(max(args.research_maximum_number_of_seconds or RESEARCH_DEFAULT_SECONDS, low), high)
    return max(default, budget + RESEARCH_GRACE_SECONDS)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _enum_item(inner: str) -> str:
    data = json_object(inner)
    if data is None:
        return ""
    name = clean_text(data.get("name"), limit=200)
    text = clean_text(data.get("text"), limit=300)
    return f"\n- {name}{': ' + text if text and name else text}" if name or text else ""


class AnswerState:
    """Everything the stream said so far: answer text with [n] markers, citations, usage, how it ended."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.chars = 0  # every character of answer text the stream gave
        self.kept = 0  # those kept in ``parts`` (at most ``KEEP_CHARS``)
        self.citations: dict[int, Citation] = {}
        self.usage = AnswerUsage()
        self.has_usage = False
        self.events = 0
        self.done = False
        self.finish_reason: str | None = None
        self.stream_error: str | None = None
        self.phase: str | None = None
        self.reader = TagReader(self._token)

    def _token(self, kind: str, value: str) -> None:
        if kind == "text":
            self._add(value)
        elif kind == "phase":
            self.phase = value
        elif kind == "citation":
            self._add(self._citation(value))
        elif kind == "usage":
            self._usage(value)
        elif kind == "enum_item":
            self._add(_enum_item(value))
        elif kind in ("enum_start", "enum_end"):
            self._add("\n")

    def _add(self, text: str) -> None:
        if not text:
            return
        self.chars += len(text)
        room = KEEP_CHARS - self.kept
        if room > 0:
            piece = text[:room]
            self.parts.append(piece)
            self.kept += len(piece)

    def _citation(self, inner: str) -> str:
        data = json_object(inner)
        url = http_url(data.get("url")) if data else None
        if data is None or url is None:
            return ""
        known = next((c.number for c in self.citations.values() if c.url == url), None)
        number = _int(data.get("number")) or known or len(self.citations) + 1
        if number not in self.citations and len(self.citations) < MAX_SOURCES:
            snippet = clean_text(data.get("snippet"), limit=SNIPPET_LIMIT) or None
            self.citations[number] = Citation(number=number, url=url, title=site_of(url) or None, snippet=snippet)
        return f"[{number}]"

    def _usage(self, inner: str) -> None:
        data = json_object(inner) or {}
        for key, name in _USAGE_KEYS.items():
            if _int(data.get(key)) is not None:
                setattr(self.usage, name, data[key])
                self.has_usage = True
        cost = data.get("X-Request-Total-Cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.usage.total_cost = float(cost)
            self.has_usage = True

    def on_data(self, payload: str) -> None:
        """One SSE ``data`` payload (a chunk object, ``[DONE]``, or an error object), or a blocking answer's body."""
        if payload.strip() == "[DONE]":
            self.done = True
            return
        chunk = json_object(payload)
        if chunk is None:
            return
        self.events += 1
        error = chunk.get("error")
        if error is not None:
            detail = (error.get("detail") or error.get("message")) if isinstance(error, dict) else error
            self.stream_error = clean_text(str(detail), limit=300) or "unknown error"
            return
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict):
                continue
            whole = choice.get("message")  # a blocking answer: the message whole, and nothing follows it
            delta = choice.get("delta") or whole or {}
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str):
                self.reader.feed(content)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = clean_text(choice["finish_reason"], limit=40) or None
                self.done = self.done or isinstance(whole, dict)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.has_usage = True
            self.usage.prompt_tokens = _int(usage.get("prompt_tokens"))
            self.usage.completion_tokens = _int(usage.get("completion_tokens"))
            self.usage.total_tokens = _int(usage.get("total_tokens"))

    def text(self) -> str:
        """The raw answer kept so far (tags resolved): its first ``KEEP_CHARS`` characters."""
        return "".join(self.parts)


def _answers_plan(exc: NotInPlan) -> NotInPlan:
    """Brave's plan error, said in terms of what to get: the Answers plan."""
    return NotInPlan(
        f"Brave Answers needs Brave's {PLAN_NEEDED[Endpoint.CHAT]} plan, which this API key does not include "
        f"(Brave said: {cut(exc.message, 200)}). brave_web_search and brave_llm_context work on the Search plan.",
        status=exc.status,
        brave_code=exc.brave_code,
        details={**exc.details, "plan_needed": PLAN_NEEDED[Endpoint.CHAT]},
    )


def _warn(code: WarningCode, message: str) -> WarningItem:
    return WarningItem(code=code.value, message=message)


async def _notify(progress: Progress | None, done: float, message: str) -> Progress | None:
    """Send one progress notification; a failing callback is logged and not called again."""
    if progress is None:
        return None
    try:
        await progress(done, None, message)
    except Exception:  # a client that cannot take progress must not cost the answer
        logger.debug("progress notification failed; not sending more", exc_info=True)
        return None
    return progress


async def _read(
    stream: StreamPost, body: dict[str, Any], state: AnswerState, deadline: float | None, progress: Progress | None
) -> BraveSearchError | None:
    """Read the stream into ``state`` until [DONE], EOF or a failure; return the failure that cut it, if any."""
    iterator: AsyncIterator[str] = stream(Endpoint.CHAT, body, deadline=deadline)
    payloads = 0
    phase = None
    try:
        while not state.done:
            try:
                payload = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except NotInPlan as exc:
                raise _answers_plan(exc) from None
            except BraveSearchError as exc:
                if not state.events:
                    raise
                return exc
            except Exception as exc:  # the transport broke mid-stream: keep what arrived
                failure = NetworkError(f"The answer stream broke off ({type(exc).__name__}).", retryable=True)
                if not state.events:
                    raise failure from None
                return failure
            payloads += 1
            state.on_data(payload)
            if state.phase != phase or payloads % PROGRESS_EVERY == 1:  # the first event, then every 16th
                phase = state.phase
                message = f"Brave Answers: {phase or 'answering'} ({state.chars:,} characters so far)"
                progress = await _notify(progress, float(payloads), message)
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()
    return None


async def ask(
    args: AnswerArgs,
    stream: StreamPost,
    *,
    deadline: float | None,
    progress: Progress | None = None,
    clock: Clock = time.monotonic,
    trace_id: str,
    server_version: str,
) -> tuple[AnswerEnvelope, str]:
    """Ask Brave Answers; return the cited answer (complete or partial, with a warning) and its text."""
    started = clock()
    body, warnings = prepare(args)
    max_chars = min(max(args.max_chars, MIN_MAX_CHARS), MAX_MAX_CHARS)
    if max_chars != args.max_chars:
        warnings.append(
            _warn(WarningCode.OUTPUT_LIMIT_CLAMPED, f"max_chars {args.max_chars} is outside 500-100000; {max_chars}.")
        )
    state = AnswerState()
    failure: BraveSearchError | None = None
    remaining = None if deadline is None else max(0.0, deadline - clock())
    with anyio.move_on_after(remaining) as scope:
        failure = await _read(stream, body, state, deadline, progress)
    state.reader.close()
    raw = state.text().strip()
    waited = f"{(clock() - started):.1f} s"
    if not raw:
        if scope.cancelled_caught:
            raise UpstreamTimeout(
                f"Brave Answers sent no answer text within {waited}.", details={"chunks": state.events}
            )
        if state.stream_error:
            raise UpstreamError(f"Brave Answers failed: {state.stream_error}", status=200, retryable=True)
        if failure is not None:
            raise failure
        raise NetworkError("Brave Answers ended the stream without any answer text.", retryable=True)
    if scope.cancelled_caught:
        warnings.append(
            _warn(WarningCode.DEADLINE_REACHED, f"The answer was cut at the call's deadline after {waited}; "
                  "this is what arrived. Ask again (research mode allows longer) for the rest.")
        )  # fmt: skip
    elif failure is not None or state.stream_error or not state.done:
        why = state.stream_error or (failure.message if failure is not None else "the stream ended without [DONE]")
        warnings.append(
            _warn(WarningCode.STREAM_INTERRUPTED, f"The answer stream broke off ({cut(why, 160)}); "
                  "the answer below is what arrived and may be incomplete.")
        )  # fmt: skip
    answer = clean_block(raw, limit=max_chars)
    whole = len(raw) + state.chars - state.kept  # the text past what was kept counts too
    if whole > max_chars:
        warnings.append(
            _warn(
                WarningCode.ANSWER_TRUNCATED,
                f"The answer had {whole:,} characters; it was cut to max_chars={max_chars}.",
            )
        )
    cited = {int(n) for n in _MARKER.findall(answer)}
    sources = [state.citations[n] for n in sorted(state.citations) if n in cited or whole <= max_chars]
    meta = AnswerMeta(
        question=body["messages"][0]["content"],
        research=args.research,
        complete=state.done and failure is None and not scope.cancelled_caught and not state.stream_error,
        finish_reason=state.finish_reason,
        chunks=state.events,
        duration_ms=max(0, int((clock() - started) * 1000)),
        trace_id=trace_id,
        server_version=server_version,
        usage=state.usage if state.has_usage else None,
    )
    envelope = AnswerEnvelope(answer=answer, sources=sources, meta=meta, warnings=warnings)
    return envelope, render_answer(envelope)


async def run(args: AnswerArgs, ports: Ports, call: Call) -> tuple[AnswerEnvelope, str]:
    """The tool: a streamed, cited answer; partial (with a warning) when the stream breaks or time runs out."""
    call.facts.search_type = "answer"
    envelope, text = await ask(
        args, ports.stream_post(call.facts), deadline=call.deadline, progress=call.progress, clock=ports.clock,
        trace_id=call.trace_id, server_version=__version__,
    )  # fmt: skip
    envelope.meta.attempts = call.facts.attempts  # the requests sent, as the call log counts them
    return envelope, text


def _deadline(args: AnswerArgs, settings: Settings) -> float:
    """Research mode can take minutes: its deadline follows its own budget, not the default."""
    return deadline_seconds(args, settings.call_deadline_seconds)


SPEC = ToolSpec(
    name="brave_answer",
    title="Brave answer",
    description=(
        "AI answer from Brave Answers with numbered sources and usage. research: true searches at length "
        "(minutes). Needs Brave's Answers plan."
    ),
    help=(
        "Streams /chat/completions (model brave) with citations; the answer carries [n] markers and a numbered "
        "source list. A stream cut mid-way or ended by the deadline returns what arrived (STREAM_INTERRUPTED, "
        "DEADLINE_REACHED). research: true has its own deadline (research_maximum_number_of_seconds + 30 s, "
        "default 210 s) and no citations. Progress notifications go to clients that pass a progressToken."
    ),
    guide="a cited AI answer to a question, from Brave Answers (research: true for long multi-search answers)",
    input_model=AnswerArgs,
    run=run,
    cli=CliShape("answer", "a cited AI answer (Brave Answers plan)", positional="question"),
    library="answer",
    endpoints=(Endpoint.CHAT,),
    needs_brave=True,
    deadline=_deadline,
)
