"""The v1 envelope of brave_answer: a streamed, cited answer with its citations and usage."""

from __future__ import annotations

from pydantic import Field

from brave_search_mcp.models.envelopes import CallMeta, Envelope, ToolEnvelope

# ------------------------------------------------------------------------------------ LLM context


# ---------------------------------------------------------------------------------------- places


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
    attempts: int = 0  # requests sent for this answer (a 429 is retried)
    usage: AnswerUsage | None = None


class AnswerEnvelope(ToolEnvelope):
    """Success envelope of ``brave_answer``: the answer text with [n] markers and its numbered sources."""

    answer: str
    sources: list[Citation] = Field(default_factory=list)
    meta: AnswerMeta
