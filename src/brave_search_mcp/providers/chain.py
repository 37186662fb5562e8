"""The fallback chain: try providers in order, skip paused ones, and say so when the answer came from a backup.

A provider failure that its own retries did not fix (5xx, timeout, connection, 429, quota, auth, plan,
misconfiguration, unreadable answer) moves the call to the next provider and leaves a FALLBACK
warning naming who failed and why. Problems with the *request* (bad input, upstream validation) and
an honest "nothing found" propagate at once: another provider would not fix them, and they say
nothing bad about the provider's health, so they never count against its circuit breaker.

A provider that cannot work *as configured* (no key, a rejected key, not in the plan, SearXNG without
JSON output) falls back too, but never trips its breaker: waiting would not fix it, and an open breaker
would hide the cause behind a retryable "paused" error; the breaker notes it for the status tool instead.
Rate limiting (a 429 its retries and pacing could not absorb, or our own queue saying "not now") falls back
without counting either: the provider answered, it asked for a slower pace. Every error the chain raises
names its provider (``error.provider``), so the envelope says who failed.

Each provider has a breaker for itself (down, hung, answering 5xx) and one per search type, for failures of
one type only (``SearchTypeFailure``: a metasearch instance whose web engines are blocked while its news and
image engines answer); a call needs both to let it through. With a shared record store every process sees
the same breakers, and a failure is published as soon as it is counted, before the next provider is tried.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, get_args

import anyio

from brave_search_mcp.clock import Clock
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import (
    AuthFailed,
    BraveSearchError,
    CircuitOpen,
    ErrorCode,
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
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.providers.breaker import CircuitBreaker
from brave_search_mcp.providers.protocol import Provider, ProviderPage, SearchRequest, SearchTypeFailure
from brave_search_mcp.render.text import seconds_text
from brave_search_mcp.state.base import RecordStore

logger = logging.getLogger(__name__)

__all__ = ["CONFIG_ERRORS", "FALLBACK_ERRORS", "NO_FALLBACK_ERRORS", "SEARCH_TYPES", "FallbackChain", "story"]

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
SEARCH_TYPES: tuple[SearchType, ...] = get_args(SearchType)
_REASON_LIMIT = 160
# A call refused while the half-open trial is in flight: the trial's answer, not a clock, reopens the provider.
TRIAL_RETRY_SECONDS = 1.0
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
    retry_in: float = 0.0  # skipped: seconds until its breaker lets a trial through
    story: str = ""  # skipped: what the failures that paused it were ("timed out 3 times in a row")
    then: str = ""  # skipped: when to retry ("the next try goes through in 52 s: retry then")

    def warning(self) -> WarningItem:
        return WarningItem(code=WarningCode.FALLBACK, message=f"{self.provider} {self.code}: {self.reason}")

    def detail(self) -> dict[str, Any]:
        return {"provider": self.provider, "code": self.code, "reason": self.reason}


class FallbackChain:
    """Providers in preference order, each behind its own circuit breaker and one per search type it serves."""

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

        def breaker(name: str) -> CircuitBreaker:
            return CircuitBreaker(name, threshold=threshold, cooldown=cooldown, clock=clock, wall_clock=wall_clock)

        self.breakers = {p.name: breaker(p.name) for p in providers}
        self.type_breakers = {
            (p.name, kind): breaker(f"{p.name} {kind}") for p in providers for kind in SEARCH_TYPES if p.supports(kind)
        }

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Per provider name, its breaker state as this process last saw it (with the search types that have
        anything to report)."""
        found: dict[str, dict[str, Any]] = {}
        for name, breaker in self.breakers.items():
            found[name] = breaker.snapshot()
            busy = {
                kind: typed.snapshot()
                for (owner, kind), typed in self.type_breakers.items()
                if owner == name and not typed.pristine
            }
            if busy:
                found[name]["search_types"] = busy
        return found

    def result_sections(self) -> frozenset[str]:
        """Every other provider's result_filter sections, so Brave's rules do not refuse one (SearXNG's answers)
        that a provider after or before Brave may answer with."""
        found: set[str] = set()
        for provider in self.providers:
            found.update(getattr(provider, "result_sections", ()))
        return frozenset(found)

    def superseded(self, name: str | None) -> frozenset[str]:
        """Codes of Brave's request warnings that do not hold when ``name`` answered or failed (its own rules)."""
        for provider in self.providers:
            if provider.name == name:
                return frozenset(getattr(provider, "superseded", frozenset()))
        return frozenset()

    async def status(self) -> dict[str, dict[str, Any]]:
        """Per provider name, its breaker state for the status tool: what the shared store says, when there is one
        (a new process must not report closed while another one's failures keep the provider paused), and what
        the provider tells of itself (its cache, counters, pace)."""
        if self._records is not None:
            await self._adopt_shared()
        found = self.snapshot()
        for provider in self.providers:
            report = getattr(provider, "status", None)
            if report is not None:
                found[provider.name].update(await report())
        return found

    async def probe(self, *, deadline: float | None = None) -> list[dict[str, Any]]:
        """One cheap reachability check per provider that offers one (Brave's endpoints are probed elsewhere). A
        probe that answers OK shows the setting a failed call named was fixed: the breaker forgets it (failure
        counts stay: only calls count them) and every process is told, so status agrees with its probes."""
        if self._records is not None:
            await self._adopt_shared()
        probed = [p for p in self.providers if getattr(p, "probe", None) is not None]
        found: list[dict[str, Any]] = [{} for _ in probed]

        async def one(index: int, provider: Provider) -> None:  # every provider at once, each within its own bound
            found[index] = await provider.probe(deadline=deadline)  # type: ignore[attr-defined]

        async with anyio.create_task_group() as group:
            for index, provider in enumerate(probed):
                group.start_soon(one, index, provider)
        for provider, entry in zip(probed, found, strict=True):
            breaker = self.breakers[provider.name]
            if entry.get("ok") and breaker.misconfigured is not None:
                breaker.record_configured()
                await self._publish(provider.name)
        return found

    async def search(self, request: SearchRequest, *, deadline: float | None = None) -> ProviderPage:
        """The first provider that answers; FALLBACK warnings name every provider that failed or was skipped.

        With a shared record store, every process of the user (or every replica) sees the same breakers:
        states are adopted before the call and published after it (and as soon as a failure is counted).
        """
        if self._records is None:
            return await self._search(request, deadline)
        await self._adopt_shared()
        try:
            return await self._search(request, deadline)
        finally:
            with anyio.CancelScope(shield=True):
                await self._publish()

    def _key(self, name: str) -> str:
        return f"{self._namespace}breaker:{name}"

    async def _adopt_shared(self) -> None:
        """Every breaker as the store holds it; a record that fails validation is dropped and written anew from
        this process's own breakers (never adopted, never raised on every call)."""
        records = self._records
        assert records is not None
        for name, breaker in self.breakers.items():
            try:
                record = await records.get(self._key(name))
                if record is None:
                    continue
                try:
                    self._adopt(name, breaker, record)
                except ValueError as refused:
                    await records.drop(self._key(name), f"{name} breaker: {refused}")
                    await self._publish(name)
            except Exception:  # the store falls back by itself; a breaker must never fail a call
                logger.warning("breaker state of %s could not be read", name, exc_info=True)

    def _adopt(self, name: str, breaker: CircuitBreaker, record: dict[str, Any]) -> None:
        """Take over a provider's shared record and its search types' (ValueError: one of them is not ours)."""
        kinds = record.get("search_types", {})
        if not isinstance(kinds, dict):
            raise ValueError("search_types is not a mapping")
        breaker.adopt(record)
        for (owner, kind), typed in self.type_breakers.items():
            if owner == name and isinstance(kinds.get(kind), dict):
                typed.adopt(kinds[kind])

    async def _publish(self, *names: str) -> None:
        """Share the breakers of ``names`` (every provider when none is named)."""
        if self._records is None:
            return
        for name in names or tuple(self.breakers):
            record = self.breakers[name].export()
            record["search_types"] = {
                kind: typed.export() for (owner, kind), typed in self.type_breakers.items() if owner == name
            }
            try:
                await self._records.put(self._key(name), record, ttl=BREAKER_RECORD_SECONDS)
            except Exception:
                logger.debug("breaker state of %s could not be shared", name, exc_info=True)

    def _skipped(self, provider: str, breaker: CircuitBreaker, what: str = "") -> _Miss:
        wait = breaker.retry_in()
        last = f" (last: {breaker.last_error})" if breaker.last_error else ""
        if wait > 0:
            when = f"next try in {seconds_text(wait)}"
            then = f"the next try goes through in {seconds_text(wait)}: retry then"
        else:  # half-open: its one trial call is in flight, and only its answer reopens the provider
            wait, when = TRIAL_RETRY_SECONDS, "a trial call is under way"
            then = "a trial call is under way now: retry in a moment"
        reason = f"{what}paused: {story(breaker)}; {when}{last}"
        said = f"{provider} {what}{story(breaker)}"
        return _Miss(provider, ErrorCode.CIRCUIT_OPEN.value, reason, retry_in=wait, story=said, then=then)

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
            typed = self.type_breakers[(provider.name, request.search_type)]
            if not typed.allow():
                misses.append(self._skipped(provider.name, typed, f"{request.search_type} search "))
                continue
            if not breaker.allow():
                typed.release()
                misses.append(self._skipped(provider.name, breaker))
                continue
            try:
                page = await provider.search(request, deadline=deadline)
            except NO_FALLBACK_ERRORS as exc:
                if isinstance(exc, InvalidArgument):
                    breaker.release()
                    typed.release()
                else:  # the provider answered sensibly: it is healthy
                    breaker.record_success()
                    typed.record_success()
                exc.provider = exc.provider or provider.name
                exc.warnings.extend(m.warning() for m in misses)
                raise
            except FALLBACK_ERRORS as exc:
                exc.provider = exc.provider or provider.name
                reason = f"{exc.code}: {_short(exc.message)}"
                if isinstance(exc, SearchTypeFailure):  # it answered, but this type's sources failed
                    breaker.record_success()
                    typed.record_failure(reason)
                elif isinstance(exc, SETTING_ERRORS):  # a setting is wrong: not unhealthy, but worth naming
                    breaker.record_misconfigured(reason)
                    typed.release()
                elif isinstance(exc, (*CONFIG_ERRORS, RateLimited)) or exc.details.get("client_side"):
                    # not in the plan (status names it per tool), or "slower", not "ill"
                    breaker.release()
                    typed.release()
                else:
                    breaker.record_failure(reason)
                    typed.release()
                misses.append(_Miss(provider.name, exc.code, _short(exc.message), exc))
                with anyio.CancelScope(shield=True):
                    await self._publish(provider.name)  # other processes skip it from now, not after the fallback
                continue
            except BaseException:
                breaker.release()  # cancelled or a bug: says nothing about the provider
                typed.release()
                raise
            breaker.record_success()
            typed.record_success()
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
        retry_in = min(m.retry_in for m in misses)
        causes = "; ".join(f"{m.provider} {m.reason}" for m in misses)  # each with its breaker's last error
        soonest = min(misses, key=lambda m: m.retry_in)
        error = CircuitOpen(
            f"Nothing was sent: every search provider for {request.search_type} search is paused after repeated "
            f"failures ({causes}).",
            details={
                "providers": listing,
                "retry_after_ms": max(1, math.ceil(retry_in * 1000)),
                "retry_after_seconds": round(retry_in, 3),
                "what_to_do": f"{soonest.story}, so it is paused; {soonest.then} (retry_after_ms).",
            },
        )
        error.provider = misses[0].provider
        return error


# What a failure's code says happened, for a reader of "paused: it timed out 3 times in a row".
_HAPPENED: dict[str, tuple[str, str]] = {  # code -> (once, several times)
    ErrorCode.TIMEOUT.value: ("timed out", "timed out"),
    ErrorCode.NETWORK_ERROR.value: ("could not be reached", "could not be reached"),
    ErrorCode.UPSTREAM_ERROR.value: ("answered with an error", "answered with errors"),
    ErrorCode.PARSE_ERROR.value: ("answered unreadably", "answered unreadably"),
    ErrorCode.RESPONSE_TOO_LARGE.value: ("answered more than the size cap", "answered more than the size cap"),
}


def story(breaker: CircuitBreaker) -> str:
    """The failures that opened ``breaker`` in words ("timed out 3 times in a row", "failed 5 times in a row; the
    last 2 times it timed out"): "paused" alone does not tell an agent whether waiting will help."""
    code = (breaker.last_error or "").partition(":")[0]
    said = f"failed ({code})" if code else "failed"
    once, often = _HAPPENED.get(code, (said, said))
    failures, repeats = breaker.failures, breaker.repeats
    if failures <= 1:
        return once
    if repeats >= failures:
        return f"{often} {failures} times in a row"
    if repeats <= 1:
        return f"failed {failures} times in a row; the last time it {once}"
    return f"failed {failures} times in a row; the last {repeats} times it {often}"
