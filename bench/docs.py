"""read_url on real documentation pages, beside trafilatura and Readability: does the Markdown keep what a
developer reads by?

The corpus and each page's main element are defined in ``docs_corpus`` (Debian's documentation packages; six
generators). Three outputs per page: read_url's content (``reader.extract.extract`` on the page's bytes, what
the tool pages through), trafilatura's Markdown (its defaults, ``output_format="markdown"``), and Readability
(readability-lxml, a Python port of Mozilla's arc90 algorithm, a dev dependency) whose HTML summary is written
as Markdown by the reader's own per-element rules, so that its figures measure its choice of content. Scores:

- code blocks exact: the block's text, lines and indentation intact, appears in the output; fenced: it is
  the whole content of a fenced block;
- headings: the heading's words are a ``#`` line (glyphs, code and emphasis marks aside);
- table cells: each non-empty cell's words appear; rows: a row of two or more cells has all of them, in
  order, on one line;
- text F1: 4-gram shingles of words (lower-cased ``\\w+``) against the main element's text, per page, averaged;
- chrome leaked: the site's strings (outside the main element, and its controls) found in the output;
- bytes: the output's UTF-8 bytes over the main text's.

Counts are summed over the corpus (a page with many code blocks weighs more); F1 is a mean over pages.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from brave_search_mcp.reader.document import fence_walk
from brave_search_mcp.reader.extract import extract
from brave_search_mcp.reader.links import LinkList

from .docs_corpus import Gold, load, pick_pages, squash

logger = logging.getLogger(__name__)

READ_URL, TRAFILATURA, READABILITY = "read_url", "trafilatura", "readability"
METRICS = ("code_exact", "code_fenced", "headings", "cells", "rows", "f1", "chrome", "bytes")
TARGETS: dict[str, tuple[float, bool]] = {  # metric -> (target, True when higher is better)
    "code_exact": (0.99, True), "code_fenced": (0.98, True), "headings": (0.95, True), "cells": (0.95, True),
    "rows": (0.90, True), "f1": (0.95, True), "chrome": (0.05, False), "bytes": (1.10, False),
}  # fmt: skip
_WORD = re.compile(r"\w+")
_HEADING = re.compile(r"^#{1,6} (.*)$")
_MARKS = re.compile(r"[`*\\]")


@dataclass
class Tally:
    """One output's counts over the corpus."""

    found: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    f1: list[float] = field(default_factory=list)

    def value(self, metric: str) -> float:
        """The metric over the corpus: a share of counts, the mean F1, or the byte ratio."""
        if metric == "f1":
            return sum(self.f1) / len(self.f1) if self.f1 else 0.0
        return self.found[metric] / self.total[metric] if self.total[metric] else 0.0


@dataclass
class DocsResult:
    """Each output's tally, per generator and overall, and the corpus's size."""

    pages: int
    generators: dict[str, int]
    overall: dict[str, Tally]
    by_generator: dict[str, dict[str, Tally]]
    versions: dict[str, str]


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    """The text's word n-grams, counted."""
    words = _WORD.findall(text.lower())
    return Counter(tuple(words[i : i + n]) for i in range(max(len(words) - n + 1, 1)))


def text_f1(output: str, gold: str) -> float:
    """4-gram shingle F1 of ``output`` (its fence lines, which are markup, left out) against ``gold``."""
    prose = "\n".join(line for line, _, toggles in fence_walk(output) if not toggles)
    ours, theirs = shingles(prose), shingles(gold)
    common = sum((ours & theirs).values())
    if not common:
        return 0.0
    precision, recall = common / sum(ours.values()), common / sum(theirs.values())
    return 2 * precision * recall / (precision + recall)


def fenced_blocks(markdown: str) -> list[str]:
    """The content of each fenced code block (lines with trailing blanks dropped)."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line, opener, toggles in fence_walk(markdown):
        if toggles and opener is not None:
            current = []
        elif toggles and current is not None:
            blocks.append("\n".join(current).strip("\n"))
            current = None
        elif current is not None:
            current.append(line.rstrip())
    return blocks


def plain(text: str) -> str:
    """Words as compared in headings and cells: markdown marks out, white space folded."""
    return squash(_MARKS.sub("", text.replace("\\|", "|")))


def score(tally: Tally, gold: Gold, output: str) -> None:
    """Add one page's figures for one output to ``tally``."""
    lines = "\n".join(line.rstrip() for line in output.replace("\xa0", " ").split("\n"))
    blocks = set(fenced_blocks(lines))
    for code in gold.code:
        tally.total["code_exact"] += 1
        tally.total["code_fenced"] += 1
        tally.found["code_exact"] += code in lines
        tally.found["code_fenced"] += code in blocks
    headings = {plain(m.group(1)).rstrip("¶§# ") for m in map(_HEADING.match, lines.split("\n")) if m}
    for heading in gold.headings:
        tally.total["headings"] += 1
        tally.found["headings"] += plain(heading) in headings
    flat = plain(lines)
    row_lines = [plain(line) for line in lines.split("\n") if line.count("|") >= 2 or "\t" in line]
    for table in gold.tables:
        for row in table:
            cells = [plain(cell) for cell in row if plain(cell)]
            tally.total["cells"] += len(cells)
            tally.found["cells"] += sum(cell in flat for cell in cells)
            if len(cells) >= 2:
                tally.total["rows"] += 1
                tally.found["rows"] += any(_in_order(cells, line) for line in row_lines)
    tally.total["chrome"] += len(gold.chrome)
    tally.found["chrome"] += sum(words in flat for words in gold.chrome)
    tally.found["bytes"] += len(output.encode())
    tally.total["bytes"] += len(gold.text.encode())
    tally.f1.append(text_f1(output, gold.text))


def _in_order(cells: list[str], line: str) -> bool:
    at = 0
    for cell in cells:
        at = line.find(cell, at)
        if at < 0:
            return False
        at += len(cell)
    return True


def outputs(gold: Gold) -> dict[str, str]:
    """The three outputs for one page (a reader that fails on it gives an empty output)."""
    import trafilatura
    from readability import Document as Readable

    from brave_search_mcp.reader.markdown import to_markdown  # here: the bench also scores readers without it

    url = f"https://docs.example/{gold.path}"
    found: dict[str, str] = {}
    try:
        found[READ_URL] = extract(url=url, final_url=url, kind="html", content_type="text/html",
                                  body=gold.html.encode(), charset="utf-8").markdown  # fmt: skip
    except Exception as exc:  # the figure counts the failure; the log says what it was
        logger.warning("read_url failed on %s: %s", gold.path, exc)
        found[READ_URL] = ""
    found[TRAFILATURA] = trafilatura.extract(gold.html, output_format="markdown", include_formatting=True) or ""
    try:
        summary = Readable(gold.html).summary(html_partial=True)
        tree = trafilatura.load_html(f"<html><body>{summary}</body></html>")
        found[READABILITY] = to_markdown(tree, url, LinkList(url)) if tree is not None else ""
    except Exception as exc:
        logger.warning("readability failed on %s: %s", gold.path, exc)
        found[READABILITY] = ""
    return found


def measure_docs(per_generator: int | None = None) -> DocsResult:
    """Every output on every page of the corpus, scored; an empty result when no package is installed."""
    picked = pick_pages(per_generator) if per_generator else pick_pages()
    names = (READ_URL, TRAFILATURA, READABILITY)
    overall = {name: Tally() for name in names}
    by_generator: dict[str, dict[str, Tally]] = {}
    counts: Counter[str] = Counter()
    logger.info("docs: %d pages picked, three readers each", len(picked))
    for generator, path in picked:
        gold = load(generator, Path(path))
        if gold is None:
            continue
        counts[generator] += 1
        mine = by_generator.setdefault(generator, {name: Tally() for name in names})
        for name, output in outputs(gold).items():
            score(overall[name], gold, output)
            score(mine[name], gold, output)
    dists = ((READ_URL, "brave-search-mcp"), (TRAFILATURA, "trafilatura"), (READABILITY, "readability-lxml"))
    versions = {name: metadata.version(dist) for name, dist in dists}
    return DocsResult(sum(counts.values()), dict(counts), overall, by_generator, versions)


def met(metric: str, value: float) -> bool:
    """Whether ``value`` meets the issue's target for ``metric``."""
    target, higher = TARGETS[metric]
    return value >= target if higher else value <= target
