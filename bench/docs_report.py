"""The documentation section of docs/benchmarks.md: read_url beside trafilatura and Readability, each figure
beside the issue's target (pure)."""

from __future__ import annotations

from .docs import METRICS, READ_URL, READABILITY, TARGETS, TRAFILATURA, DocsResult, Tally, met
from .machine import Machine
from .tables import table

DOCS_HEADING = "## Documentation pages"
_NAMES = {
    "code_exact": "Code blocks exact",
    "code_fenced": "Code blocks fenced",
    "headings": "Headings as # lines",
    "cells": "Table cells",
    "rows": "Table rows kept as rows",
    "f1": "Text F1 (4-grams)",
    "chrome": "Chrome strings leaked",
    "bytes": "Bytes per main-text byte",
}


def figure(tally: Tally, metric: str) -> str:
    """One figure as the table shows it (a ratio of bytes with its ×), or a dash when nothing was counted."""
    if metric != "f1" and not tally.total[metric]:
        return "—"
    value = tally.value(metric)
    return f"{value:.2f}×" if metric == "bytes" else f"{value:.3f}"


def render_docs(found: DocsResult, machine: Machine, command: str) -> str:
    """The section: overall figures with targets, then read_url per generator."""
    if not found.pages:
        return f"{DOCS_HEADING}\n\nNot measured: none of the documentation packages is installed.\n"
    versions = found.versions
    header = ("Measure", f"read_url ({versions[READ_URL]})", f"trafilatura {versions[TRAFILATURA]}",
              f"Readability (readability-lxml {versions[READABILITY]})", "Target", "read_url")  # fmt: skip
    rows = []
    for metric in METRICS:
        target, higher = TARGETS[metric]
        ours = found.overall[READ_URL]
        status = "met" if met(metric, ours.value(metric)) else "missed"
        bound = f"≥ {target:.2f}" if higher else (f"≤ {target:.2f}×" if metric == "bytes" else f"≤ {target:.2f}")
        rows.append([_NAMES[metric], *(figure(found.overall[name], metric) for name in found.overall), bound, status])
    per = [[generator, str(found.generators[generator]), *(figure(tallies[READ_URL], m) for m in METRICS)]
           for generator, tallies in found.by_generator.items()]  # fmt: skip
    counts = ", ".join(f"{name} {count}" for name, count in found.generators.items())
    ours = found.overall[READ_URL]
    totals = (f"{ours.total['code_exact']:,} code blocks, {ours.total['headings']:,} headings, "
              f"{ours.total['cells']:,} table cells in {ours.total['rows']:,} rows, "
              f"{ours.total['chrome']:,} chrome strings")  # fmt: skip
    return (
        f"{DOCS_HEADING}\n\n{found.pages} real documentation pages from Debian's documentation packages, six "
        f"generators ({counts}; {totals}), picked and scored by `bench/docs.py` (what each page's main element "
        "is, per generator, is defined in `bench/docs_corpus.py`; the pages are never committed). read_url's "
        "content beside trafilatura's Markdown and Readability's choice of content (written as Markdown by the "
        "reader's rules). Counts are summed over the corpus; F1 is a mean over pages.\n\n"
        + table(header, rows)
        + "\nread_url per generator:\n\n"
        + table(("Generator", "Pages", *(_NAMES[m] for m in METRICS)), per)
        + f"\nMeasured {machine.date} with `{command}`.\n"
    )
