"""The extraction part of the bench: our main text read through the tool, the benchmark's evaluate.py on it, and
its section of docs/benchmarks.md, on a stand-in checkout the test writes (the real benchmark never enters the
repository)."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import bench.__main__ as bench_main
from bench.extraction import AS_RUN, DEFAULTS, READ_URL, ExtractionResult, Score, main_text, measure_extraction
from bench.machine import Machine
from bench.report import EXTRACTION_HEADING, MET, MISSED, render_extraction, section_of, with_section
from bench.run import Results
from testkit.sites.pages import page

# A stand-in for the benchmark's evaluate.py: the same command line and output file, a simple word overlap score.
STAND_IN = """
import argparse, json, re
from pathlib import Path
parser = argparse.ArgumentParser(); parser.add_argument('--n-bootstrap'); parser.add_argument('--output')
args = parser.parse_args()
truth = json.loads(Path('ground-truth.json').read_text())
words = lambda text: set(re.findall(r'\\w+', text or ''))
found = {}
for path in sorted(Path('output').glob('*.json')):
    data = json.loads(path.read_text())['output']
    pairs = [(words(truth[k]['articleBody']), words(data[k]['articleBody'])) for k in truth]
    precision = sum(len(t & p) / max(len(p), 1) for t, p in pairs) / len(pairs)
    recall = sum(len(t & p) / max(len(t), 1) for t, p in pairs) / len(pairs)
    f1 = 2 * precision * recall / (precision + recall)
    found[path.stem] = {'f1': f1, 'precision': precision, 'recall': recall, 'accuracy': 0.0,
                        'f1_std': 0.01, 'precision_std': 0.01, 'recall_std': 0.01, 'accuracy_std': 0.0}
Path(args.output).write_text(json.dumps(found))
"""
MACHINE = Machine("2026-01-01 00:00 UTC", "Test CPU", 2, None, "Linux", "CPython", {"brave-search-mcp": "0.1.0"})
TRUTH = {
    "bridge": "For ninety years the footbridge at Aldermill carried schoolchildren, cyclists and the odd stubborn goat",
    "retries": "A job that fails is not lost: Quayside puts it back on its queue according to the job's retry policy.",
}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "aeb"
    (root / "html").mkdir(parents=True)
    for key, name in (("bridge", "article.html"), ("retries", "docs.html")):
        (root / "html" / f"{key}.html.gz").write_bytes(gzip.compress(page(name)))
    (root / "ground-truth.json").write_text(json.dumps({k: {"articleBody": v} for k, v in TRUTH.items()}))
    (root / "evaluate.py").write_text(STAND_IN)
    return root


def test_main_text_drops_only_the_readers_own_lines() -> None:
    text = (
        "# A title\nURL: https://x.example/a\nSite: X · Type: web page\nPart: characters 0-40 of 90\n\n"
        "Outline (pass a heading as section to read just that part):\n- A\n- B\n\n"
        "# A\n\nThe words of the page.\n\n[50 more characters. For the next part call read_url with the same url, "
        "format 'markdown' and start_char=40.]\n! PAGE_INCOMPLETE: the end is missing."
    )
    assert main_text(text) == "# A\n\nThe words of the page."
    assert main_text("# T\nURL: u\nType: web page\n\nOnly words.") == "Only words."


def test_our_text_is_read_through_the_tool_and_scored_by_the_checkouts_evaluate(checkout: Path) -> None:
    found = anyio.run(measure_extraction, checkout)
    assert found.pages == 2 and found.failed == {}
    scores = {score.name: score for score in found.scores}
    assert set(scores) == {READ_URL, DEFAULTS, AS_RUN}
    assert scores[READ_URL].values["recall"] == 1.0  # every ground-truth word, and no header line in the way
    assert 0.0 < scores[READ_URL].values["precision"] < 1.0 and scores[READ_URL].deviations["f1"] == 0.01


def test_a_partial_run_replaces_only_the_extraction_section(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Bursts\n\nfigures\n\n## Command\n\n```\npython -m bench\n```\n")
    monkeypatch.setattr(bench_main, "BENCHMARKS_DOC", report)
    monkeypatch.setattr(bench_main, "configure_logging", lambda verbose: None)
    assert bench_main.main(["--only", "extraction", "--aeb", str(checkout)], out=io.StringIO()) == 0
    written = report.read_text(encoding="utf-8")
    assert written.startswith("# Benchmarks\n\n## Bursts\n\nfigures\n\n## Main-text extraction\n\n")
    assert written.endswith("(PATH: a checkout of the benchmark, not part of this repository).\n\n## Command\n\n"
                            "```\npython -m bench\n```\n")  # fmt: skip
    assert str(checkout) not in written and "--only extraction --aeb PATH" in written
    with pytest.raises(SystemExit) as exited:  # the benchmark is not in the repository: it must be named
        bench_main.main(["--only", "extraction"], out=io.StringIO())
    assert exited.value.code == 2


def test_the_section_says_met_only_when_ours_is_not_lower_anywhere() -> None:
    def result(precision: float) -> ExtractionResult:
        values = {"f1": 0.95, "precision": 0.93, "recall": 0.98, "accuracy": 0.25}
        ours = Score(READ_URL, {**values, "precision": precision}, dict.fromkeys(values, 0.01))
        others = [Score(name, values, dict.fromkeys(values, 0.01)) for name in (DEFAULTS, AS_RUN)]
        return ExtractionResult(181, [ours, *others], "2.3.1")

    assert f"**{MET}**" in render_extraction(result(0.93), MACHINE, "python -m bench")
    assert f"**{MISSED}**" in render_extraction(result(0.92), MACHINE, "python -m bench")
    section = render_extraction(result(0.93), MACHINE, "python -m bench")
    document = with_section("# B\n\n## Command\n\nx\n", EXTRACTION_HEADING, section)
    assert section_of(document, EXTRACTION_HEADING) == section.rstrip("\n") + "\n\n"
    assert with_section(document, EXTRACTION_HEADING, section) == document  # replaced in place, not added twice
    assert with_section(document, EXTRACTION_HEADING, None) == document


def test_a_whole_run_without_the_checkout_carries_the_extraction_section_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "benchmarks.md"
    kept = f"{EXTRACTION_HEADING}\n\nfigures measured earlier\n\n"
    report.write_text(f"# Benchmarks\n\n{kept}## Command\n\nold\n")
    monkeypatch.setattr(bench_main, "BENCHMARKS_DOC", report)
    monkeypatch.setattr(bench_main, "configure_logging", lambda verbose: None)

    async def nothing_measured(plan: Any, **kwargs: Any) -> Results:
        return Results(plan=plan, quick=True)

    monkeypatch.setattr(bench_main, "run_all", nothing_measured)
    assert bench_main.main(["--quick"], out=io.StringIO()) == 0
    written = report.read_text(encoding="utf-8")
    assert kept in written and "## Command\n\n```\n" in written and "old" not in written
