"""v1 envelopes of brave_llm_context, brave_local_search and brave_answer, built on the shared envelope parts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .models import CallMeta, Envelope, Result, Section, ToolEnvelope

LocalPath = Literal["place_search", "web_locations", "web_fallback"]


# ------------------------------------------------------------------------------------ LLM context


class ContextSource(Envelope):
    """One page Brave picked for grounding: what it is, how old, and the passages worth reading."""

    title: str
    url: str
    site: str | None = None  # the site, as a reader names it
    age: str | None = None
    published_date: str | None = None  # ISO date when Brave gave one
    snippets: list[str] = Field(default_factory=list)


class LlmContextMeta(CallMeta):
    """How the grounding was served and how much of it fits the caller's character budget."""

    query: str
    sources: int
    places: int
    chars: int  # characters of the text rendering
    max_chars: int
    snippets_dropped: int = 0


class LlmContextEnvelope(ToolEnvelope):
    """Success envelope of ``brave_llm_context``: grounding sources, then places (local recall)."""

    summary: str
    sources: list[ContextSource]
    places: list[Result] = Field(default_factory=list)
    meta: LlmContextMeta


# ---------------------------------------------------------------------------------------- places


class LocalMeta(CallMeta):
    """How the places were found: which path, for what, and how many."""

    query: str
    path: LocalPath
    location: str | None = None
    requested: int
    returned: int


class LocalEnvelope(ToolEnvelope):
    """Success envelope of ``brave_local_search``: a "places" section, or "web" when it fell back."""

    summary: str
    sections: list[Section]
    meta: LocalMeta


# --------------------------------------------------------------------------------------- answers


class Citation(Envelope):
    """A numbered source the answer cites, with the passage Brave quoted from it."""

    number: int
    url: str
    title: str | None = None
    snippet: str | None = None


class AnswerUsage(Envelope):
    """What the answer cost, as Brave reports it (its ``<usage>`` tag and OpenAI usage)."""

    requests: int | None = None
    queries: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    total_cost: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


class AnswerMeta(CallMeta):
    """How the answer was produced and whether it is complete."""

    question: str
    model: str = "brave"
    research: bool = False
    complete: bool
    finish_reason: str | None = None
    chunks: int = 0
    usage: AnswerUsage | None = None


class AnswerEnvelope(ToolEnvelope):
    """Success envelope of ``brave_answer``: the answer text with [n] markers and its numbered sources."""

    answer: str
    sources: list[Citation] = Field(default_factory=list)
    meta: AnswerMeta
