"""The read_url bench: its pages, its figures and its section; run once each, never judged on time."""

from __future__ import annotations

import pytest

from bench.read_url import CASES, END, QUICK, START, Figures, render, time_extraction, time_reads
from testkit.sites.pages import SAVED


def test_every_saved_page_and_a_two_megabyte_one_are_measured() -> None:
    assert {case.source for case in CASES} == {*SAVED, "big"}
    big = next(case for case in CASES if case.source == "big")
    assert 1_990_000 < len(big.body()) < 2_010_000
    assert QUICK.runs(big) == 1 and QUICK.runs(CASES[0]) == QUICK.small_runs


def test_extraction_figures_count_the_raw_bytes_and_the_text_kept() -> None:
    forum = next(case for case in CASES if case.source == "forum.html")
    figures = time_extraction(forum, 2)
    assert figures.raw_bytes == len(forum.body())
    assert 0 < figures.text_chars <= figures.text_bytes < figures.raw_bytes
    assert 0 < figures.ratio < 1 and len(figures.seconds) == 2


@pytest.mark.anyio
async def test_a_whole_read_through_a_fake_site_keeps_what_extraction_keeps() -> None:
    pdf = next(case for case in CASES if case.kind == "pdf")
    read = await time_reads(pdf, 1)
    assert (read.raw_bytes, read.text_chars) == (len(pdf.body()), time_extraction(pdf, 1).text_chars)
    assert len(read.seconds) == 1


def test_the_section_has_both_tables_between_its_markers() -> None:
    pages = [Figures(case, 1000, 400, 420, [0.002, 0.004]) for case in CASES]
    reads = [Figures(CASES[1], 1000, 400, 420, [0.010])]
    section = render(pages, reads, "Example CPU, 2 CPUs", QUICK)
    assert section.startswith(START) and section.endswith(f"{END}\n")
    assert "| docs page with code | 1,000 B | 400 | 420 B | 0.42 | 3.00 ms | p10–p90" in section
    assert "| docs page with code | 1,000 B | 10.0 ms | p10–p90 10.0 ms – 10.0 ms; n=1 | 3.00 ms |" in section
    assert "Example CPU, 2 CPUs" in section and "python -m bench.read_url --write" in section
