"""Registry text of brave_llm_context, brave_local_search and brave_answer, kept beside the use cases they describe.

The model pays for each description on every turn, so descriptions stay under 200 characters; the
help paragraphs go to the help tool. ``SUMMARIZER_*`` are the lines that point legacy summarizer
users at brave_answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class ToolText:
    """What the registry shows for one tool."""

    name: str
    title: str
    description: str  # <= 200 characters
    help: str


LLM_CONTEXT: Final = ToolText(
    "brave_llm_context",
    "Brave LLM context",
    "Grounding passages for a query: per source title, URL, age and snippets, deduplicated, within max_chars "
    "(default 8000). Location fields add nearby places.",
    "Brave's /llm/context grounding. Budgets (maximum_number_of_tokens/urls/snippets, per-URL caps) are clamped "
    "to Brave's ranges with a warning; context_threshold_mode strict|balanced|lenient|disabled. latitude/longitude, "
    "city, state, postal_code travel as X-Loc headers and turn on local recall (places). Output never exceeds "
    "max_chars; CONTEXT_TRUNCATED says what was cut. Needs the Search plan.",
)
LOCAL_SEARCH: Final = ToolText(
    "brave_local_search",
    "Brave local search",
    "Places (address, phone, rating, hours, open now, price, coordinates, description). Give location or "
    "latitude/longitude for place search; a query alone uses web locations.",
    "With location text or coordinates (radius in metres) the tool calls Brave place search; with a query alone, "
    "web search's locations enriched by /local/pois and /local/descriptions (≤20 ids per request). meta.path says "
    "which: place_search, web_locations or web_fallback. Without local in the plan, or with no place found, plain "
    "web results come back with LOCAL_FALLBACK.",
)
ANSWER: Final = ToolText(
    "brave_answer",
    "Brave answer",
    "AI answer from Brave Answers with numbered sources and usage. research: true searches at length (minutes). "
    "Needs Brave's Answers plan.",
    "Streams /chat/completions (model brave) with citations; the answer carries [n] markers and a numbered source "
    "list. A stream cut mid-way or ended by the deadline returns what arrived (STREAM_INTERRUPTED, "
    "DEADLINE_REACHED). research: true has its own deadline (research_maximum_number_of_seconds + 30 s, default "
    "210 s) and no citations. Progress notifications go to clients that pass a progressToken.",
)
ALL: Final = (LLM_CONTEXT, LOCAL_SEARCH, ANSWER)

SUMMARIZER_HELP_NOTE: Final = (
    "Brave deprecated the summarizer (legacy Pro AI plan); for new keys use brave_answer (Answers plan)."
)
SUMMARIZER_PLAN_HINT: Final = (
    "This key has no summarizer plan: use brave_answer (Brave Answers plan) for cited AI answers instead."
)
