"""``python -m bench``: run the regression harness, print the report, and (unless told not to) write it.

Exit status: 0 whenever the bench ran, targets met or not (CI does not judge timings on shared machines); 1 when
the bench itself broke; 2 on bad usage.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import anyio

from .docs_report import DOCS_HEADING
from .fleet import FLEET_HEADING
from .machine import describe_machine
from .report import (
    EXTRACTION_HEADING,
    RENDER_HEADING,
    SESSION_HEADING,
    kept_sections,
    render_document,
    section_of,
    with_section,
)
from .run import DOCS, EXTRACTION, FULL, PARTS, QUICK, run_all
from .tables import BENCHMARKS_DOC

logger = logging.getLogger("bench")


def build_parser() -> argparse.ArgumentParser:
    """Options of the bench command."""
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="brave-search-mcp's regression harness (a fake Brave on 127.0.0.1 only)."
    )
    parser.add_argument("--quick", action="store_true", help="every part once, few repetitions (CI)")
    parser.add_argument("--no-write", action="store_true", help="print the report only")
    parser.add_argument(
        "--output", type=Path, help=f"where to write the report (default {BENCHMARKS_DOC}; a partial run needs it)"
    )
    parser.add_argument(
        "--only", action="append", choices=(*PARTS, EXTRACTION, DOCS), help="run this part only (repeatable)"
    )
    parser.add_argument(
        "--aeb",
        type=Path,
        metavar="PATH",
        help="a checkout of scrapinghub/article-extraction-benchmark: adds the "
        "extraction part (read_url's main text beside trafilatura, scored by the benchmark's evaluate.py)",
    )
    parser.add_argument("--no-official", action="store_true", help="leave Brave's official server out of the session")
    parser.add_argument("--verbose", action="store_true", help="log progress at DEBUG level")
    return parser


def command_line(argv: Sequence[str]) -> str:
    """The command as a reader would type it to reproduce this run."""
    args = "".join(f" {arg}" for arg in argv)
    return (
        f"uv run --extra dev python -m bench{args}"
        if os.environ.get("UV_RUN_RECURSION_DEPTH")
        else f"python -m bench{args}"
    )


QUIET_LOGGERS = ("testkit", "httpx2", "httpcore2", "mcp")  # the fakes and the MCP clients' HTTP stack


def configure_logging(verbose: bool) -> None:
    """Progress on stderr; the per-request lines of the fakes and of the clients' HTTP stack (one "HTTP Request"
    line per call, hundreds inside a timed wall) stay quiet."""
    level = logging.DEBUG if verbose else logging.INFO
    logging.basicConfig(stream=sys.stderr, level=level, format="%(asctime)s bench: %(message)s")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the bench; see the module docstring for the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    ns = parser.parse_args(args)
    if EXTRACTION in (ns.only or ()) and ns.aeb is None:
        parser.error("--only extraction needs --aeb PATH (a checkout of the article-extraction benchmark)")
    configure_logging(ns.verbose)
    out = out or sys.stdout
    # A partial run never replaces the whole report unless told where to write; the extraction, docs, session,
    # fleet and render parts alone replace their own sections of it.
    sections = {
        EXTRACTION: EXTRACTION_HEADING,
        "session": SESSION_HEADING,
        "fleet": FLEET_HEADING,
        "render": RENDER_HEADING,
        DOCS: DOCS_HEADING,
    }
    alone = bool(ns.only) and set(ns.only) <= set(sections)
    target = None if ns.no_write else ns.output or (None if ns.only and not alone else BENCHMARKS_DOC)
    parts = ns.only or (*PARTS, *([EXTRACTION] if ns.aeb else []))
    machine = describe_machine()  # before the run, so its load average says how busy the machine was
    try:
        results = anyio.run(
            lambda: run_all(
                QUICK if ns.quick else FULL, quick=ns.quick, parts=parts, official=not ns.no_official, aeb=ns.aeb
            )
        )
    except KeyboardInterrupt:
        sys.stderr.write("bench: interrupted\n")
        return 130
    except Exception:
        logger.exception("the bench itself failed")
        return 1
    earlier = target.read_text(encoding="utf-8") if target is not None and target.exists() else ""
    shown = [("PATH" if ns.aeb is not None and arg == str(ns.aeb) else arg) for arg in args]  # not this machine's
    document = render_document(
        results,
        machine,
        command_line(shown),
        carried=section_of(earlier, EXTRACTION_HEADING),
        carried_render=section_of(earlier, RENDER_HEADING),
        carried_docs=section_of(earlier, DOCS_HEADING),
    )
    if alone and earlier and ns.output is None:
        rendered, document = document, earlier
        for part in dict.fromkeys(ns.only or ()):
            document = with_section(document, sections[part], section_of(rendered, sections[part]))
    elif earlier and ns.output is None:
        document = kept_sections(earlier, document)
    out.write(document)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(document, encoding="utf-8")
        out.write(f"\nwrote {target}\n")
    elif ns.only and not ns.no_write:
        out.write(f"\n(a partial run: {BENCHMARKS_DOC.name} left alone; --output PATH writes this one)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
