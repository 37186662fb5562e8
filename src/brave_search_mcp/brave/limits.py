"""Brave's rate-limit families: which plan meters which endpoint, and the admissions the client sends through.

Brave sells plans per product (reference/brave-api.md §1, §7 and the 2026 addenda): the Search plan (50/s)
meters every GET endpoint of the Search API (web, news, videos, images, summarizer, LLM context, local and
place search), and those answers carry ``X-RateLimit-*`` headers, so that family's plan is learned from
them. The Answers plan (``/chat/completions``) is sold at 2/s and its answers carry no rate headers, so its
plan is that published rate, never a guess; an answer that does state a plan (a stream's headers, a refusal's) is
learned from like any other. A key's requests share one per-second window (an Answers key
asked for web search reports the Answers plan's 2/s), so an answer must also fit the key's search window:
the search family is the *primary* one, whose window counts every request of the key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.clock import Clock
from brave_search_mcp.config import Settings
from brave_search_mcp.ratelimit.admission import Admission, Budget, utc_month
from brave_search_mcp.state.base import StateBackend

SEARCH = "search"
ANSWERS = "answers"
ANSWERS_RATE, ANSWERS_BURST = 2.0, 2  # Brave's published Answers plan: 2 requests per second


def family_of(endpoint: Endpoint) -> str:
    """The plan family that meters ``endpoint``."""
    return ANSWERS if endpoint is Endpoint.CHAT else SEARCH


@dataclass(frozen=True)
class BraveLimits:
    """The admissions of one key: its search family, its answers family, and the key's monthly budget."""

    search: Admission
    answers: Admission
    state: StateBackend

    def of(self, endpoint: Endpoint) -> Admission:
        """The admission ``endpoint``'s requests pass."""
        return self.answers if family_of(endpoint) == ANSWERS else self.search

    async def snapshot(self) -> dict[str, Any]:
        """Both families' figures (the search family's at the top level, as the status tool has always shown)."""
        answers = await self.answers.snapshot()
        answers.pop("month", None)  # one budget for the key: shown once
        return {**await self.search.snapshot(), ANSWERS: answers}


def brave_limits(
    state: StateBackend, settings: Settings, *, upstream: str, clock: Clock, month: Callable[[], str] = utc_month
) -> BraveLimits:
    """The admissions of the key ``upstream`` names, over ``state``'s numbers (shared or this process's)."""
    pinned = None if settings.rate_limit is None else (settings.rate_limit, settings.burst or 1)
    search = state.limiter(upstream, rate=None, family=SEARCH, primary=SEARCH, pinned=pinned, label="Brave")
    answers = state.limiter(
        upstream, rate=ANSWERS_RATE, burst=ANSWERS_BURST, family=ANSWERS, primary=SEARCH, label="Brave Answers"
    )
    budget = Budget(search, settings.monthly_requests, month=month)
    trial = settings.quota_retry_seconds
    return BraveLimits(
        search=Admission(
            search, clock=clock, adaptive=settings.adaptive_rate, burst_cap=settings.burst, budget=budget,
            quota_trial_seconds=trial,
        ),
        answers=Admission(answers, clock=clock, adaptive=True, budget=budget, quota_trial_seconds=trial),
        state=state,
    )  # fmt: skip
