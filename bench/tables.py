"""How the bench writes what it found: one Markdown table helper, one format per unit of measure.

Every table in docs/benchmarks.md goes through ``table``: cells are escaped (a ``|`` inside a cell
would start a new column, a newline a new row), one line per row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from .stats import Summary

BENCHMARKS_DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"  # where the report goes


def cell(value: object) -> str:
    """One cell's text: pipes escaped, line breaks folded into spaces."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def row(cells: Iterable[object]) -> str:
    """One Markdown table line."""
    return "| " + " | ".join(cell(value) for value in cells) + " |"


def table(header: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table: the header, its rule, then one line per row."""
    return "\n".join([row(header), "|" + "---|" * len(header), *(row(cells) for cells in rows)]) + "\n"


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


def spread(summary: Summary, fmt: Callable[[float], str], *, iqr: bool = True) -> str:
    """IQR (unless ``iqr`` is False), 10th-90th percentile and sample count in one cell."""
    deciles = f"p10–p90 {fmt(summary.p10)} – {fmt(summary.p90)}; n={summary.n}"
    return f"IQR {fmt(summary.q1)} – {fmt(summary.q3)}; {deciles}" if iqr else deciles


def replace_section(document: str, section: str, start: str, end: str) -> str:
    """``document`` with the part between the markers ``start`` and ``end`` replaced by ``section`` (which carries
    the markers itself); ``section`` is appended when the document has no such part yet."""
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.DOTALL)
    if pattern.search(document):
        return pattern.sub(lambda _: section, document, count=1)
    return document.rstrip("\n") + "\n\n" + section


def write_section(section: str, start: str, end: str, path: Path = BENCHMARKS_DOC) -> None:
    """Put ``section`` (markers included) into the document at ``path`` with ``replace_section``; a missing
    document starts as a bare ``# Benchmarks`` heading."""
    current = path.read_text(encoding="utf-8") if path.is_file() else "# Benchmarks\n"
    path.write_text(replace_section(current, section, start, end), encoding="utf-8")
