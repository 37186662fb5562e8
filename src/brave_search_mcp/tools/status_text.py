"""The status report as a few lines a person reads at a glance (the report itself is built in ``status``)."""

from __future__ import annotations

from typing import Any

from brave_search_mcp.config_sources import key_origin


def _brave_lines(report: dict[str, Any], throttle: dict[str, Any]) -> list[str]:
    """The month's requests and Brave's own limits, as the last answer's headers stated them."""
    lines: list[str] = []
    month = throttle.get("month")
    if month:
        cap = "no cap" if month["cap"] is None else f"cap {month['cap']} (BRAVE_SEARCH_MONTHLY_REQUESTS)"
        lines.append(f"requests this month ({month['month']}, UTC): {month['requests']}, {cap}")
    rl = report.get("rate_limit")
    if rl:
        lines.append(
            f"brave limits: {rl['per_second']}/s, {rl['remaining_month']} of {rl['limit_month']} left this month "
            f"(0 = unlimited), resets in {rl['reset_month_seconds']} s"
        )
    else:
        lines.append("brave limits: not seen yet (no request made)")
    return lines


def _state_line(state: dict[str, Any]) -> str:
    """Where the counters live and where the cache does (the cache directory may be wiped; the state is kept)."""
    location, cache = state.get("location"), state.get("cache_location")
    if state.get("backend", "memory") == "memory" or location is None:
        return "state: this process only (nothing shared, nothing kept after it exits)"
    if cache is None or cache == location:
        return f"state and cache: {location} ({state['backend']})"
    return f"state: {location} ({state['backend']}); cache: {cache}"


def _rate_line(settings: dict[str, Any], throttle: dict[str, Any]) -> str:
    """Brave's rate in force, learned or set, and how sure the plan is."""
    plan = throttle.get("plan_per_second")
    adaptive = f" (adaptive, plan {plan:g}/s)" if settings["rate_adaptive"] and plan is not None else ""
    rate = settings["rate_limit_per_second"]
    in_force = (
        "not learned yet (the first request goes alone)" if rate is None else f"{rate:g}/s burst {settings['burst']}"
    )
    if rate is not None and throttle.get("plan_stated") is False and plan is not None:
        in_force += " (a stored plan: this process's next request goes alone to check it, then full speed)"
    return (
        f"rate in force: {in_force}{adaptive}; retries {settings['retries']}; timeout {settings['timeout_seconds']:g} s"
    )


def _other_lines(name: str, state: dict[str, Any], ttl: float) -> list[str]:
    """Another provider's address, time per call, pace and pages' cache (SearXNG's)."""
    lines: list[str] = []
    pace = state.get("pace") or {}
    if state.get("url"):
        rate = f"; pace {pace['rate']:g}/s, {pace['burst']} at once" if pace.get("rate") is not None else ""
        lines.append(f"{name}: {state['url']}; at most {state.get('timeout_seconds', 0):g} s a call{rate}")
    pages = state.get("cache")
    if pages:
        where = "in the shared state" if "bytes" in pages else "in this process"
        lines.append(
            f"cache: {pages.get('entries', 0)} entries {where}, ttl {ttl:g} s, "
            f"{pages.get('hits', 0)} hits, {pages.get('misses', 0)} misses ({name} pages)"
        )
    return lines


def _rendering_line(rendering: dict[str, Any]) -> str:
    """read_url's JavaScript rendering: the browser and whether it runs, or why there is none."""
    if not rendering["available"]:
        return f"rendering: unavailable ({rendering['reason']})"
    running = f"running, {rendering['version']}" if rendering.get("running") else "launched on the first app shell"
    return f"rendering: {rendering['browser']} ({rendering['found_by']}; {running})"


def _breaker_line(name: str, breaker: dict[str, Any]) -> str:
    """One provider's breaker, the search types paused or failing on their own, and a misconfiguration."""
    line = f"provider {name}: {breaker['state']}, failures {breaker['failures']}"
    for kind, typed in breaker.get("search_types", {}).items():
        wait = f", retried in {typed['retry_in_seconds']:.0f} s" if "retry_in_seconds" in typed else ""
        line += f"; {kind} search {typed['state']}, failures {typed['failures']}{wait}"
    if breaker.get("misconfigured"):
        line += f"; misconfigured: {breaker['misconfigured']}"
    return line


def render_status_text(report: dict[str, Any]) -> str:
    """A few lines a person can read at a glance."""
    key = report["key"]
    settings = report["settings"]
    throttle = report.get("throttle", {})
    lines = [f"status: {report['status']} (server {report['server_version']}, up {report['uptime_seconds']} s)"]
    providers = settings.get("providers", ["brave"])
    if "brave" in providers:
        cache = report["cache"]
        origin = key_origin(key["source"], key["file"])
        lines += [
            f"key: {'configured from ' + origin if key['configured'] else 'not configured'}",
            _rate_line(settings, throttle),
            f"cache: {cache['entries']}/{cache['max_entries']} entries, ttl {cache['ttl_seconds']:g} s, "
            f"{cache['hits']} hits, {cache['misses']} misses",
            *_brave_lines(report, throttle),
        ]
    else:  # SearXNG alone: Brave's key, rate, month and plan do not apply; the instance and its pages are shown
        lines.append(f"brave: not used (BRAVE_SEARCH_PROVIDERS={','.join(providers)}); no Brave key needed")
    for name, state in report.get("providers", {}).items():
        if name != "brave":
            lines += _other_lines(name, state, settings["cache_ttl_seconds"])
    lines.append(_state_line(report.get("state") or {}))
    if "rendering" in report:
        lines.append(_rendering_line(report["rendering"]))
    for probe in report.get("probe", []):
        outcome = "ok" if probe["ok"] else f"{probe['code']}: {probe['message']}"
        lines.append(f"probe {probe.get('search_type') or probe['provider']}: {outcome} ({probe['duration_ms']} ms)")
    for name, breaker in report.get("providers", {}).items():
        if "failures" in breaker:  # a provider chain: each provider's breaker
            lines.append(_breaker_line(name, breaker))
    for name, counter in report.get("counters", {}).items():
        lines.append(f"counter {name}: {counter['requests']} requests, {counter['errors']} errors")
    plan = report.get("plan") or {}
    if plan:
        lines.append("plan seen: " + ", ".join(f"{tool} {state}" for tool, state in plan.items()))
    lines.extend(f"! {reason}" for reason in report.get("reasons", []))
    return "\n".join(lines)
