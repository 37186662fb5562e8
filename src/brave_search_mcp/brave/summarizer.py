"""Poll Brave's legacy summarizer politely and flatten its message stream into text an agent can read."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import anyio

from brave_search_mcp.brave.client import BraveResponse, Params
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.models.errors import InvalidArgument, NotInPlan, SummaryUnavailable
from brave_search_mcp.models.summary import Reference
from brave_search_mcp.render.text import clean_block, clean_text, cut, dedup_key, http_url

logger = logging.getLogger(__name__)

MAX_POLLS: Final = 100
MAX_TEXT_CHARS: Final = 8_000
MAX_LINE_CHARS: Final = 1_000
MAX_REFERENCES: Final = 20
MAX_FOLLOWUPS: Final = 10
MAX_CONTEXT: Final = 10
MAX_QA: Final = 3
MAX_ENTITIES_INFOS_BYTES: Final = 4_096
PLAN_NEEDED: Final = "Pro AI"
BASE_MESSAGE: Final = "Unable to retrieve a Summarizer summary."

# A private-use character marks where a cited URL goes: it survives text cleanup, unlike a control character.
_MARK: Final = "\ue000"
_MARK_RE: Final = re.compile("\ue000(\\d+)\ue000")


class SummarizerSource(Protocol):
    """What the poller needs from a client; ``BraveClient`` satisfies it, tests pass a fake."""

    async def get(
        self, endpoint: Endpoint, params: Params, *, use_cache: bool = True, throttle: bool = True
    ) -> BraveResponse:
        """GET one Brave endpoint; raise a ``BraveSearchError`` subclass on failure."""
        ...


@dataclass(frozen=True)
class PollSchedule:
    """How often to poll: first poll quickly, then back off, and give up at an overall deadline."""

    first_delay: float = 0.0
    initial_interval: float = 0.25
    factor: float = 2.0
    max_interval: float = 2.0
    deadline: float = 20.0

    def __post_init__(self) -> None:
        if not self.first_delay >= 0:
            raise ValueError("first_delay must be >= 0")
        if not self.initial_interval > 0:
            raise ValueError("initial_interval must be > 0 (never poll back to back)")
        if not self.factor >= 1:
            raise ValueError("factor must be >= 1")
        if not self.max_interval >= self.initial_interval:
            raise ValueError("max_interval must be >= initial_interval")
        if not self.deadline > 0:
            raise ValueError("deadline must be > 0")


DEFAULT_SCHEDULE: Final = PollSchedule()


@dataclass
class Summary:
    """A finished summary, already cleaned and capped so it can go straight into an envelope."""

    title: str | None
    text: str
    references: list[Reference]
    followups: list[str]
    enrichments: dict[str, Any] | None
    entities_infos: dict[str, Any] | None
    polls: int
    status: str


# ---------------------------------------------------------------------------------------------
# Text cleanup


def _clean_line(value: Any) -> str | None:
    """A single-line clean string, or None when ``value`` is not a non-blank string."""
    return clean_text(value, limit=MAX_LINE_CHARS) or None


@dataclass
class _RefEntry:
    url: str
    given: int | None
    title: str | None


@dataclass
class _RefBook:
    """Collects cited URLs in order, then numbers them: Brave's numbers first, the rest sequentially."""

    entries: list[_RefEntry] = field(default_factory=list)

    def add(self, url: Any, *, number: Any = None, title: Any = None) -> None:
        checked = http_url(url)
        if checked is None:
            return
        given = number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None
        self.entries.append(_RefEntry(checked, given, _clean_line(title)))

    def build(self, limit: int = MAX_REFERENCES) -> list[Reference]:
        merged: dict[str, _RefEntry] = {}
        for entry in self.entries:
            key = dedup_key(entry.url)
            seen = merged.get(key)
            if seen is None:
                merged[key] = _RefEntry(entry.url, entry.given, entry.title)
                continue
            if seen.given is None:
                seen.given = entry.given
            if seen.title is None:
                seen.title = entry.title
        numbered: dict[int, _RefEntry] = {}
        unnumbered: list[_RefEntry] = []
        for entry in merged.values():
            if entry.given is not None and entry.given not in numbered:
                numbered[entry.given] = entry
            else:
                unnumbered.append(entry)
        next_number = max(numbered, default=0)
        for entry in unnumbered:
            next_number += 1
            numbered[next_number] = entry
        return [
            Reference(number=number, url=numbered[number].url, title=numbered[number].title)
            for number in sorted(numbered)[:limit]
        ]


# ---------------------------------------------------------------------------------------------
# Flattening


def _enum_item_line(data: Any) -> str | None:
    """``name: text``, ``name`` or ``text`` for one list entity; None when it has nothing to show."""
    if not isinstance(data, dict):
        return None
    name = data.get("name") if isinstance(data.get("name"), str) and data["name"].strip() else None
    text = data.get("text") if isinstance(data.get("text"), str) and data["text"].strip() else None
    if name and text:
        return f"{name}: {text}"
    return name or text


def _flatten(messages: Any, *, inline_references: bool) -> tuple[str, _RefBook]:
    """Walk Brave's message stream once, building the text and the references it cites."""
    book = _RefBook()
    if not isinstance(messages, list):
        return "", book
    parts: list[str] = []
    urls: list[str] = []  # cited URLs go in after cleanup, so entity decoding cannot alter them
    lists: list[int] = []  # open lists, innermost last: items so far for "ol", -1 for "ul"

    def at_line_start() -> None:
        if parts and not parts[-1].endswith("\n"):
            parts.append("\n")

    for message in messages:
        if not isinstance(message, dict):
            continue
        kind = message.get("type")
        data = message.get("data")
        if kind == "token":
            if isinstance(data, str):
                parts.append(data.replace(_MARK, ""))
        elif kind == "inline_reference":
            if not isinstance(data, dict):
                continue
            url = http_url(data.get("url"))
            if url is None:
                continue
            book.add(url, number=data.get("number"))
            if inline_references:
                parts.append(f" ({_MARK}{len(urls)}{_MARK})")
                urls.append(url)
        elif kind == "enum_start":
            at_line_start()
            lists.append(0 if data == "ol" else -1)
        elif kind == "enum_item":
            line = _enum_item_line(data)
            if line is None or not isinstance(data, dict):
                continue
            book.add(data.get("url"), title=data.get("name"))
            at_line_start()
            if lists and lists[-1] >= 0:
                lists[-1] += 1
                parts.append(f"{lists[-1]}. {line.replace(_MARK, '')}")
            else:
                parts.append(f"- {line.replace(_MARK, '')}")
        elif kind == "enum_end" and lists:
            lists.pop()
            parts.append("\n")
    text = clean_block("".join(parts), limit=len("".join(parts)) + 1)
    if urls:
        text = _MARK_RE.sub(lambda match: urls[int(match.group(1))], text)
    return cut(text, MAX_TEXT_CHARS), book


# ---------------------------------------------------------------------------------------------
# The rest of a complete body


def _followups(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    out: list[str] = []
    for item in value:
        cleaned = _clean_line(item)
        if cleaned and cleaned not in out:
            out.append(cleaned)
            if len(out) >= MAX_FOLLOWUPS:
                break
    return out


def _compact_enrichments(value: Any) -> dict[str, Any] | None:
    """Keep only the cheap, useful part of enrichments (sources and short answers), not raw text or images."""
    if not isinstance(value, dict):
        return None
    compact: dict[str, Any] = {}
    context: list[dict[str, Any]] = []
    raw_context = value.get("context")
    for item in raw_context if isinstance(raw_context, list) else []:
        if len(context) >= MAX_CONTEXT:
            break
        if not isinstance(item, dict):
            continue
        url = http_url(item.get("url"))
        if url is not None:
            context.append({"title": _clean_line(item.get("title")), "url": url})
    if context:
        compact["context"] = context
    answers: list[str] = []
    raw_qa = value.get("qa")
    for item in raw_qa if isinstance(raw_qa, list) else []:
        if len(answers) >= MAX_QA:
            break
        answer = _clean_line(item.get("answer")) if isinstance(item, dict) else None
        if answer:
            answers.append(answer)
    if answers:
        compact["qa"] = answers
    return compact or None


def _json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())


def _capped_entities(value: Any) -> dict[str, Any] | None:
    """Pass entity descriptions through, keeping the leading entries that fit in about 4 KiB of JSON."""
    if not isinstance(value, dict):
        return None
    kept: dict[str, Any] = {}
    size = 2  # "{}"
    for name, info in value.items():
        entry = _json_size({str(name): info}) - 2 + (1 if kept else 0)  # the entry plus its comma
        if size + entry > MAX_ENTITIES_INFOS_BYTES:
            break
        kept[str(name)] = info
        size += entry
    return kept or None


# ---------------------------------------------------------------------------------------------
# Polling


def _unavailable(
    reason: str, polls: int, *, explanation: str | None, retryable: bool, **extra: Any
) -> SummaryUnavailable:
    message = BASE_MESSAGE if explanation is None else f"{BASE_MESSAGE} (reason: {explanation})"
    return SummaryUnavailable(message, retryable=retryable, details={"reason": reason, "polls": polls, **extra})


def _not_in_plan(exc: NotInPlan) -> NotInPlan:
    message = (
        f'The Brave Summarizer needs Brave\'s legacy "{PLAN_NEEDED}" plan, which this API key does not include '
        f"(Brave said: {exc.message}). For cited AI answers on current plans use brave_answer (Brave's Answers plan)."
    )
    return NotInPlan(
        message,
        status=exc.status,
        brave_code=exc.brave_code,
        retryable=exc.retryable,
        details={**exc.details, "plan_needed": PLAN_NEEDED},
        retry_after=exc.retry_after,
    )


def _finish(data: dict[str, Any], *, entity_info: bool, inline_references: bool, polls: int) -> Summary:
    text, book = _flatten(data.get("summary"), inline_references=inline_references)
    if not text:
        raise _unavailable("empty", polls, explanation="Brave returned no summary text", retryable=False)
    enrichments = data.get("enrichments")
    if isinstance(enrichments, dict) and isinstance(enrichments.get("context"), list):
        for item in enrichments["context"]:
            if isinstance(item, dict):
                book.add(item.get("url"), title=item.get("title"))
    return Summary(
        title=_clean_line(data.get("title")),
        text=text,
        references=book.build(),
        followups=_followups(data.get("followups")),
        enrichments=_compact_enrichments(enrichments),
        entities_infos=_capped_entities(data.get("entities_infos")) if entity_info else None,
        polls=polls,
        status="complete",
    )


async def fetch_summary(
    source: SummarizerSource,
    key: str,
    *,
    entity_info: bool = False,
    inline_references: bool = False,
    schedule: PollSchedule = DEFAULT_SCHEDULE,
    clock: Clock = time.monotonic,
    sleep: Sleep = anyio.sleep,
    progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
) -> Summary:
    """Poll the summarizer for ``key`` until it completes, fails or the deadline passes, waiting between polls."""
    if not isinstance(key, str) or not key.strip():
        raise InvalidArgument("key must be a non-empty summarizer key", field="key")
    params: list[tuple[str, str]] = [("key", key)]
    if entity_info:
        params.append(("entity_info", "1"))
    if inline_references:
        params.append(("inline_references", "1"))

    start = clock()
    polls = 0
    wait = schedule.first_delay
    interval = schedule.initial_interval
    while True:
        if wait > 0:
            if clock() - start + wait > schedule.deadline:
                raise _unavailable(
                    "deadline",
                    polls,
                    explanation=f"the summary was not ready within {schedule.deadline:g} s",
                    retryable=True,
                    deadline_seconds=schedule.deadline,
                )
            await sleep(wait)
        try:
            response = await source.get(Endpoint.SUMMARIZER, params, use_cache=False, throttle=True)
        except NotInPlan as exc:
            raise _not_in_plan(exc) from exc
        polls += 1
        if progress is not None:
            await progress(polls, None, f"summary poll {polls}")
        data: Any = response.data
        if not isinstance(data, dict):
            raise _unavailable(
                "empty", polls, explanation="Brave's answer was not a summarizer object", retryable=False
            )
        status = data.get("status")
        logger.debug("summarizer poll %d: status=%r", polls, status)
        if status == "complete":
            return _finish(data, entity_info=entity_info, inline_references=inline_references, polls=polls)
        if status == "failed":
            raise _unavailable("failed", polls, explanation=None, retryable=False)
        if polls >= MAX_POLLS:
            raise _unavailable(
                "max_polls", polls, explanation=f"the summary was not ready after {MAX_POLLS} polls", retryable=True
            )
        wait = interval
        interval = min(interval * schedule.factor, schedule.max_interval)
