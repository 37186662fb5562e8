"""The results table's rows, the causes of missed targets and the whole docs/benchmarks.md, kept pure."""

from __future__ import annotations

from collections.abc import Sequence

from .machine import Machine
from .method import method_notes, render_hit_profile, render_profile
from .results import BurstRun, Results
from .stats import summarize
from .tables import fmt_bytes, fmt_mib, fmt_ms, fmt_s, spread
from .targets import (
    FAST_BURST_MAX_S,
    HIT_MAX_INSIDE_S,
    MARGINAL_S,
    MISS_MAX_OVERHEAD_S,
    NO_TARGET,
    OFFICIAL_MISS_OVERHEAD,
    OFFICIAL_TOOLS_LIST,
    SLOW_BURST_FLOOR_S,
    SLOW_BURST_TOLERANCE,
    STARTUP_MAX_RATIO,
    TEXT_MAX_BYTES_PER_RESULT,
    TOOLS_LIST_MAX_BYTES,
    Row,
    judge_bursts,
    judge_hit,
    judge_miss,
    judge_startup,
    judge_text,
    judge_tools_list,
    render_table,
    startup_ratio,
    status_word,
)


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
    parts.append(method_notes(results))
    parts.extend(section for section in (render_profile(results), render_hit_profile(results)) if section)
    parts.append(
        "## Command\n\n"
        f"```\n{command}\n```\n\n"
        f"Took {results.elapsed:.0f} s. CI (`.ci/run`) runs `uv run --extra dev python -m bench --quick --no-write` "
        "(3 start-up repetitions, 20 latency samples, one burst of each kind, each `read_url` page 5 times and the "
        "2 MB one once): it prints the table, never writes "
        "this file, and fails only if the bench itself breaks, not when a target is missed.\n"
    )
    return "\n".join(parts)
