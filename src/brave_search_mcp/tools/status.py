"""The status report: is the server configured, how close to the plan's limits, does Brave answer.

The key itself never appears here — not even a prefix — only where it came from.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

import anyio

from brave_search_mcp._version import __version__
from brave_search_mcp.brave.counters import EndpointCounters
from brave_search_mcp.brave.facts import ENDPOINT_NAMES, SEARCH_ENDPOINTS
from brave_search_mcp.config_sources import missing_key_advice
from brave_search_mcp.models.envelopes import API_VERSION
from brave_search_mcp.models.errors import BraveSearchError, ErrorCode
from brave_search_mcp.models.inputs import StatusArgs
from brave_search_mcp.ratelimit.info import rate_limit_meta
from brave_search_mcp.tools.help import limits as parameter_limits
from brave_search_mcp.tools.help import search_type_rules, searxng_only
from brave_search_mcp.tools.status_text import render_status_text
from brave_search_mcp.usecases.contract import Call, CliShape, Ports, Progress, ToolSpec

PROBE_QUERY = "brave search api"
# Time kept back from the call deadline so the report itself always gets out.
_REPORT_MARGIN = 1.0


async def probe_endpoints(
    ports: Ports, deadline: float | None = None, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """One count=1 request per search endpoint, sequentially, through the throttle and uncached.

    Each probe gets an equal share of the time left before ``deadline``, so one endpoint that hangs
    is reported as TIMEOUT instead of costing the whole report.
    """
    settings = ports.settings
    clock = ports.clock
    margin = min(_REPORT_MARGIN, settings.call_deadline_seconds / 10)
    end = (deadline if deadline is not None else clock() + settings.call_deadline_seconds) - margin
    results: list[dict[str, Any]] = []
    endpoints = list(SEARCH_ENDPOINTS.items())
    for index, (search_type, endpoint) in enumerate(endpoints):
        budget = max(0.0, (end - clock()) / (len(endpoints) - index))
        started = time.perf_counter()
        entry: dict[str, Any] = {"search_type": search_type, "endpoint": endpoint.value}
        with anyio.move_on_after(budget) as scope:
            try:
                params = [("q", PROBE_QUERY), ("count", "1")]
                response = await ports.client.get(endpoint, params, use_cache=False, deadline=clock() + budget)
            except BraveSearchError as exc:
                entry.update(ok=False, code=exc.code.value, message=exc.message, retryable=exc.retryable)
            else:
                entry.update(ok=True, http_status=response.status, attempts=response.attempts)
        if scope.cancelled_caught:
            message = f"No answer within the probe's {budget:.1f} s budget."
            entry.update(ok=False, code=ErrorCode.TIMEOUT.value, message=message, retryable=True)
        entry["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)
        results.append(entry)
        if progress is not None:
            await progress(index + 1, len(endpoints), f"probed {search_type}")
    return results


async def probe_providers(
    ports: Ports, deadline: float | None, progress: Progress | None, *, brave: bool
) -> list[dict[str, Any]]:
    """Brave's endpoints (when ``brave``) and every other provider's probe (SearXNG's costs no engine query) at
    once, each within its own bound: a hung instance costs the report its own timeout, not that plus Brave's."""
    found: dict[str, list[dict[str, Any]]] = {"brave": [], "others": []}
    failures: list[Exception] = []

    async def run(key: str, probe: Callable[[], Awaitable[list[dict[str, Any]]]]) -> None:
        try:
            found[key] = await probe()
        except Exception as exc:  # re-raised as itself below, not as a task group's exception group
            failures.append(exc)

    async with anyio.create_task_group() as group:
        if brave:
            group.start_soon(run, "brave", lambda: probe_endpoints(ports, deadline, progress))
        if ports.chain is not None:
            group.start_soon(run, "others", partial(ports.chain.probe, deadline=deadline))
    if failures:
        raise failures[0]
    return found["brave"] + found["others"]


def plan_seen(counters: dict[str, EndpointCounters], tools: Sequence[ToolSpec[Any, Any]]) -> dict[str, str]:
    """Per Brave tool, what the key's plan was seen to allow on its last answers: allowed, not_in_plan or
    unknown (nothing asked yet, or only failures that say nothing about the plan). Never a guess."""
    seen: dict[str, str] = {}
    for spec in tools:
        tool = spec.name
        endpoints = [ENDPOINT_NAMES[endpoint] for endpoint in spec.endpoints]
        if not endpoints:
            continue
        lasts = {counters[name].last for name in endpoints if name in counters}
        if "ok" in lasts:
            seen[tool] = "allowed"
        elif "NOT_IN_PLAN" in lasts:
            seen[tool] = "not_in_plan"
        elif "AUTH_FAILED" in lasts:
            seen[tool] = "key_rejected"
        else:
            seen[tool] = "unknown"
    return seen


async def build_status(
    ports: Ports,
    args: StatusArgs,
    trace_id: str,
    deadline: float | None = None,
    *,
    tools: Sequence[ToolSpec[Any, Any]] = (),
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The structured status report (see the brave_web_search_status contract).

    The probes run first, so everything after them reports what they saw: the limits Brave's headers stated,
    the rate learned from them; a pause their own requests caused (a spent second) does not make it "paused".
    """
    settings = ports.settings
    client = ports.client
    uses_brave = "brave" in settings.providers  # SearXNG alone: none of Brave's settings, limits or counters
    probes: list[dict[str, Any]] | None = None
    before: dict[str, Any] | None = None
    probed_at = ports.clock()
    if args.probe_connectivity:
        before = await client.admission()
        probes = await probe_providers(ports, deadline, progress, brave=settings.has_key and uses_brave)
    last = client.last_rate_limit
    reasons: list[str] = []
    report: dict[str, Any] = {
        "api_version": API_VERSION,
        "status": "ok",
        "server_version": __version__,
        "uptime_seconds": round(ports.clock() - ports.started_at, 1),
        "key": {"configured": settings.has_key, "source": settings.api_key_source, "file": settings.api_key_file},
        "settings": _settings(ports, [spec.name for spec in tools]),
        "meta": {"trace_id": trace_id, "provider": settings.providers[0]},
    }
    if uses_brave:
        report["rate_limit"] = None
        report["cache"] = dataclasses.asdict(client.cache_stats())
    if last is not None and uses_brave:
        figures = rate_limit_meta(last)
        assert figures is not None
        report["rate_limit"] = {
            **figures.model_dump(mode="json"),
            "seen_seconds_ago": round(client.clock() - last.observed_at, 1),
        }
    if not settings.has_key:
        report["status"] = "unconfigured"
        if uses_brave:
            reasons.append(f"no API key: {missing_key_advice(settings.key_file_default)}")
        else:
            report["status"] = "ok"  # SearXNG alone needs no Brave key
    if probes is not None:
        report["probe"] = probes
        failed = [p.get("search_type") or p["provider"] for p in probes if not p["ok"]]
        if failed:
            reasons.append(f"probe failed for {', '.join(failed)}")
    throttle = await client.admission() if uses_brave else {}
    if uses_brave:
        report["throttle"] = throttle
        report["plan"] = plan_seen(client.counters(), tools)
    brave_alone = {"brave": {"state": "closed", "fallback": False}}
    report["providers"] = await ports.chain.status() if ports.chain else brave_alone
    others = {name: state.pop("counters", {}) for name, state in report["providers"].items()}
    report["state"] = client.limits.state.health()
    if any(spec.name == "read_url" for spec in tools):
        report["rendering"] = ports.rendering()  # read_url's browser for app shells
    reasons += troubles(report, client.counters() if uses_brave else {})
    paused = [
        f"{name} {kind} search" if kind else name
        for name, state in report["providers"].items()
        for kind, breaker in [("", state), *state.get("search_types", {}).items()]
        if breaker.get("state") == "open"
    ]
    if paused:
        reasons.append(f"provider paused by its circuit breaker: {', '.join(paused)}")
    held = throttle if before is None else without_new_pauses(throttle, before, ports.clock() - probed_at)
    holds = pauses(held) if uses_brave else []  # Brave's holds stop no SearXNG search
    if holds and report["status"] != "unconfigured":  # fresh queries fail fast or wait until then; cache serves
        reasons[:0] = holds
        report["status"] = "paused"
    rate_now, plan_rate = throttle.get("rate_in_force_per_second"), throttle.get("plan_per_second")
    shown = report["settings"].get("rate_limit_per_second")
    if rate_now is not None and not settings.rate_limit and (shown is None or (plan_rate and rate_now < plan_rate)):
        # the shared state's plan, which this process has not used yet (a fresh CLI), or a slowed rate
        report["settings"] |= {"rate_limit_per_second": rate_now, "burst": throttle.get("at_once")}
    if reasons and report["status"] == "ok":
        report["status"] = "degraded"
    report["reasons"] = reasons
    if args.verbose:
        counted = client.counters().items() if uses_brave else ()
        report["counters"] = {name: _counted(c) for name, c in counted}
        for name, kinds in others.items():  # another provider's, per search type: "searxng web"
            report["counters"].update({f"{name} {kind}": _counted(c) for kind, c in kinds.items()})
    if args.include_limits:
        rules = search_type_rules(searxng=searxng_only(settings))
        report["limits"] = {"search_types": rules, **parameter_limits(settings)}
    return report


def _settings(ports: Ports, enabled_tools: list[str]) -> dict[str, Any]:
    """The settings in force: Brave's only when Brave is one of the providers, SearXNG's only when it is."""
    settings = ports.settings
    found: dict[str, Any] = {}
    if "brave" in settings.providers:
        rate, burst = ports.client.throttle_rate
        found |= {
            "base_url": settings.base_url,
            "rate_limit_per_second": rate,
            "burst": burst,
            "rate_adaptive": settings.adaptive_rate,
            "monthly_requests": settings.monthly_requests,
            "quota_retry_seconds": settings.quota_retry_seconds,
            "retries": settings.retries,
            "retry_base_ms": settings.retry_base_ms,
            "retry_max_ms": settings.retry_max_ms,
            "timeout_seconds": settings.timeout_seconds,
        }
    if "searxng" in settings.providers:  # its URL (without credentials) is in its provider entry
        found["searxng_timeout_seconds"] = settings.searxng_timeout_seconds
    found |= {
        "call_deadline_seconds": settings.call_deadline_seconds,
        "cache_ttl_seconds": settings.cache_ttl_seconds,
        "cache_size": settings.cache_size,
        "max_response_bytes": settings.max_response_bytes,
        "max_lines": settings.max_lines,
        "max_bytes": settings.max_bytes,
    }
    if "brave" in settings.providers:
        found["summarizer_deadline_seconds"] = settings.summarizer_deadline_seconds
    return found | {"enabled_tools": enabled_tools, "providers": list(settings.providers)}


def _counted(c: EndpointCounters) -> dict[str, Any]:
    return {"requests": c.requests, "errors": c.errors, "cache_hits": c.cache_hits, "by_code": dict(c.by_code)}


def without_new_pauses(throttle: dict[str, Any], before: dict[str, Any], elapsed: float) -> dict[str, Any]:
    """The figures without the pauses that began in the last ``elapsed`` seconds, since ``before`` was taken: what
    the probes' own requests caused (a spent per-second window, a 429 they drew) holds back the next request a
    moment but pauses nothing for the user. A pause older than that, still running, stays."""
    kept = _unpaused(throttle, before, elapsed)
    if isinstance(throttle.get("answers"), dict):
        kept["answers"] = _unpaused(throttle["answers"], before.get("answers") or {}, elapsed)
    return kept


def _unpaused(figures: dict[str, Any], before: dict[str, Any], elapsed: float) -> dict[str, Any]:
    if "paused_for_seconds" in figures and before.get("paused_for_seconds", 0.0) <= elapsed:
        return {key: value for key, value in figures.items() if key not in ("paused_for_seconds", "paused_until")}
    return dict(figures)


def troubles(report: dict[str, Any], counters: dict[str, EndpointCounters]) -> list[str]:
    """Why the server is not ``ok`` although calls answer: the shared state degraded or a stored value dropped, the
    rate limiting failing, the last calls failing on a setting (a rejected key, a misconfigured provider)."""
    found: list[str] = []
    state = report["state"]
    if state.get("degraded"):
        found.append(f"shared state unavailable, using per-process state: {state.get('warning', '')}")
    dropped = state.get("dropped")
    if dropped:
        found.append(
            f"{dropped['count']} stored value(s) failed validation and were dropped and rebuilt (last: "
            f"{dropped['last']}, {dropped['seconds_ago']} s ago)"
        )
    throttle = report.get("throttle") or {}
    faults = [figures["fault"] for figures in (throttle, throttle.get("answers") or {}) if figures.get("fault")]
    found += [f"rate limiting failed, calls go out without it: {fault}" for fault in faults]
    rejected = [name for name, c in counters.items() if c.last == ErrorCode.AUTH_FAILED.value]
    if rejected:
        found.append(f"Brave rejected the API key (AUTH_FAILED) on the last call to {', '.join(rejected)}")
    for name, provider in (report.get("providers") or {}).items():
        setting = provider.get("misconfigured")
        if setting and not (name == "brave" and rejected and setting.startswith(ErrorCode.AUTH_FAILED.value)):
            found.append(f"{name}: the last call failed on its configuration ({setting})")  # a rejected key: once
    return found


# A pause this short is pacing, not a hold: the per-second window an ordinary request spent (Brave's reset of at most
# a second, plus the limiter's margin). The next request waits that moment; nothing is refused or held.
PACING_SECONDS = 2.0


def pauses(throttle: dict[str, Any]) -> list[str]:
    """Why no fresh request goes out now, and until when: a server-wide pause, the quota gate, the spending cap."""
    holds: list[str] = []
    for family, figures in (("search", throttle), ("answers", throttle.get("answers") or {})):
        name = "Brave" if family == "search" else "Brave Answers"
        quota = figures.get("quota_exhausted")
        if quota is not None:
            holds.append(
                f"{name}: the monthly quota is used up; it resets at {quota['resets_at']} (one trial request "
                f"in {quota['next_trial_in_seconds']} s)"
            )
        if figures.get("paused_for_seconds", 0.0) > PACING_SECONDS:
            holds.append(f"{name}: paused by Brave until {figures['paused_until']} ({figures['paused_for_seconds']} s)")
    month = throttle.get("month") or {}
    if month.get("cap") is not None and month["requests"] >= month["cap"]:
        holds.append(
            f"the spending cap of {month['cap']} requests this month (BRAVE_SEARCH_MONTHLY_REQUESTS) is reached; "
            "it resets at the start of next month (UTC)"
        )
    return holds


async def run(args: StatusArgs, ports: Ports, call: Call) -> tuple[dict[str, Any], str]:
    """The tool: the report over the enabled tools, within the call's deadline."""
    report = await build_status(ports, args, call.trace_id, call.deadline, tools=call.tools, progress=call.progress)
    return report, render_status_text(report)


SPEC = ToolSpec(
    name="brave_web_search_status",
    title="Brave search status",
    description=(
        "Health of this server: API key configured (never shown), Brave rate and quota figures, cache stats. "
        "probe_connectivity sends one minimal request per search endpoint."
    ),
    help="Key source, rate and quota figures, cache, and optional connectivity probes.",
    guide="key, quota and connectivity",
    input_model=StatusArgs,
    run=run,
    cli=CliShape(
        "status", "configuration, limits and (with --probe) connectivity", options={"probe_connectivity": "--probe"}
    ),
    library="status",
)
