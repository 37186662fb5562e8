"""read_url measured (issue 25 item 6): text kept against raw bytes and extraction time per page, and whole reads.

The pages are the project's own (``testkit/sites/pages.py``): an article, a docs page with code, a forum
thread, a PDF paper and a docs page of 2 MB. Extraction is ``reader.extract.extract`` in this process (the
median of N runs after one untimed warm-up, which also pays the first import of trafilatura or pypdf). A
whole read is ``UrlReader.read`` of the page served by a ``FakeSite`` on 127.0.0.1: address checks, the HTTP
fetch and the extraction in a worker thread; each read runs on a fresh in-memory state, so neither the page
cache nor the per-host politeness limit (2 requests/s) is in the figure.

``python -m bench.read_url`` prints the section; ``--write`` replaces it in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

import anyio
import httpx2

from brave_search_mcp.reader import UrlReader
from brave_search_mcp.reader.content import Kind
from brave_search_mcp.reader.extract import extract
from brave_search_mcp.state.location import open_state
from testkit.settings import make_settings
from testkit.sites import FakeSite
from testkit.sites.pages import big_page, page

from .machine import describe_machine, render_machine_line
from .stats import summarize
from .tables import BENCHMARKS_DOC, fmt_bytes, fmt_ms, spread, table, write_section

START, END = "<!-- bench.read_url:start -->", "<!-- bench.read_url:end -->"
BIG_PAGE_BYTES = 2_000_000
HTML = "text/html; charset=utf-8"


@dataclass(frozen=True)
class Case:
    """One page: its name in the tables, where its bytes come from, and how the site labels it."""

    name: str
    source: str  # a file of testkit/sites/pages/, or "big" for big_page(BIG_PAGE_BYTES)
    content_type: str
    kind: Kind

    def body(self) -> bytes:
        """The page's bytes."""
        return big_page(BIG_PAGE_BYTES) if self.source == "big" else page(self.source)


CASES = (
    Case("article", "article.html", HTML, "html"),
    Case("docs page with code", "docs.html", HTML, "html"),
    Case("forum thread", "forum.html", HTML, "html"),
    Case("PDF paper", "paper.pdf", "application/pdf", "pdf"),
    Case("docs page of 2 MB", "big", HTML, "html"),
)
READ_CASES = (CASES[1], CASES[4])  # a small page and the big one, through the whole reader


@dataclass(frozen=True)
class Plan:
    """Runs per figure: small pages, the 2 MB page, whole reads of each."""

    small_runs: int
    big_runs: int

    def runs(self, case: Case) -> int:
        """How many timed runs ``case`` gets."""
        return self.big_runs if case.source == "big" else self.small_runs


FULL = Plan(small_runs=30, big_runs=5)
QUICK = Plan(small_runs=5, big_runs=1)


@dataclass(frozen=True)
class Figures:
    """What one page gave: its raw bytes, the markdown kept, and the seconds each timed run took."""

    case: Case
    raw_bytes: int
    text_chars: int
    text_bytes: int
    seconds: list[float]

    @property
    def ratio(self) -> float:
        """Bytes of text kept per raw byte."""
        return self.text_bytes / self.raw_bytes if self.raw_bytes else 0.0


def time_extraction(case: Case, runs: int) -> Figures:
    """Extract ``case`` once untimed, then ``runs`` timed times."""
    body = case.body()
    charset = "utf-8" if case.kind == "html" else None

    def once() -> str:
        url = f"https://pages.example/{case.source}"
        document = extract(
            url=url, final_url=url, kind=case.kind, content_type=case.content_type, body=body, charset=charset
        )
        return document.markdown

    markdown = once()
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        once()
        seconds.append(time.perf_counter() - started)
    return Figures(case, len(body), len(markdown), len(markdown.encode("utf-8")), seconds)


async def time_reads(case: Case, runs: int) -> Figures:
    """``runs`` whole reads of ``case`` from a FakeSite, each on a fresh in-memory state (after one untimed)."""
    body = case.body()
    settings = make_settings(read_allowed_hosts=("127.0.0.1",))
    tls = httpx2.create_ssl_context()  # built once, as the server's one reader does (it costs milliseconds)
    seconds: list[float] = []
    markdown = ""
    with FakeSite() as site:
        site.page("/page", body, content_type=case.content_type)
        for run in range(runs + 1):
            backend = await open_state("memory", cache_max_entries=10, clock=time.time)
            try:
                reader = UrlReader(settings, backend, time.time, ssl_context=tls)
                started = time.perf_counter()
                result = await reader.read(site.url("/page"))
                elapsed = time.perf_counter() - started
            finally:
                await backend.aclose()
            markdown = result.document.markdown
            if run:  # the first read is the warm-up
                seconds.append(elapsed)
    return Figures(case, len(body), len(markdown), len(markdown.encode("utf-8")), seconds)


def _timing(figures: Figures) -> tuple[str, str]:
    """The median of the timed runs and their spread (10th–90th percentile, count): two cells."""
    stats = summarize(figures.seconds)
    return fmt_ms(stats.median), spread(stats, fmt_ms, iqr=False)


def render(pages: Sequence[Figures], reads: Sequence[Figures], machine: str, plan: Plan) -> str:
    """The docs/benchmarks.md section, between markers so ``--write`` can replace it alone."""
    extraction = {f.case.name: _timing(f) for f in pages}
    page_rows = [
        (
            f.case.name,
            fmt_bytes(f.raw_bytes),
            f"{f.text_chars:,}",
            fmt_bytes(f.text_bytes),
            f"{f.ratio:.2f}",
            *extraction[f.case.name],
        )
        for f in pages
    ]
    read_rows = [(f.case.name, fmt_bytes(f.raw_bytes), *_timing(f), extraction[f.case.name][0]) for f in reads]
    return (
        f"{START}\n## Reading pages: `read_url` (issue 25)\n\n"
        "Command: `uv run --extra dev python -m bench.read_url --write` (also part of the full `python -m bench`; "
        "`--quick` runs it with fewer repetitions). The pages are the project's own (`testkit/sites/pages.py`). "
        f"Extraction is `reader.extract.extract` in-process: the median of {plan.small_runs} runs per page "
        f"({plan.big_runs} for the 2 MB page) after one untimed warm-up. *Text* is the markdown the reader keeps "
        "(UTF-8); *text/raw* divides it by the page's bytes. Absolute times, on "
        f"{machine}; this machine is shared and loaded, so they move between runs.\n\n"
        + table(
            ("page", "raw", "text (chars)", "text", "text/raw", "extraction (median)", "spread"),
            page_rows,
        )
        + "\nA whole read (`UrlReader.read` of the page served by a `FakeSite` on 127.0.0.1: address checks, the "
        "HTTP fetch, extraction in a worker thread), each on a fresh in-memory state so neither the page cache "
        "nor the per-host politeness limit is in it (the two tables are measured one after the other, so on a "
        "loaded machine the difference between them is as noisy as the spread):\n\n"
        + table(("page", "raw", "whole read (median)", "spread", "extraction alone (median, above)"), read_rows)
        + f"{END}\n"
    )


async def run_read_url(quick: bool) -> str:
    """Every page extracted, two of them read whole; the rendered section."""
    plan = QUICK if quick else FULL
    machine = describe_machine()  # before the run, so its load average says how busy the machine was
    pages = [await anyio.to_thread.run_sync(time_extraction, case, plan.runs(case)) for case in CASES]
    reads = [await time_reads(case, plan.runs(case)) for case in READ_CASES]
    load = f", load average {machine.load_average[0]:.2f} (1 min) before the run" if machine.load_average else ""
    return render(pages, reads, f"{render_machine_line(machine)} ({machine.date}{load})", plan)


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Measure, print the section, and with ``--write`` put it into docs/benchmarks.md."""
    parser = argparse.ArgumentParser(prog="python -m bench.read_url", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 runs per page, 1 of the 2 MB page: a smoke run")
    parser.add_argument("--write", action="store_true", help=f"replace the read_url section of {BENCHMARKS_DOC}")
    ns = parser.parse_args(argv)
    out = out or sys.stdout
    section = anyio.run(run_read_url, ns.quick)
    out.write(section)
    if ns.write:
        write_section(section, START, END)
        out.write(f"wrote {BENCHMARKS_DOC}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
