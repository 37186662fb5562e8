"""The fallback chain: try providers in order, skip paused ones, and say so when the answer came from a backup.

A provider failure that its own retries did not fix (5xx, timeout, connection, 429, quota, auth, plan,
misconfiguration, unreadable answer) moves the call to the next provider and leaves a FALLBACK
warning naming who failed and why. Problems with the *request* (bad input, upstream validation) and
an honest "nothing found" propagate at once: another provider would not fix them, and they say
nothing bad about the provider's health, so they never count against its circuit breaker.

A provider that cannot work *as configured* (no key, a rejected key, not in the plan, SearXNG without
JSON output) falls back too, but never trips its breaker: waiting would not fix it, and an open breaker
would hide the cause behind a retryable "paused" error. Every error the chain raises names its provider
(``error.provider``), so the envelope says who failed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from brave_search_mcp.clock import Clock
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import (
    AuthFailed,
    BraveSearchError,
    InvalidArgument,
    MissingApiKey,
    NetworkError,
    NoResults,
    NotInPlan,
    ParseError,
    ProviderMisconfigured,
    QuotaExceeded,
    RateLimited,
    ResponseTooLarge,
    UpstreamError,
    UpstreamTimeout,
    UpstreamValidation,
    WarningCode,
)
from brave_search_mcp.providers.breaker import CircuitBreaker
from brave_search_mcp.providers.protocol import Provider, ProviderPage, SearchRequest
from brave_search_mcp.state.base import RecordStore

logger = logging.getLogger(__name__)

__all__ = ["CONFIG_ERRORS", "FALLBACK_ERRORS", "NO_FALLBACK_ERRORS", "FallbackChain"]

# Failures of the provider, not of the request: the next provider may well succeed.
FALLBACK_ERRORS: tuple[type[BraveSearchError], ...] = (
    AuthFailed,
    NotInPlan,
    QuotaExceeded,
    RateLimited,
    UpstreamError,
    UpstreamTimeout,
    NetworkError,
    ProviderMisconfigured,
    ParseError,
    ResponseTooLarge,
    MissingApiKey,
)
# Failures of the request, or a true empty answer: no fallback, no breaker count.
NO_FALLBACK_ERRORS: tuple[type[BraveSearchError], ...] = (InvalidArgument, UpstreamValidation, NoResults)
# Failures of the provider's configuration: fall back, but no breaker count (only a fix of the setting helps).
CONFIG_ERRORS: tuple[type[BraveSearchError], ...] = (ProviderMisconfigured, MissingApiKey, AuthFailed, NotInPlan)
# Of those, the ones the status tool names until the provider answers again (a plan's limits are shown per tool).
SETTING_ERRORS: tuple[type[BraveSearchError], ...] = (ProviderMisconfigured, MissingApiKey, AuthFailed)
_REASON_LIMIT = 160
BREAKER_RECORD_SECONDS = 86_400.0  # a breaker record nobody wrote for a day is forgotten


def _short(message: str) -> str:
    return message if len(message) <= _REASON_LIMIT else message[: _REASON_LIMIT - 1].rstrip() + "…"


@dataclass(frozen=True)
class _Miss:
    """Why one provider did not answer this call (failed, or skipped by its open breaker)."""

    provider: str
    code: str
    reason: str
    error: BraveSearchError | None = None

    def warning(self) -> WarningItem:
        return WarningItem(code=WarningCode.FALLBACK, message=f"{self.provider} {self.code}: {self.reason}")

    def detail(self) -> dict[str, Any]:
        return {"provider": self.provider, "code": self.code, "reason": self.reason}


class FallbackChain:
    """Providers in preference order, each behind its own circuit breaker."""

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        threshold: int = 3,
        cooldown: float = 60.0,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
        records: RecordStore | None = None,
        namespace: str = "",
    ) -> None:
        self._records = records
        self._namespace = namespace
        names = [p.name for p in providers]
        if not providers or len(set(names)) != len(names):
            raise ValueError(f"need at least one provider and unique names, got {names}")
        self.providers = tuple(providers)
        self._clock = clock
        self._setting_errors: dict[str, str] = {}  # provider -> its last call's setting error, until it answers
        self.breakers = {
            p.name: CircuitBreaker(p.name, threshold=threshold, cooldown=cooldown, clock=clock, wall_clock=wall_clock)
            for p in providers
        }

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Per provider name, its breaker state as this process last saw it, and the setting its last call failed
        on, if it did."""
        found = {name: breaker.snapshot() for name, breaker in self.breakers.items()}
        for name, error in self._setting_errors.items():
            found[name]["config_error"] = error
        return found

    async def status(self) -> dict[str, dict[str, Any]]:
        """Per provider name, its breaker state for the status tool: what the shared store says, when there is one
        (a new process must not report closed while another one's failures keep the provider paused)."""
        if self._records is not None:
            await self._adopt_shared()
        found = self.snapshot()
        for provider in self.providers:
            stats = getattr(provider, "cache_stats", None)
            if stats is not None and provider.name in found:
                found[provider.name]["cache"] = await stats()
        return found

    async def probe(self, *, deadline: float | None = None) -> list[dict[str, Any]]:
        """One cheap reachability check per provider that offers one (Brave's endpoints are probed elsewhere)."""
        found: list[dict[str, Any]] = []
        for provider in self.providers:
            check = getattr(provider, "probe", None)
            if check is not None:
                found.append(await check(deadline=deadline))
        return found

    async def search(self, request: SearchRequest, *, deadline: float | None = None) -> ProviderPage:
        """The first provider that answers; FALLBACK warnings name every provider that failed or was skipped.

        With a shared record store, every process of the user (or every replica) sees the same breakers:
        states are adopted before the call and published after it.
        """
        if self._records is None:
            return await self._search(request, deadline)
        await self._adopt_shared()
        try:
            return await self._search(request, deadline)
        finally:
            with anyio.CancelScope(shield=True):
                await self._publish()

    async def _adopt_shared(self) -> None:
        """Every breaker as the store holds it; a record that fails validation is dropped and written anew from
        this process's own breaker (never adopted, never raised on every call)."""
        records = self._records
        assert records is not None
        for name, breaker in self.breakers.items():
            key = f"{self._namespace}breaker:{name}"
            try:
                record = await records.get(key)
                if record is not None:
                    try:
                        breaker.adopt(record)
                    except ValueError as refused:
                        await records.drop(key, f"{name} breaker: {refused}")
                        await records.put(key, breaker.export(), ttl=BREAKER_RECORD_SECONDS)
            except Exception:  # the store falls back by itself; a breaker must never fail a call
                logger.warning("breaker state of %s could not be read", name, exc_info=True)

    async def _publish(self) -> None:
        assert self._records is not None
        for name, breaker in self.breakers.items():
            try:
                await self._records.put(
                    f"{self._namespace}breaker:{name}", breaker.export(), ttl=BREAKER_RECORD_SECONDS
                )
            except Exception:
                logger.debug("breaker state of %s could not be shared", name, exc_info=True)

    async def _search(self, request: SearchRequest, deadline: float | None) -> ProviderPage:
        misses: list[_Miss] = []
        supported = [p for p in self.providers if p.supports(request.search_type)]
        if not supported:
            raise InvalidArgument(
                f"No configured search provider serves {request.search_type} search.", field="search_type"
            )
        for provider in supported:
            if deadline is not None and misses and self._clock() >= deadline:
                break  # the call's time is up: report what failed instead of starting another provider
            breaker = self.breakers[provider.name]
            if not breaker.allow():
                wait = breaker.retry_in()
                last = f" (last: {breaker.last_error})" if breaker.last_error else ""
                reason = f"paused after {breaker.failures} failed calls{last}; retried in {wait:.0f} s"
                misses.append(_Miss(provider.name, "CIRCUIT_OPEN", reason))
                continue
            try:
                page = await provider.search(request, deadline=deadline)
            except NO_FALLBACK_ERRORS as exc:
                if isinstance(exc, InvalidArgument):
                    breaker.release()
                else:
                    breaker.record_success()  # the provider answered sensibly: it is healthy
                    self._setting_errors.pop(provider.name, None)
                exc.provider = exc.provider or provider.name
                exc.warnings.extend(m.warning() for m in misses)
                raise
            except FALLBACK_ERRORS as exc:
                exc.provider = exc.provider or provider.name
                if isinstance(exc, SETTING_ERRORS):
                    self._setting_errors[provider.name] = f"{exc.code}: {_short(exc.message)}"
                if exc.details.get("client_side") or isinstance(exc, CONFIG_ERRORS):
                    breaker.release()  # our own throttle said "not now", or a setting is wrong: not unhealthy
                else:
                    breaker.record_failure(f"{exc.code}: {_short(exc.message)}")
                misses.append(_Miss(provider.name, exc.code, _short(exc.message), exc))
                continue
            except BaseException:
                breaker.release()  # cancelled or a bug: says nothing about the provider
                raise
            breaker.record_success()
            self._setting_errors.pop(provider.name, None)
            page.warnings[:0] = [m.warning() for m in misses]
            return page
        raise self._all_failed(request, misses)

    def _all_failed(self, request: SearchRequest, misses: list[_Miss]) -> BraveSearchError:
        """One error for the agent: the first real failure, its details listing every provider's outcome."""
        listing = [m.detail() for m in misses]
        failed = [m for m in misses if m.error is not None]
        if failed:
            first = failed[0].error
            assert first is not None
            error = first.for_call([], providers=listing)
            error.provider = failed[0].provider
            others = [f"{m.provider} {m.code}" for m in misses if m is not failed[0]]
            if others:
                error.message = f"{first.message} Other providers: {'; '.join(others)}."
                error.args = (error.message,)
            return error
        retry_in = min(self.breakers[m.provider].retry_in() for m in misses)
        causes = "; ".join(f"{m.provider} {m.reason}" for m in misses)  # each with its breaker's last error
        error = UpstreamError(
            f"Every search provider for {request.search_type} search is paused after repeated failures ({causes}); "
            f"retry in {retry_in:.0f} s.",
            status=503,
            retryable=True,
            retry_after=round(retry_in, 3),
            details={"providers": listing},
        )
        error.provider = misses[0].provider
        return error
