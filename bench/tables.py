"""How the bench writes what it found: one Markdown table helper, one format per unit of measure.

Every table in docs/benchmarks.md goes through ``table``: cells are escaped (a ``|`` inside a cell would start a
new column, a newline a new row), one line per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from .stats import Summary

BENCHMARKS_DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"  # where the report goes


def cell(value: object) -> str:
    """One cell's text: pipes escaped, line breaks folded into spaces."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table: the header, its rule, then one line per row."""
    lines = [[cell(value) for value in cells] for cells in (header, *rows)]
    rule = "|" + "---|" * len(header)
    return (
        "\n".join(["| " + " | ".join(lines[0]) + " |", rule, *("| " + " | ".join(c) + " |" for c in lines[1:])]) + "\n"
    )


def fmt_ms(seconds: float) -> str:
    """A duration in milliseconds with sensible precision."""
    ms = seconds * 1000
    if abs(ms) < 10:
        return f"{ms:.2f} ms"
    return f"{ms:.1f} ms" if abs(ms) < 100 else f"{ms:.0f} ms"


def fmt_s(seconds: float) -> str:
    """A duration in seconds (two decimals: the bench's walls are tenths of a second and up)."""
    return f"{seconds:.2f} s"


def fmt_bytes(count: float) -> str:
    """A byte count with thousands separators."""
    return f"{count:,.0f} B"


def fmt_ratio(value: float | None) -> str:
    """``0.70×``, or a dash when there was nothing to compare with."""
    return "—" if value is None else f"{value:.2f}×"


def spread(summary: Summary, fmt: Callable[[float], str] = fmt_ms) -> str:
    """``p95 …; range …–…; n=…``: the spread cell beside a median."""
    return f"p95 {fmt(summary.p95)}; range {fmt(summary.minimum)}–{fmt(summary.maximum)}; n={summary.n}"
