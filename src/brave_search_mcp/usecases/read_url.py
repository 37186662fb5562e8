"""read_url: the page behind a search result, read safely, as markdown within a character budget, part by part.

The reader (``reader/``) refuses what a server fetching for a model must not reach, extracts the main
content and caches the document in the shared state, so paging through a long page re-uses it. This
slice turns its parts into the v1 envelope. With ``urls`` it reads up to five pages at once (each within
the per-host politeness limits and the address policy, as one read would be) and gives each its share of
one ``max_chars`` budget and its own section, or its own error: one failed page never fails the others.
It costs no Brave quota and works without a Brave key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from brave_search_mcp._version import __version__
from brave_search_mcp.clock import moved
from brave_search_mcp.models import errors
from brave_search_mcp.models.envelopes import ErrorBody, ErrorEnvelope, ErrorMeta, WarningItem
from brave_search_mcp.models.inputs import ReadArgs
from brave_search_mcp.models.read import (
    PageFailure,
    PageSection,
    ReadEnvelope,
    ReadMeta,
    ReadPagesEnvelope,
    ReadPagesMeta,
)
from brave_search_mcp.reader.render import body_length, effective_max_chars, render_read, split_budget
from brave_search_mcp.render.compact import render_error_text
from brave_search_mcp.usecases.contract import Call, CliShape, Ports, ToolSpec

if TYPE_CHECKING:  # the reader's fetching half (httpcore2, h11) loads on the first read, not with this module
    from brave_search_mcp.reader.reading import ReadResult


async def run(args: ReadArgs, ports: Ports, call: Call) -> tuple[ReadEnvelope | ReadPagesEnvelope, str]:
    """Read ``args.url`` (or its cached document) and return the asked part, or each of ``args.urls``'s parts."""
    call.facts.search_type = "read"
    call.facts.provider = "web"
    if args.urls is not None:
        return await _several(args, args.urls, ports, call)
    assert args.url is not None  # the model's validator: exactly one of url and urls
    started = ports.clock()
    reader = ports.reader
    # The reader keeps the state backend's time; the call's deadline is on the ports' clock.
    result = await reader.read(args.url, deadline=moved(call.deadline, ports.clock, reader.clock), render=args.render)
    call.facts.cached = result.cached
    call.facts.attempts = result.attempts
    answer, text = render_read(
        result.document,
        start_char=args.start_char,
        max_chars=args.max_chars,
        format=args.format,
        section=args.section,
        links=args.links,
    )
    warnings = [WarningItem(**warning) for warning in answer.pop("warnings")]
    meta = ReadMeta(
        requested_url=answer.pop("url"),
        cached=result.cached,
        attempts=result.attempts,
        duration_ms=round((ports.clock() - started) * 1000),
        trace_id=call.trace_id,
        server_version=__version__,
    )
    answer["url"] = answer.pop("final_url")
    return ReadEnvelope(**answer, meta=meta, warnings=warnings), text


async def _several(
    args: ReadArgs, urls: list[str], ports: Ports, call: Call
) -> tuple[ReadEnvelope | ReadPagesEnvelope, str]:
    """Every page at once, each answering or failing on its own, within one shared budget."""
    started = ports.clock()
    reader = ports.reader
    for index, url in enumerate(urls):  # a URL that is not one is the caller's mistake: the whole call says so
        try:
            reader.check(url)
        except errors.InvalidArgument as exc:
            raise errors.InvalidArgument(f"urls[{index}]: {exc.message}", field=f"urls[{index}]") from None
        except errors.FetchBlocked:
            pass  # a refusal (file:, credentials) is that page's own section, as for any other refused page
    deadline = moved(call.deadline, ports.clock, reader.clock)
    answered: dict[int, ReadResult | errors.BraveSearchError] = {}

    async def one(index: int, url: str) -> None:
        try:
            answered[index] = await reader.read(url, deadline=deadline, render=args.render)
        except errors.BraveSearchError as exc:
            answered[index] = exc

    async with anyio.create_task_group() as group:
        for index, url in enumerate(urls):
            group.start_soon(one, index, url)
    results = [answered[index] for index in range(len(urls))]
    failures = [(url, r) for url, r in zip(urls, results, strict=True) if isinstance(r, errors.BraveSearchError)]
    if len(failures) == len(urls):  # nothing to show: the call fails with the first error's code, naming each page
        pages = [{"url": url, "code": exc.code.value, "message": exc.message} for url, exc in failures]
        failed = failures[0][1].for_call([], pages=pages)  # a copy: the reader's error may be shared
        failed.message = every_page_failed(pages)
        raise failed
    warnings: list[dict[str, str]] = []
    budget = effective_max_chars(args.max_chars, warnings, pages=len(urls))
    needs = [None if isinstance(r, errors.BraveSearchError) else body_length(r.document, args.format) for r in results]
    sections: list[PageSection | PageFailure] = []
    texts: list[str] = []
    for url, result, share in zip(urls, results, split_budget(needs, budget), strict=True):
        if isinstance(result, errors.BraveSearchError):
            body = ErrorBody(code=result.code.value, message=result.message, retryable=result.retryable,
                             details=result.details)  # fmt: skip
            sections.append(PageFailure(requested_url=url, error=body))
            texts.append(f"URL: {url}\n" + _error_text(body, call.trace_id))
            continue
        answer, text = render_read(result.document, max_chars=share, format=args.format, links=args.links, share=True)
        sections.append(_section(answer, result.cached))
        texts.append(text)
    read = [r for r in results if not isinstance(r, errors.BraveSearchError)]
    call.facts.cached = all(r.cached for r in read)
    call.facts.attempts = sum(r.attempts for r in read) + sum(int(e.details.get("attempts", 0)) for _, e in failures)
    meta = ReadPagesMeta(
        max_chars=budget, read=len(read), failed=len(failures), cached=sum(r.cached for r in read),
        attempts=call.facts.attempts, duration_ms=round((ports.clock() - started) * 1000), trace_id=call.trace_id,
        server_version=__version__,
    )  # fmt: skip
    envelope = ReadPagesEnvelope(pages=sections, meta=meta, warnings=[WarningItem(**w) for w in warnings])
    return envelope, _joined(texts, meta, warnings)


# The error text shows a message of at most 600 characters (render_error_text): every page's line must fit in it.
_FAILED_MESSAGE_CHARS = 560


def every_page_failed(pages: list[dict[str, str]]) -> str:
    """One message naming every page and why it failed, as the text shows it (the JSON has each in full)."""
    head = f"None of the {len(pages)} pages could be read: "
    fixed = len(head) + sum(len(p["url"]) + len(p["code"]) + 8 for p in pages)
    room = max(0, (_FAILED_MESSAGE_CHARS - fixed) // len(pages))
    lines = []
    for number, page in enumerate(pages, start=1):
        why = page["message"] if len(page["message"]) <= room else page["message"][: max(0, room - 1)] + "…"
        lines.append(f"[{number}] {page['url']} {page['code']}" + (f": {why}" if room > 10 else ""))
    return head + "; ".join(lines)


def _section(answer: dict[str, Any], cached: bool) -> PageSection:
    """One answered page of a several-page read, from its rendered part."""
    warnings = [WarningItem(**warning) for warning in answer.pop("warnings")]
    requested = answer.pop("url")
    answer["url"] = answer.pop("final_url")
    return PageSection(**answer, requested_url=requested, cached=cached, warnings=warnings)


def _error_text(body: ErrorBody, trace_id: str) -> str:
    """A failed page's paragraph: the same wording as the error envelope of a one-page read."""
    meta = ErrorMeta(provider="web", trace_id=trace_id, server_version=__version__, tool=SPEC.name)
    return render_error_text(ErrorEnvelope(error=body, meta=meta))


def _joined(texts: list[str], meta: ReadPagesMeta, warnings: list[dict[str, str]]) -> str:
    """The pages' texts one after the other, each under a numbered rule, after one line about the whole read."""
    count = len(texts)
    head = f"Read {meta.read} of {count} pages within max_chars {meta.max_chars} (shared)"
    head += f"; {meta.failed} failed." if meta.failed else "."
    parts = [head, *(f"--- page {n} of {count} ---\n{text}" for n, text in enumerate(texts, start=1))]
    parts.extend(f"! {warning['code']}: {warning['message']}" for warning in warnings)
    return "\n\n".join(parts)


SPEC = ToolSpec(
    name="read_url",
    title="Read a web page",
    description=(
        "Read a web page or PDF (e.g. a search result) as clean markdown: main content only, within max_chars "
        "(default 8000); next_start_char gives the next part, section one heading's part; urls reads up to 5 at "
        "once. No Brave quota."
    ),
    help=(
        "Fetches one http(s) URL (private, loopback and metadata addresses are refused, also after redirects; at "
        "most 5 redirects; size and time capped), extracts the main content (HTML, PDF, text, markdown, JSON) and "
        "returns one part of it: title, final URL, site, published date, total_chars, next_start_char. Pages are "
        "cached, so paging with start_char re-uses the first read. format text drops markdown marks. urls (1-5) "
        "reads pages concurrently, one section each (or its own error), max_chars split evenly between them with "
        "what a short page leaves going to the others; page on with url and that page's next_start_char. links "
        "same_site adds the in-content links on the page's site (to walk docs), all every link (navigation, "
        "footer, other sites), capped at 100 links and 8 KB. render auto draws a page that only JavaScript draws (an "
        "app shell) in headless Chromium, when installed (the browser extra); rendered says it was; every request "
        "the page makes passes the same address policy."
    ),
    guide="the main content of a web page or PDF as markdown, part by part (read what a search found)",
    input_model=ReadArgs,
    run=run,
    cli=CliShape("read", "read web pages as markdown, part by part", positional="url", positional_list="urls"),
    library="read_url",
)
