"""A streamed answer as the text a model reads: the answer, its numbered sources, usage and warnings."""

from __future__ import annotations

from brave_search_mcp.models.answer import AnswerEnvelope, AnswerUsage
from brave_search_mcp.render.text import cut


def _usage_line(usage: AnswerUsage) -> str | None:
    parts = []
    if usage.requests is not None:
        parts.append(f"{usage.requests:,} request{'' if usage.requests == 1 else 's'}")
    if usage.queries is not None:
        parts.append(f"{usage.queries:,} search quer{'y' if usage.queries == 1 else 'ies'}")
    tokens_in = usage.tokens_in if usage.tokens_in is not None else usage.prompt_tokens
    tokens_out = usage.tokens_out if usage.tokens_out is not None else usage.completion_tokens
    if tokens_in is not None:
        parts.append(f"{tokens_in:,} tokens in")
    if tokens_out is not None:
        parts.append(f"{tokens_out:,} tokens out")
    if usage.total_cost is not None:
        parts.append(f"cost ${usage.total_cost:.5g}")
    return "Usage: " + ", ".join(parts) + "." if parts else None


def render_answer(envelope: AnswerEnvelope) -> str:
    """The answer, its numbered sources, usage and warnings as compact text."""
    lines = [envelope.answer]
    if envelope.sources:
        lines += ["", "Sources:"]
        for source in envelope.sources:
            said = f" — {cut(source.snippet, 150)}" if source.snippet else ""
            lines.append(f"[{source.number}] {source.url}{said}")
    usage = _usage_line(envelope.meta.usage) if envelope.meta.usage else None
    if usage:
        lines += ["", usage]
    if envelope.warnings:
        lines += ["", "Warnings:", *(f"- {w.code}: {w.message}" for w in envelope.warnings)]
    return "\n".join(lines)
