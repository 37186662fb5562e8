"""Targets, their verdicts and the rendered table and document, kept pure so they can be tested without timing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .machine import Machine
from .measure import FAST_RATE, MEMORY_CALLS, TEXT_QUERY, WARMUP_CALLS, BurstRun, Results, TextResult
from .stats import Summary, summarize

STARTUP_MAX_RATIO = 1.05  # issue 17: nothing imported at start that a call does not need yet
TOOLS_LIST_MAX_BYTES = 15_000  # "under 15 KB", read strictly as 15,000 bytes
OFFICIAL_TOOLS_LIST = "117 KB"
TEXT_MAX_BYTES_PER_RESULT = 296  # Brave's official server on the same page of results
MISS_MAX_OVERHEAD_S = 0.003
OFFICIAL_MISS_OVERHEAD = "3.5 ms"
HIT_MAX_INSIDE_S = 0.001
SLOW_BURST_FLOOR_S = 9.0  # ten calls at 1 request/s: the last may start 9 s after the first
SLOW_BURST_TOLERANCE = 0.10
FAST_BURST_MAX_S = 1.0

MET, MISSED, NO_TARGET = "met", "missed", "—"


@dataclass(frozen=True)
class Row:
    """One line of the results table."""

    measurement: str
    result: str
    spread: str
    target: str
    status: str


# --------------------------------------------------------------------------------------------- verdicts


def status_word(met: bool | None) -> str:
    """``met`` / ``missed``, or a dash for figures reported without a target."""
    if met is None:
        return NO_TARGET
    return MET if met else MISSED


def startup_ratio(server_median: float, floor_median: float) -> float:
    """Server start-up as a multiple of the SDK-import floor."""
    if floor_median <= 0:
        raise ValueError("the floor must be a positive time")
    return server_median / floor_median


def judge_startup(server_median: float, floor_median: float) -> bool:
    """Start-up is within 1.05x the floor."""
    return startup_ratio(server_median, floor_median) <= STARTUP_MAX_RATIO


def judge_tools_list(total_bytes: int) -> bool:
    """The tools array is under 15,000 bytes."""
    return total_bytes < TOOLS_LIST_MAX_BYTES


def judge_text(text: TextResult) -> bool:
    """At most 296 bytes per result, every source age shown, and no markup left in the text."""
    return (
        text.results > 0
        and text.per_result <= TEXT_MAX_BYTES_PER_RESULT
        and text.ages_shown == text.ages_expected
        and not text.markup
    )


# A target met by less than this is reported with its causes too: run-to-run noise is about this size.
MARGINAL_S = 0.0003


def judge_miss(miss_median: float, upstream_median: float) -> bool:
    """A cache miss adds at most 3 ms to the upstream's own round trip."""
    return miss_median - upstream_median <= MISS_MAX_OVERHEAD_S


def judge_hit(inside_median: float) -> bool:
    """A cache hit takes under 1 ms inside the server."""
    return inside_median < HIT_MAX_INSIDE_S


def judge_bursts(runs: Sequence[BurstRun], max_wall: float, *, strict: bool) -> bool:
    """Every run: all calls succeeded, no upstream 429, wall time within the limit (``<`` when strict)."""
    if not runs:
        return False
    for run in runs:
        if run.ok != run.calls or run.rate_limited != 0:
            return False
        if run.wall > max_wall or (strict and run.wall == max_wall):
            return False
    return True


# --------------------------------------------------------------------------------------------- formatting


def fmt_ms(seconds: float) -> str:
    """A duration in milliseconds with sensible precision."""
    ms = seconds * 1000
    if abs(ms) < 10:
        return f"{ms:.2f} ms"
    if abs(ms) < 100:
        return f"{ms:.1f} ms"
    return f"{ms:.0f} ms"


def fmt_s(seconds: float) -> str:
    """A duration in seconds (three decimals)."""
    return f"{seconds:.3f} s"


def fmt_bytes(count: float) -> str:
    """A byte count with thousands separators."""
    return f"{count:,.0f} B"


def fmt_mib(kib: int) -> str:
    """A /proc kB figure in MiB."""
    return f"{kib / 1024:.1f} MiB"


def spread(summary: Summary, fmt: Callable[[float], str]) -> str:
    """IQR, 10th-90th percentile and sample count in one cell."""
    return f"IQR {fmt(summary.q1)} – {fmt(summary.q3)}; p10–p90 {fmt(summary.p10)} – {fmt(summary.p90)}; n={summary.n}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_table(rows: Sequence[Row]) -> str:
    """A GitHub-flavoured Markdown table of the rows (pipes in cells escaped)."""
    header = ("Measurement", "Result (median)", "Spread", "Target", "Status")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines.extend(
        "| " + " | ".join(_cell(c) for c in (r.measurement, r.result, r.spread, r.target, r.status)) + " |"
        for r in rows
    )
    return "\n".join(lines) + "\n"


def _burst_result(runs: Sequence[BurstRun]) -> tuple[str, str]:
    walls = summarize([run.wall for run in runs])
    ok = sum(run.ok for run in runs)
    calls = sum(run.calls for run in runs)
    limited = sum(run.rate_limited for run in runs)
    result = f"{ok}/{calls} ok, {limited} × 429, wall {fmt_s(walls.median)}"
    detail = f"worst wall {fmt_s(walls.maximum)}; runs={len(runs)}"
    return result, detail if len(runs) > 1 else f"runs=1 (wall {fmt_s(walls.maximum)})"


def build_rows(results: Results) -> list[Row]:
    """The table the bench prints and writes: each figure beside its target and verdict."""
    rows: list[Row] = []
    if results.startup is not None:
        server = summarize(results.startup.server)
        floor = summarize(results.startup.floor)
        floor_import = summarize(results.startup.floor_import)
        ratio = startup_ratio(server.median, floor.median)
        rows.append(
            Row(
                'SDK floor: `python -c "from mcp.server.mcpserver import MCPServer"` (spawn → exit)',
                fmt_s(floor.median),
                spread(floor, fmt_s),
                "reference",
                NO_TARGET,
            )
        )
        rows.append(
            Row(
                "SDK floor, import only (spawn → a byte written after the import; no interpreter exit)",
                fmt_s(floor_import.median),
                spread(floor_import, fmt_s),
                "reference",
                NO_TARGET,
            )
        )
        rows.append(
            Row(
                "Start-up: spawn → `initialize` answered",
                f"{fmt_s(server.median)} ({ratio:.2f}× floor; "
                f"{startup_ratio(server.median, floor_import.median):.2f}× import-only floor)",
                spread(server, fmt_s),
                f"≤ {STARTUP_MAX_RATIO}× floor",
                status_word(judge_startup(server.median, floor.median)),
            )
        )
    if results.tools_list is not None:
        total = results.tools_list.total_bytes
        per_tool = ", ".join(f"{name} {size:,}" for name, size in results.tools_list.per_tool.items())
        rows.append(
            Row(
                f"`tools/list` size ({len(results.tools_list.per_tool)} tools, JSON of `tools`)",
                fmt_bytes(total),
                f"deterministic; {per_tool}",
                f"< {TOOLS_LIST_MAX_BYTES:,} B (official server: {OFFICIAL_TOOLS_LIST})",
                status_word(judge_tools_list(total)),
            )
        )
    if results.text is not None:
        text = results.text
        checks = f"ages {text.ages_shown}/{text.ages_expected} shown; markup left: {len(text.markup)}"
        if text.source.startswith("FALLBACK"):
            checks += "; FALLBACK page (the fake's fixture)"
        rows.append(
            Row(
                f"Text the model reads, 10-result web search ({text.results} results)",
                f"{fmt_bytes(text.text_bytes)} = {text.per_result:.0f} B/result",
                f"deterministic; {checks}",
                f"≤ {TEXT_MAX_BYTES_PER_RESULT} B/result (official server) with age and clean snippet",
                status_word(judge_text(text)),
            )
        )
    if results.latency is not None:
        lat = results.latency
        upstream = summarize(lat.upstream)
        miss = summarize(lat.miss_rtt)
        hit_inside = summarize(lat.hit_inside)
        hit_rtt = summarize(lat.hit_rtt)
        rows.append(
            Row(
                "Upstream's own time: direct GET to the fake, same params",
                fmt_ms(upstream.median),
                spread(upstream, fmt_ms),
                "reference",
                NO_TARGET,
            )
        )
        rows.append(
            Row(
                "Cache miss: `tools/call` round trip over stdio",
                f"{fmt_ms(miss.median)} (+{fmt_ms(miss.median - upstream.median)} over upstream)",
                spread(miss, fmt_ms),
                f"≤ upstream + {fmt_ms(MISS_MAX_OVERHEAD_S)} (official server: +{OFFICIAL_MISS_OVERHEAD})",
                status_word(judge_miss(miss.median, upstream.median)),
            )
        )
        rows.append(
            Row(
                "Cache hit: inside the server (`duration_ms` of its log line)",
                fmt_ms(hit_inside.median),
                spread(hit_inside, fmt_ms) + f"; round trip over stdio {fmt_ms(hit_rtt.median)}",
                f"< {fmt_ms(HIT_MAX_INSIDE_S)}",
                status_word(judge_hit(hit_inside.median)),
            )
        )
    if results.slow_bursts:
        limit = SLOW_BURST_FLOOR_S * (1 + SLOW_BURST_TOLERANCE)
        result, detail = _burst_result(results.slow_bursts)
        rows.append(
            Row(
                "10 concurrent calls, upstream allows 1 request/s",
                result,
                detail,
                f"10/10, zero 429, wall ≤ {fmt_s(limit)} (9 s floor + 10%) in every run",
                status_word(judge_bursts(results.slow_bursts, limit, strict=False)),
            )
        )
    if results.fast_bursts:
        result, detail = _burst_result(results.fast_bursts)
        rows.append(
            Row(
                "10 concurrent calls, upstream allows 20 requests/s (rate learnt from the first answer)",
                result,
                detail,
                f"10/10, zero 429, wall < {fmt_s(FAST_BURST_MAX_S)} in every run",
                status_word(judge_bursts(results.fast_bursts, FAST_BURST_MAX_S, strict=True)),
            )
        )
    if results.memory is not None:
        mem = results.memory
        rows.append(
            Row(
                f"Peak RSS (VmHWM) after {mem.calls} calls ({mem.misses} misses, {mem.hits} hits)",
                fmt_mib(mem.hwm_kb),
                f"one run; {fmt_mib(mem.hwm_after_init_kb)} after `initialize`, VmRSS now {fmt_mib(mem.rss_kb)}",
                "reported (no target)",
                NO_TARGET,
            )
        )
    return rows


# --------------------------------------------------------------------------------------------- the document


def miss_breakdown(results: Results) -> dict[str, float]:
    """Where a cache miss's extra time goes (seconds, from medians): framing, shaping, HTTP and the rest."""
    lat = results.latency
    if lat is None:
        raise ValueError("no latency measurement")
    upstream = summarize(lat.upstream).median
    miss_rtt = summarize(lat.miss_rtt).median
    miss_inside = summarize(lat.miss_inside).median
    hit_inside = summarize(lat.hit_inside).median
    return {
        "framing": miss_rtt - miss_inside,
        "shaping": hit_inside,
        "http": miss_inside - hit_inside - upstream,
    }


def missed_causes(results: Results) -> list[str]:
    """For every missed (or barely met) target, the measured figures that explain it."""
    causes: list[str] = []
    if results.startup is not None and results.profile is not None:
        server = summarize(results.startup.server).median
        floor = summarize(results.startup.floor).median
        if not judge_startup(server, floor):
            top = ", ".join(f"`{name}` {ms:.1f} ms" for name, ms in results.profile.top_extra[:5])
            causes.append(
                f"**Start-up** is {fmt_s(server)} against a {fmt_s(floor)} floor ({server / floor:.2f}×). "
                f"The server imports {results.profile.extra_total_ms:.0f} ms of modules the floor does not; "
                f"the largest: {top}. See the start-up profile below."
            )
    if results.tools_list is not None and not judge_tools_list(results.tools_list.total_bytes):
        biggest = max(results.tools_list.per_tool.items(), key=lambda item: item[1])
        causes.append(
            f"**tools/list** is {fmt_bytes(results.tools_list.total_bytes)}; the largest tool is "
            f"`{biggest[0]}` at {fmt_bytes(biggest[1])}."
        )
    if results.text is not None and not judge_text(results.text):
        text = results.text
        causes.append(
            f"**Text size**: {text.per_result:.0f} B/result over {text.results} results; ages shown "
            f"{text.ages_shown}/{text.ages_expected}; markup left: {text.markup[:5]}."
        )
    if results.latency is not None:
        lat = results.latency
        upstream = summarize(lat.upstream).median
        miss = summarize(lat.miss_rtt).median
        if not judge_miss(miss, upstream) or miss - upstream > MISS_MAX_OVERHEAD_S - MARGINAL_S:
            parts = miss_breakdown(results)
            verdict = "missed" if not judge_miss(miss, upstream) else f"met by less than {fmt_ms(MARGINAL_S)}"
            causes.append(
                f"**Cache miss** ({verdict}) adds {fmt_ms(miss - upstream)} to the upstream's {fmt_ms(upstream)}. "
                "Measured split "
                f"(medians): {fmt_ms(parts['framing'])} is stdio and MCP SDK request handling outside the server's "
                f"own timer (round trip minus its `duration_ms`); {fmt_ms(parts['shaping'])} is the work a cache hit "
                "does too — argument validation, the cache lookup and building the envelope (a hit's "
                f"`duration_ms`; a hit reuses the parsed and fitted page); {fmt_ms(parts['http'])} is the rest of "
                "the miss inside the server beyond the upstream's own round trip: the HTTP client (httpx2, whose "
                "per-request cost on loopback exceeds the bench's plain `http.client` reference by several tenths "
                "of a millisecond), gzip and JSON decoding, parsing and formatting the page (about 0.45 ms for "
                "these 10 results in-process), throttle and retry wrapper. The margin to the target is a few "
                "tenths of a millisecond either way from run to run."
            )
        hit = summarize(lat.hit_inside).median
        if not judge_hit(hit):
            cause = f"**Cache hit** takes {fmt_ms(hit)} inside the server (median of its own log lines)."
            if results.hit_profile is not None and results.hit_profile.by_file:
                prof = results.hit_profile
                files = ", ".join(f"`{spot.label}` {spot.share:.0%}" for spot in prof.by_file[:4])
                funcs = ", ".join(f"`{spot.label}` {spot.share:.0%}" for spot in prof.spots[:4])
                cause += (
                    f" The same call in-process takes {prof.per_call_ms:.2f} ms; its profile puts the own time in "
                    f"{files}; the hottest functions: {funcs}. See the cache-hit profile below."
                )
            causes.append(cause)
    for runs, label, limit, strict in (
        (results.slow_bursts, "1 request/s burst", SLOW_BURST_FLOOR_S * (1 + SLOW_BURST_TOLERANCE), False),
        (results.fast_bursts, "20 requests/s burst", FAST_BURST_MAX_S, True),
    ):
        if runs and not judge_bursts(runs, limit, strict=strict):
            detail = "; ".join(
                f"run {i + 1}: {run.ok}/{run.calls} ok, {run.rate_limited} × 429, "
                f"{run.upstream_requests} upstream requests, wall {fmt_s(run.wall)}"
                for i, run in enumerate(runs)
            )
            causes.append(f"**{label}**: {detail}.")
    return causes


def render_machine(machine: Machine) -> str:
    """The machine paragraph: CPU, cores, RAM, OS, Python and package versions."""
    ram = f"{machine.ram_bytes / 1024**3:.1f} GiB" if machine.ram_bytes else "unknown"
    cores = f"{machine.logical_cpus} logical CPUs"
    if machine.physical_cores:
        cores += f" ({machine.physical_cores} physical cores)"
    packages = ", ".join(f"{name} {version}" for name, version in machine.packages.items())
    load = (
        "; load average before the run {:.2f} / {:.2f} / {:.2f} (1 / 5 / 15 min)".format(*machine.load_average)
        if machine.load_average
        else ""
    )
    return (
        f"- Date: {machine.date}{load}\n"
        f"- CPU: {machine.cpu_model}, {cores}; RAM {ram}\n"
        f"- OS: {machine.os}\n"
        f"- Python: {machine.python}; {packages}\n"
    )


def _method_notes(results: Results) -> str:
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
        "(no spaces), with all four tools enabled (the default).",
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
            f"the server starts at 1 request/s as on every plan ({len(results.slow_bursts)} run(s)); the floor is "
            "9 s because the tenth request cannot start earlier. 20 requests/s: one call first, whose answer's "
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
        "`SearchService.call` on the fake's in-memory transport (what `duration_ms` covers: no MCP framing, no "
        f"HTTP): {prof.per_call_ms:.2f} ms per call without a profiler. Then the same calls under `cProfile`; own "
        "time (callees excluded) by file and by function, as a share of the profiled time (the profiler inflates "
        "absolute figures, so only shares are shown):",
        "",
        "| file | share | | function | share |",
        "|---|---|---|---|---|",
    ]
    for index in range(max(len(prof.by_file), len(prof.spots))):
        left = prof.by_file[index] if index < len(prof.by_file) else None
        right = prof.spots[index] if index < len(prof.spots) else None
        cells = [
            f"`{_cell(left.label)}`" if left else "",
            f"{left.share:.1%}" if left else "",
            "",
            f"`{_cell(right.label)}`" if right else "",
            f"{right.share:.1%}" if right else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render_document(results: Results, machine: Machine, command: str, extra: str = "") -> str:
    """docs/benchmarks.md: header, the table, missed-target causes, ``extra`` sections, method notes, profiles."""
    causes = missed_causes(results)
    parts = [
        "# Benchmarks\n",
        "Generated by the bench (`bench/`); do not edit by hand — rerun the command at the end. Figures are from "
        "one machine and move with it; the targets compare against floors measured in the same run where one "
        "exists.\n",
        *(["**Quick run** (few repetitions): figures are indicative only.\n"] if results.quick else []),
        render_machine(machine),
        "## Results\n",
        render_table(build_rows(results)),
    ]
    if causes:
        parts.append("### Missed or marginal targets: measured causes\n")
        parts.append("\n".join(f"- {cause}" for cause in causes) + "\n")
    if extra:
        parts.append(extra)
    parts.append(_method_notes(results))
    parts.extend(section for section in (render_profile(results), render_hit_profile(results)) if section)
    parts.append(
        "## Command\n\n"
        f"```\n{command}\n```\n\n"
        f"Took {results.elapsed:.0f} s. CI (`.ci/run`) runs `uv run --extra dev python -m bench --quick --no-write` "
        "(3 start-up repetitions, 20 latency samples, one burst of each kind): it prints the table, never writes "
        "this file, and fails only if the bench itself breaks, not when a target is missed.\n"
    )
    return "\n".join(parts)
