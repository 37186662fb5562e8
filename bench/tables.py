"""How the bench writes what it found: one Markdown table helper, one format per unit of measure.

Every table in docs/benchmarks.md goes through ``table``: cells are escaped (a ``|`` inside a cell
would start a new column, a newline a new row), one line per row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from .stats import Summary


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


def spread(summary: Summary, fmt: Callable[[float], str]) -> str:
    """IQR, 10th-90th percentile and sample count in one cell."""
    return f"IQR {fmt(summary.q1)} – {fmt(summary.q3)}; p10–p90 {fmt(summary.p10)} – {fmt(summary.p90)}; n={summary.n}"


def replace_section(document: str, section: str, start: str, end: str) -> str:
    """``document`` with the part between the markers ``start`` and ``end`` replaced by ``section`` (which carries
    the markers itself); ``section`` is appended when the document has no such part yet."""
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.DOTALL)
    if pattern.search(document):
        return pattern.sub(lambda _: section, document, count=1)
    return document.rstrip("\n") + "\n\n" + section
