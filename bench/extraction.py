"""read_url's main text on a public article-extraction benchmark, beside trafilatura called directly.

The benchmark is Zyte's (scrapinghub/article-extraction-benchmark): 181 news and blog pages with hand-made
ground truth and its own ``evaluate.py`` (4-gram shingle precision and recall per page, averaged). Nothing of
it lives in this repository: ``--aeb PATH`` names a checkout, and its code and data are only read from there.

Each page is served by a real local HTTP site (``testkit.sites``, spread over eight loopback addresses so the
reader's per-host politeness limit does not set the pace) and read through the ``read_url`` tool exactly as
an agent calls it (fetch, decode, extract, render), paging on until the end with ``max_chars`` 50,000. What
counts as our main text is the text the agent reads minus only the reader's own lines: the header (title,
URL, site, type, part), the outline of a cut page, the next-part hint and warning lines. trafilatura runs on
the same pages decoded as the benchmark decodes them, once with its defaults and once as the benchmark's own
runner calls it (``include_comments=False``). The benchmark's ``evaluate.py`` (standard library only, so it
runs with this interpreter) then scores the three outputs, written in its output format.
"""

from __future__ import annotations

import gzip
import json
import logging
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio

from brave_search_mcp.compose import open_tools
from brave_search_mcp.tools.boundary import ToolBoundary
from testkit.settings import make_settings
from testkit.sites import FakeSite

logger = logging.getLogger(__name__)

READ_URL, DEFAULTS, AS_RUN = "read_url", "trafilatura_defaults", "trafilatura_aeb_runner"
HOSTS = 8  # loopback addresses the pages are spread over (the reader allows 2 requests/s per host)
READERS = 4  # pages read at once
PART_CHARS = 50_000
MAX_PARTS = 40  # a page longer than this many parts is cut (none of the benchmark's is)
BOOTSTRAP = 1000
METRICS = ("f1", "precision", "recall", "accuracy")


@dataclass(frozen=True)
class Score:
    """One output's figures as ``evaluate.py`` printed them: each metric and its bootstrap deviation."""

    name: str
    values: dict[str, float]
    deviations: dict[str, float]


@dataclass
class ExtractionResult:
    """The benchmark's figures for ours and trafilatura's, and what went wrong on the way."""

    pages: int
    scores: list[Score]
    trafilatura: str
    failed: dict[str, str] = field(default_factory=dict)  # page id -> error code of a read that failed


def main_text(text: str) -> str:
    """What an agent reads of one part, minus the reader's fixed lines (header, outline, next-part, warnings)."""
    _, _, body = text.partition("\n\n")
    if body.startswith("Outline (pass a heading"):
        body = body.partition("\n\n")[2]
    lines = body.split("\n")
    while lines and (lines[-1].startswith("! ") or not lines[-1].strip() or _is_hint(lines[-1])):
        lines.pop()
    return "\n".join(lines)


def _is_hint(line: str) -> bool:
    return line.startswith("[") and " more characters. For the next part call read_url" in line


def load_pages(aeb: Path) -> dict[str, bytes]:
    """Every page of the checkout, by id, as the gzip-decompressed bytes a site would send."""
    truth = json.loads((aeb / "ground-truth.json").read_text(encoding="utf-8"))
    pages = {path.name.split(".")[0]: gzip.decompress(path.read_bytes()) for path in (aeb / "html").glob("*.html.gz")}
    missing = set(truth) - set(pages)
    if missing or not (aeb / "evaluate.py").is_file():
        what = f"{len(missing)} pages or evaluate.py missing"
        raise FileNotFoundError(f"{aeb} is not a checkout of the article-extraction benchmark ({what})")
    return {key: pages[key] for key in truth}


async def read_all(pages: dict[str, bytes]) -> tuple[dict[str, str], dict[str, str]]:
    """Our main text of every page, read through the tool; and the error code of each page that failed."""
    texts: dict[str, str] = {}
    failed: dict[str, str] = {}
    with ExitStack() as stack:
        sites = [stack.enter_context(FakeSite(host=f"127.0.0.{n + 1}")) for n in range(HOSTS)]
        urls = {}
        for index, (key, body) in enumerate(pages.items()):
            site = sites[index % HOSTS]
            site.page(f"/{key}", body, content_type="text/html; charset=utf-8")
            urls[key] = site.url(f"/{key}")
        settings = make_settings(read_allowed_hosts=("127.0.0.0/24",))
        async with open_tools(settings) as tools:
            limit = anyio.Semaphore(READERS)

            async def one(key: str) -> None:
                async with limit:
                    texts[key] = await _read_whole(tools, urls[key], failed, key)

            async with anyio.create_task_group() as group:
                for key in pages:
                    group.start_soon(one, key)
    return texts, failed


async def _read_whole(tools: ToolBoundary, url: str, failed: dict[str, str], key: str) -> str:
    parts: list[str] = []
    start: int | None = 0
    while start is not None and len(parts) < MAX_PARTS:
        outcome = await tools.call("read_url", {"url": url, "start_char": start, "max_chars": PART_CHARS})
        if outcome.is_error:
            failed[key] = str(outcome.structured["error"]["code"])
            break
        parts.append(main_text(outcome.text))
        start = outcome.structured.get("next_start_char")
    return "".join(parts)


def trafilatura_texts(pages: dict[str, bytes], **options: Any) -> dict[str, str]:
    """trafilatura on each page decoded as the benchmark's runner decodes it (UTF-8)."""
    import trafilatura

    return {key: trafilatura.extract(body.decode("utf-8"), **options) or "" for key, body in pages.items()}


def evaluate(aeb: Path, outputs: dict[str, dict[str, str]], version: Callable[[str], str]) -> list[Score]:
    """Run the benchmark's own ``evaluate.py`` on the outputs (written in its format) and read its figures."""
    with tempfile.TemporaryDirectory(prefix="aeb-") as tmp:
        work = Path(tmp)
        (work / "output").mkdir()
        (work / "ground-truth.json").write_bytes((aeb / "ground-truth.json").read_bytes())
        for name, texts in outputs.items():
            body = {"version": version(name), "output": {key: {"articleBody": text} for key, text in texts.items()}}
            (work / "output" / f"{name}.json").write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
        command = [sys.executable, str(aeb / "evaluate.py"), "--n-bootstrap", str(BOOTSTRAP), "--output", "r.json"]
        subprocess.run(command, cwd=work, check=True, capture_output=True, text=True, timeout=600)
        found = json.loads((work / "r.json").read_text(encoding="utf-8"))
    return [
        Score(name, {m: float(found[name][m]) for m in METRICS}, {m: float(found[name][f"{m}_std"]) for m in METRICS})
        for name in outputs
    ]


async def measure_extraction(aeb: Path) -> ExtractionResult:
    """Ours and trafilatura's on every page of the checkout at ``aeb``, scored by its ``evaluate.py``."""
    pages = load_pages(aeb)
    logger.info("extraction: %d pages through read_url, then trafilatura twice", len(pages))
    ours, failed = await read_all(pages)
    defaults = await anyio.to_thread.run_sync(trafilatura_texts, pages)
    as_run = await anyio.to_thread.run_sync(lambda: trafilatura_texts(pages, include_comments=False))
    traf = metadata.version("trafilatura")
    ours_version = metadata.version("brave-search-mcp")
    scores = evaluate(aeb, {READ_URL: ours, DEFAULTS: defaults, AS_RUN: as_run},
                      lambda name: ours_version if name == READ_URL else traf)  # fmt: skip
    return ExtractionResult(len(pages), scores, traf, failed)
