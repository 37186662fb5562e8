"""read_url: the page behind a search result, read safely, as markdown within a character budget, part by part.

The reader (``reader/``) refuses what a server fetching for a model must not reach, extracts the main
content and caches the document in the shared state, so paging through a long page re-uses it. This
slice turns its parts into the v1 envelope. It costs no Brave quota and works without a Brave key.
"""

from __future__ import annotations

from brave_search_mcp._version import __version__
from brave_search_mcp.clock import moved
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.read import PageHeading, ReadEnvelope, ReadMeta
from brave_search_mcp.reader.render import ReadArgs, render_read
from brave_search_mcp.usecases.contract import Call, CliShape, Ports, ToolSpec


async def run(args: ReadArgs, ports: Ports, call: Call) -> tuple[ReadEnvelope, str]:
    """Read ``args.url`` (or its cached document) and return the asked part and its text."""
    started = ports.clock()
    reader = ports.reader
    call.facts.search_type = "read"
    call.facts.provider = "web"
    # The reader keeps the state backend's time; the call's deadline is on the ports' clock.
    deadline = moved(call.deadline, ports.clock, reader.clock)
    result = await reader.read(args.url, deadline=deadline)
    call.facts.cached = result.cached
    call.facts.attempts = 0 if result.cached else 1
    answer, text = render_read(
        result.document, start_char=args.start_char, max_chars=args.max_chars, format=args.format, section=args.section
    )
    envelope = ReadEnvelope(
        title=answer["title"],
        url=answer["final_url"],
        site=answer["site"],
        published=answer["published"],
        content_type=answer["content_type"],
        format=answer["format"],
        section=answer["section"],
        start_char=answer["start_char"],
        end_char=answer["end_char"],
        total_chars=answer["total_chars"],
        next_start_char=answer["next_start_char"],
        headings=[PageHeading(**entry) for entry in answer["headings"]],
        content=answer["content"],
        meta=ReadMeta(
            requested_url=answer["url"],
            cached=result.cached,
            attempts=call.facts.attempts,
            duration_ms=round((ports.clock() - started) * 1000),
            trace_id=call.trace_id,
            server_version=__version__,
        ),
        warnings=[WarningItem(**warning) for warning in answer["warnings"]],
    )
    return envelope, text


SPEC = ToolSpec(
    name="read_url",
    title="Read a web page",
    description=(
        "Read a web page or PDF (e.g. a search result) as clean markdown: main content only, within max_chars "
        "(default 8000); next_start_char gives the next part, section one heading's part. No Brave quota."
    ),
    help=(
        "Fetches one http(s) URL (private, loopback and metadata addresses are refused, also after redirects; at "
        "most 5 redirects; size and time capped), extracts the main content (HTML, PDF, text, markdown, JSON) and "
        "returns one part of it: title, final URL, site, published date, total_chars, next_start_char. Pages are "
        "cached, so paging with start_char re-uses the first read. format text drops markdown marks."
    ),
    guide="the main content of a web page or PDF as markdown, part by part (read what a search found)",
    input_model=ReadArgs,
    run=run,
    cli=CliShape("read", "read a web page as markdown, part by part", positional="url"),
    library="read_url",
)
