"""The documentation part of the bench: what counts as a page's content, how each output is scored, and its
section of docs/benchmarks.md (on pages the test writes; the real corpus is Debian's, never committed)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import bench.__main__ as bench_main
import bench.run as bench_run
from bench.docs import READ_URL, READABILITY, TRAFILATURA, DocsResult, Tally, fenced_blocks, score, text_f1
from bench.docs_corpus import Gold, load
from bench.docs_report import DOCS_HEADING, render_docs
from bench.machine import Machine

MACHINE = Machine("2026-01-01 00:00 UTC", "Test CPU", 2, None, "Linux", "CPython", {"brave-search-mcp": "0.1.0"})
SPHINX = """<html><body><div class="sphinxsidebar"><a href="x.html">Previous topic</a></div>
<div role="main"><h1>Widgets<a class="headerlink" href="#w">¶</a></h1><p>Widgets are small and useful things.</p>
<div class="highlight-python"><div class="highlight"><pre>a = 1

b = 2
</pre></div></div><table><tr><th>Name</th><th>Size</th></tr><tr><td>bolt</td><td>4 mm</td></tr></table>
<p>More words here so that the page has enough text to count as documentation for the scoring code at all,
and then a few more words to go past the minimum length that the corpus asks of a page.</p></div>
<div class="footer">Copyright the widget makers</div></body></html>"""


def gold() -> Gold:
    page = Gold("sphinx-python", "p.html", "")
    page.text = "Widgets Widgets are small and useful things. a = 1 b = 2 Name Size bolt 4 mm"
    page.code = ["a = 1\n\nb = 2"]
    page.headings = ["Widgets"]
    page.tables = [[["Name", "Size"], ["bolt", "4 mm"]]]
    page.chrome = ["Previous topic", "Copyright the widget makers"]
    return page


def test_the_main_element_is_the_gold_and_the_rest_of_the_page_is_chrome(tmp_path: Path) -> None:
    path = tmp_path / "widgets.html"
    path.write_text(SPHINX, encoding="utf-8")
    found = load("sphinx-python", path)
    assert found is not None
    assert found.headings == ["Widgets"] and found.code == ["a = 1\n\nb = 2"]
    assert found.tables == [[["Name", "Size"], ["bolt", "4 mm"]]]
    assert found.text.startswith("Widgets Widgets are small") and "¶" not in found.text
    assert "Previous topic" in found.chrome and "Copyright the widget makers" in found.chrome and "¶" not in found.text


def test_code_counts_as_fenced_only_when_a_fence_holds_exactly_it() -> None:
    fenced = (
        "# Widgets\n\nWidgets are small and useful things.\n\n```python\na = 1\n\nb = 2\n```\n\n"
        "| Name | Size |\n| --- | --- |\n| bolt | 4 mm |"
    )
    glued = (
        "# Widgets\n\nWidgets are small and useful things. ```\na = 1\n\nb = 2\n```\n\n"
        "Name\n\nSize\n\nbolt\n\n4 mm\n\nPrevious topic"
    )
    good, bad = Tally(), Tally()
    score(good, gold(), fenced)
    score(bad, gold(), glued)
    assert fenced_blocks(fenced) == ["a = 1\n\nb = 2"]
    assert (good.value("code_exact"), good.value("code_fenced"), bad.value("code_exact"), bad.value("code_fenced")) == (
        1.0, 1.0, 1.0, 0.0,
    )  # fmt: skip
    assert good.value("headings") == 1.0 and good.value("cells") == 1.0 and good.value("rows") == 1.0
    assert bad.value("cells") == 1.0 and bad.value("rows") == 0.0  # one paragraph per cell: not a row
    assert good.value("chrome") == 0.0 and bad.value("chrome") == 0.5
    assert good.value("bytes") == len(fenced.encode()) / len(gold().text.encode())


def test_text_f1_leaves_fence_lines_out_and_scores_missing_words() -> None:
    assert text_f1("```rust\none two three four five\n```", "one two three four five") == 1.0
    assert text_f1("nothing alike here at all", "one two three four five") == 0.0
    assert 0.0 < text_f1("one two three four", "one two three four five six") < 1.0


def result(code: float) -> DocsResult:
    tallies = {}
    for name in (READ_URL, TRAFILATURA, READABILITY):
        tally = Tally()
        tally.found.update(code_exact=int(code * 100), code_fenced=99, headings=96, cells=96, rows=91, chrome=1)
        tally.total.update(code_exact=100, code_fenced=100, headings=100, cells=100, rows=100, chrome=100)
        tally.found["bytes"], tally.total["bytes"] = 105, 100
        tally.f1.append(0.96)
        tallies[name] = tally
    versions = {READ_URL: "0.1.0", TRAFILATURA: "2.0", READABILITY: "0.8"}
    return DocsResult(120, {"sphinx-python": 120}, tallies, {"sphinx-python": tallies}, versions)


def test_the_section_puts_each_figure_beside_its_target() -> None:
    section = render_docs(result(0.99), MACHINE, "python -m bench --only docs")
    assert section.startswith(f"{DOCS_HEADING}\n\n120 real documentation pages")
    assert "| Code blocks exact | 0.990 | 0.990 | 0.990 | ≥ 0.99 | met |" in section
    assert "| Bytes per main-text byte | 1.05× | 1.05× | 1.05× | ≤ 1.10× | met |" in section
    assert "| Code blocks exact | 0.980 | 0.980 | 0.980 | ≥ 0.99 | missed |" in render_docs(result(0.98), MACHINE, "x")
    empty = DocsResult(0, {}, {}, {}, {})
    assert "Not measured" in render_docs(empty, MACHINE, "x")


def test_only_docs_replaces_just_its_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text(f"# Benchmarks\n\n## Bursts\n\nfigures\n\n{DOCS_HEADING}\n\nold\n\n## Command\n\nold command\n")
    monkeypatch.setattr(bench_main, "BENCHMARKS_DOC", report)
    monkeypatch.setattr(bench_main, "configure_logging", lambda verbose: None)
    monkeypatch.setattr(bench_run, "measure_docs", lambda: result(0.99))
    monkeypatch.setattr(bench_main, "describe_machine", lambda: MACHINE)
    assert bench_main.main(["--only", "docs"], out=io.StringIO()) == 0
    written = report.read_text(encoding="utf-8")
    assert written.startswith(f"# Benchmarks\n\n## Bursts\n\nfigures\n\n{DOCS_HEADING}\n\n120 real documentation")
    assert "\nold\n" not in written and written.endswith("## Command\n\nold command\n")
    assert "python -m bench --only docs`." in written


def test_a_whole_run_carries_the_docs_section_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = tmp_path / "benchmarks.md"
    kept = f"{DOCS_HEADING}\n\nfigures measured earlier\n\n"
    report.write_text(f"# Benchmarks\n\n{kept}## Command\n\nold\n")
    monkeypatch.setattr(bench_main, "BENCHMARKS_DOC", report)
    monkeypatch.setattr(bench_main, "configure_logging", lambda verbose: None)

    async def nothing_measured(plan: Any, **kwargs: Any) -> bench_run.Results:
        return bench_run.Results(plan=plan, quick=True)

    monkeypatch.setattr(bench_main, "run_all", nothing_measured)
    assert bench_main.main(["--quick"], out=io.StringIO()) == 0
    assert kept in report.read_text(encoding="utf-8")
