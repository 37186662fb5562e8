"""``python -m bench.micro``: timeit micro-benchmarks of the per-call hot paths, against a stored baseline.

A later change that makes one of them 20 % slower shows as SLOWER in the table (and in
docs/benchmarks.md); ``--update-baseline`` stores the current figures as the new reference.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from testkit.settings import make_settings

from . import hot
from .tables import BENCHMARKS_DOC, table, write_section
from .upstream import load_recorded_page, page_slice

BASELINE = Path(__file__).resolve().parent / "baseline.json"
TOLERANCE = 0.20
START, END = "<!-- bench.micro:start -->", "<!-- bench.micro:end -->"
REFERENCE = "reference"  # a fixed pure-Python workload: how fast this machine is right now
RAW_ARGUMENTS: dict[str, Any] = {"query": "hello world", "max_results": 10, "result_filter": ["web"]}


@dataclass(frozen=True)
class Case:
    """One hot path: a name, what it stands for, and a call that runs it once."""

    name: str
    what: str
    run: Callable[[], object]


@dataclass(frozen=True)
class Timing:
    """Microseconds per call: best of the repeats (the figure compared) and their median."""

    name: str
    what: str
    best_us: float
    median_us: float
    number: int
    reference_us: float | None = None  # the reference workload, timed right before this case


def build_cases(page: Mapping[str, Any] | None = None) -> list[Case]:
    """The hot paths of one 10-result web search, each set up once from the recorded (or fixture) page."""
    settings = make_settings()
    args = hot.WebSearchArgs.model_validate(RAW_ARGUMENTS)
    prepared = hot.prepare_search(args, settings)
    source = page if page is not None else load_recorded_page()
    if source is None:
        from testkit.brave.brave import FIXTURES_DIR

        source = json.loads((FIXTURES_DIR / "web.json").read_text(encoding="utf-8"))
    data = page_slice(source, dict(prepared.params))

    def parse() -> hot.ParsedAnswer:
        return hot.parse_answer(prepared.search_type, data, text_decorations=prepared.text_decorations)

    parsed = parse()

    def render() -> tuple[hot.SearchEnvelope, str]:
        meta = hot.SearchMeta(
            query=prepared.query,
            search_type=prepared.search_type,
            requested=prepared.requested,
            returned=sum(len(section.results) for section in parsed.sections),
            offset=prepared.offset,
            has_more=True,
            trace_id="0123456789abcdef",
            server_version="bench",
        )
        envelope = hot.SearchEnvelope(summary="", sections=parsed.sections, meta=meta, warnings=[])
        envelope.summary = hot.summary_line(envelope)
        return hot.fit_to_limits(envelope, prepared.max_lines, prepared.max_bytes)

    fitted, text = render()
    structured = fitted.dump()
    outcome = hot.ToolOutcome("brave_web_search", structured, text, False, "0123456789abcdef")
    return [
        Case(REFERENCE, "calibration workload (not a hot path): sort 400 strings, build a dict", reference_workload),
        Case(
            "validate",
            "argument validation: `WebSearchArgs.model_validate`",
            lambda: hot.WebSearchArgs.model_validate(RAW_ARGUMENTS),
        ),
        Case("prepare", "parameter normalization: `prepare_search`", lambda: hot.prepare_search(args, settings)),
        Case(
            "cache_key",
            "cache key: `make_key(endpoint, params)`",
            lambda: hot.make_key(prepared.endpoint, prepared.params),
        ),
        Case("parse", "parse of the 10-result web page: `parse_answer`", parse),
        Case("render", "envelope + `summary_line` + `fit_to_limits`", render),
        Case("dump", "envelope `.dump()` (structuredContent)", fitted.dump),
        Case(
            "json_envelope", "`json.dumps` of the dumped envelope", lambda: json.dumps(structured, ensure_ascii=False)
        ),
        Case(
            "response_json",
            "`CallToolResult` + `model_dump_json` (the response body)",
            lambda: hot.to_call_result(outcome).model_dump_json(by_alias=True, exclude_none=True),
        ),
    ]


def calls_for(case: Case, min_seconds: float) -> int:
    """How many calls one repeat needs to last at least ``min_seconds`` (bounded growth, like autorange)."""
    timer = timeit.Timer(case.run)
    number = 1
    while timer.timeit(number) < min_seconds and number < 10_000_000:
        number *= 4
    return number


def reference_workload() -> int:
    """Calibration, not a hot path: string building, sorting and a dict, as the hot paths do."""
    words = sorted(f"word-{i * 7919 % 1000:04d}" for i in range(400))
    return len({word[:7]: word for word in words})


def machine_scale(timing: Timing, baseline: Mapping[str, float]) -> float:
    """How much slower the machine was, right when ``timing`` ran, than when the baseline was stored.

    1.0 when either side has no reference figure (then the comparison is raw).
    """
    then = baseline.get(REFERENCE)
    now = timing.best_us if timing.name == REFERENCE else timing.reference_us
    return now / then if now and then else 1.0


def verdict(current_us: float, baseline_us: float | None, tolerance: float = TOLERANCE, scale: float = 1.0) -> str:
    """``SLOWER``/``faster`` beyond ±tolerance of the baseline scaled by the machine's current speed."""
    if baseline_us is None or baseline_us <= 0:
        return "no baseline"
    change = current_us / (baseline_us * scale) - 1
    if change > tolerance:
        return f"SLOWER (+{change:.0%})"
    if change < -tolerance:
        return f"faster ({change:.0%})"
    return "ok"


def load_baseline(path: Path = BASELINE) -> dict[str, float]:
    """Stored µs per call by case name; empty when there is no baseline file yet."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    cases = data.get("cases", {}) if isinstance(data, dict) else {}
    return {str(name): float(value) for name, value in cases.items()}


def baseline_document(timings: Sequence[Timing], note: str) -> str:
    """The baseline file's text: best µs per call per case, with a note of where it was measured."""
    cases = {t.name: round(t.best_us, 3) for t in timings}
    return json.dumps({"note": note, "tolerance": TOLERANCE, "cases": cases}, indent=2) + "\n"


def render_micro(timings: Sequence[Timing], baseline: Mapping[str, float]) -> str:
    """The micro-benchmark table, each case beside its baseline and the ±20 % verdict."""
    header = (
        "Hot path",
        "best µs/call",
        "median µs/call",
        "baseline µs",
        "machine ×",
        "verdict (±20 %, load-corrected)",
    )
    rows = []
    for t in timings:
        base = baseline.get(t.name)
        scale = machine_scale(t, baseline)
        judged = "calibration" if t.name == REFERENCE else verdict(t.best_us, base, scale=scale)
        shown = f"{base:.1f}" if base is not None else "—"
        rows.append((f"`{t.name}`: {t.what}", f"{t.best_us:.1f}", f"{t.median_us:.1f}", shown, f"{scale:.2f}", judged))
    return table(header, rows)


def micro_section(timings: Sequence[Timing], baseline: Mapping[str, float]) -> str:
    """The docs/benchmarks.md section, between markers so ``--write`` can replace it alone."""
    return (
        f"{START}\n## Hot-path micro-benchmarks\n\n"
        "`python -m bench.micro` (also part of `python -m bench`): each hot path of one 10-result web search timed "
        "in-process with `timeit` (enough calls per repeat to last 0.2 s, 5 repeats; the best repeat is compared, "
        "as it is the least disturbed by other load). This shared machine's speed swings by 2× with other "
        "engineers' load, so the repeats are interleaved (round-robin over all cases, so a burst of load "
        "cannot spoil every repeat of one case) and a fixed pure-Python workload (`reference`) runs in every round; "
        "each verdict divides out how much slower that was than in the baseline (the *machine ×* column): a hot "
        "path is flagged when it moved more than 20 % against the machine. The baseline is "
        "`bench/baseline.json`. Refresh it deliberately with `python -m bench.micro --update-baseline` after a "
        "change that is meant to cost time, on the same machine.\n\n"
        f"{render_micro(timings, baseline)}{END}\n"
    )


def run_micro(repeat: int = 5, min_seconds: float = 0.2) -> list[Timing]:
    """Time every case in ``repeat`` interleaved rounds, so a burst of load cannot spoil all repeats of one case.

    The reference workload runs in every round too; its best round is the machine's speed for the run.
    """
    cases = build_cases()
    numbers = [calls_for(case, min_seconds) for case in cases]
    rounds: list[list[float]] = [[] for _ in cases]
    for _ in range(repeat):
        for index, case in enumerate(cases):
            rounds[index].append(timeit.Timer(case.run).timeit(numbers[index]) / numbers[index] * 1e6)
    timings = []
    for case, number, samples in zip(cases, numbers, rounds, strict=True):
        ordered = sorted(samples)
        timings.append(Timing(case.name, case.what, ordered[0], ordered[len(ordered) // 2], number))
    reference = next(t.best_us for t in timings if t.name == REFERENCE)
    return [replace(t, reference_us=reference) for t in timings]


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the micro-benchmarks; print the table; optionally write the doc section or the baseline."""
    parser = argparse.ArgumentParser(prog="python -m bench.micro", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats of 0.05 s: a smoke run, not a measurement")
    parser.add_argument("--write", action="store_true", help=f"replace the micro section of {BENCHMARKS_DOC}")
    parser.add_argument("--update-baseline", action="store_true", help=f"store these figures in {BASELINE}")
    ns = parser.parse_args(argv)
    out = out or sys.stdout
    timings = run_micro(3, 0.05) if ns.quick else run_micro()
    baseline = load_baseline()
    out.write(render_micro(timings, baseline))
    if ns.update_baseline:
        BASELINE.write_text(baseline_document(timings, "python -m bench.micro on the bench machine"), encoding="utf-8")
        out.write(f"wrote {BASELINE}\n")
    if ns.write:
        write_section(micro_section(timings, baseline), START, END)
        out.write(f"wrote {BENCHMARKS_DOC}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
