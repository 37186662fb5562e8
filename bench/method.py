"""The method notes and the profile sections of docs/benchmarks.md: how each figure was taken."""

from __future__ import annotations

from .results import FAST_RATE, MEMORY_CALLS, TEXT_QUERY, WARMUP_CALLS, Results
from .stats import summarize
from .tables import fmt_bytes, fmt_ms, table


def method_notes(results: Results) -> str:
    plan = results.plan
    lat = results.latency
    notes = [
        "## Method",
        "",
        "All traffic stays on 127.0.0.1. The upstream is the project's fake Brave "
        "(`testkit.brave.FakeBraveServer`: a real HTTP/1.1 server that checks the key, the parameters and a "
        "1-second sliding rate window, and sends Brave's rate-limit headers). The server runs as a real stdio "
        "subprocess (`python -m brave_search_mcp`, the interpreter running the bench) with a minimal environment "
        "(the fake's URL and key, JSON logs at INFO on stderr). The bench speaks **raw line-delimited JSON-RPC over "
        "the pipes**, with the `initialize` handshake (protocol `2025-11-25`) that "
        '`Client(..., mode="legacy")` sends: this keeps the client library\'s own cost out of every figure, gives '
        "the exact bytes on the wire, the server's pid for `/proc` and its stderr log lines. Medians with "
        "interquartile range (IQR) and 10th–90th percentiles are computed with Python's `statistics` module "
        '(`quantiles(method="inclusive")`).',
        "",
        f"- **Start-up** ({plan.startup_reps} repetitions after one untimed warm-up of each): time from just before "
        "the spawn to the arrival of the `initialize` response, the request being written at once. Beside it, "
        "the SDK's floor as the issue defines it: spawn to exit of `python -c \"from mcp.server.mcpserver import "
        'MCPServer"`, same interpreter and environment, measured the same number of times in the same run, '
        "interleaved (the order rotates each repetition). The target is judged on the ratio of the medians. That "
        "floor includes the interpreter's exit, which a serving process never pays before `initialize`; so the "
        "table also shows a stricter floor, the same import timed to a byte written right after it, and the ratio "
        "against that.",
        "- **tools/list size**: the `tools` array of the `tools/list` result re-serialized as compact UTF-8 JSON "
        "(no spaces), with every tool enabled (the default).",
    ]
    if results.text is not None:
        notes.append(
            '- **Text size**: one `brave_web_search` call with `max_results: 10` and `result_filter: ["web"]` '
            f'(Brave `count=10`, `result_filter=web`) for "{TEXT_QUERY}"; the upstream answered from the '
            f"{results.text.source}. Measured: UTF-8 bytes of the text content (what the model reads; the "
            f"`structuredContent` envelope is {fmt_bytes(results.text.structured_bytes)} of JSON beside it), "
            "divided by the results returned. The target also requires every result's age from the source page "
            "(`age`, else `page_age`) to appear in the text and no HTML tag or entity to remain."
        )
    if lat is not None:
        miss_inside = summarize(lat.miss_inside)
        miss = summarize(lat.miss_rtt)
        upstream = summarize(lat.upstream)
        hit_inside = summarize(lat.hit_inside)
        hit_rtt = summarize(lat.hit_rtt)
        notes.append(
            f"- **Latency** ({plan.latency_samples} samples after {WARMUP_CALLS} warm-up pairs, one server process, "
            f"upstream allowing {FAST_RATE} requests/s so the throttle never waits): each sample is (1) a `tools/call` "
            "with a new query, a cache miss, timed from writing the request to reading the whole response line; "
            "(2) the very request the server just sent (path and parameters as the fake recorded them) sent "
            "straight to the fake on a keep-alive `http.client` connection with the same `Accept-Encoding: gzip`, "
            "timed to the last byte of the body: the upstream's own time; (3) the same `tools/call` again, a cache "
            "hit. The hit target uses the server's own `duration_ms` from the JSON log line it writes on stderr for "
            "that call (matched by `trace_id`). Medians: upstream alone "
            f"{fmt_ms(upstream.median)}; miss inside the server {fmt_ms(miss_inside.median)}, round trip "
            f"{fmt_ms(miss.median)}; hit inside {fmt_ms(hit_inside.median)}, round trip {fmt_ms(hit_rtt.median)}. "
            "Round trip minus `duration_ms` is what stdio, JSON-RPC and the MCP SDK's request handling cost."
        )
    notes.extend(
        [
            f"- **Bursts**: a fresh server and a fresh fake per run; ten `tools/call` requests with distinct queries "
            "are written back to back, and wall time runs from the first write to the last response. 1 request/s: "
            f"the first request goes alone and its answer's headers teach the 1/s plan ({len(results.slow_bursts)} "
            "run(s)); the floor is 9 s because the tenth request cannot start earlier. 20 requests/s: one call first, "
            "whose answer's "
            f"`X-RateLimit-Policy` teaches the rate, then the burst ({len(results.fast_bursts)} run(s)). Upstream "
            "429s are counted by the fake.",
            f"- **Memory**: a fresh server, {MEMORY_CALLS} calls alternating a new query (miss) and its repeat "
            "(hit), then `VmHWM` (peak resident set) from `/proc/<pid>/status` of the server process.",
        ]
    )
    return "\n".join(notes) + "\n"


def render_profile(results: Results) -> str:
    """The start-up import profile section."""
    profile = results.profile
    if profile is None:
        return ""
    lines = [
        "## Start-up profile",
        "",
        f"`python -X importtime` ({profile.runs} run(s), median per module): the floor command imports "
        f"{profile.floor_total_ms:.0f} ms of modules (self time, summed); the server, up to `initialize`, "
        f"{profile.server_total_ms:.0f} ms. Modules the server imports beyond the floor: "
        f"{profile.extra_total_ms:.0f} ms in total; the largest (self time):",
        "",
    ]
    lines.extend(f"- `{name}`: {ms:.1f} ms" for name, ms in profile.top_extra)
    return "\n".join(lines) + "\n"


def render_hit_profile(results: Results) -> str:
    """The cache-hit profile section: where the in-server time of a hit goes."""
    prof = results.hit_profile
    if prof is None or not prof.spots:
        return ""
    lines = [
        "## Cache-hit profile",
        "",
        f"The hit call (`{TEXT_QUERY}`, 10 web results) run {prof.calls} times in-process through "
        "`ToolBoundary.call` on the fake's in-memory transport (what `duration_ms` covers: no MCP framing, no "
        f"HTTP): {prof.per_call_ms:.2f} ms per call without a profiler. Then the same calls under `cProfile`; own "
        "time (callees excluded) by file and by function, as a share of the profiled time (the profiler inflates "
        "absolute figures, so only shares are shown):",
        "",
    ]
    rows = []
    for index in range(max(len(prof.by_file), len(prof.spots))):
        left = prof.by_file[index] if index < len(prof.by_file) else None
        right = prof.spots[index] if index < len(prof.spots) else None
        rows.append(
            [
                f"`{left.label}`" if left else "",
                f"{left.share:.1%}" if left else "",
                "",
                f"`{right.label}`" if right else "",
                f"{right.share:.1%}" if right else "",
            ]
        )
    return "\n".join(lines) + "\n" + table(("file", "share", "", "function", "share"), rows)
