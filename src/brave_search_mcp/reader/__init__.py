"""read_url's core: read one web page safely and hand the model its main content as markdown, part by part.

This folder owns everything between a URL and the text the model reads: the address policy
(``addresses``: operator opt-ins, IP classes refused, resolve-then-check), the pinned transport
(``transport``: connects only to the checked addresses, Host/SNI/certificate stay the host name), the safe
fetcher (``fetch``: manual redirects re-checked per hop, politeness limiter, body cap, timeout, status →
typed error), content handling (``content``: types, sniffing, charsets; ``extract``: HTML via trafilatura,
PDF via pypdf, text/markdown/JSON; ``links``: a page's links), the document value (``document``: headings,
sections, cache bytes), the cache-backed read (``reading``) and one part's rendering (``render``). It imports
only ``models``, ``render.text``, ``config``, the state and rate-limit interfaces and ``upstream/`` (capped
bodies, transport errors, the one retry policy), never ``brave/`` (tests/test_architecture.py).

Contract for the tool (wired by the composition root):

* ``UrlReader(settings, backend, clock=<the state backend's clock>)`` once; ``await reader.read(url,
  deadline=...)`` → ``ReadResult(document, cached)``; ``read_document(url, settings=, backend=, clock=,
  deadline=)`` does the same without keeping a reader.
* ``render_read(document, start_char=0, max_chars=8000, format="markdown"|"text", section=None, links=None)``
  → ``(structured dict, text)``: pure and cheap, so paging re-uses the cached document. The dict has title,
  url, final_url, site, published, content_type, format, section, start_char, end_char, total_chars,
  next_start_char (None at the end), headings, content, warnings (``{code, message}``) and, when asked,
  links and links_total. ``split_budget`` shares one budget between several pages.
* ``ReadArgs`` (``models.inputs``) is the strict argument model (url or 1-5 urls, start_char, max_chars
  500-50,000 clamped, format, section, links).
* Failures are ``errors.BraveSearchError`` subclasses: INVALID_ARGUMENT (bad url, section, start_char),
  FETCH_BLOCKED (details.reason: url, redirect, credentials, address, resolution, too_many_redirects),
  NOT_FOUND, FETCH_FORBIDDEN, UPSTREAM_ERROR (429/5xx retryable, naming the site), TIMEOUT,
  NETWORK_ERROR, RESPONSE_TOO_LARGE, PARSE_ERROR, UNSUPPORTED_CONTENT, RATE_LIMITED (the host's
  politeness slot is booked past the deadline).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .document import Document, Heading
from .render import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS, ReadArgs, render_read, split_budget

if TYPE_CHECKING:
    from .reading import ReadResult, UrlReader, read_document

_FETCHING = frozenset({"ReadResult", "UrlReader", "read_document"})

__all__ = [
    "DEFAULT_MAX_CHARS",
    "MAX_MAX_CHARS",
    "MIN_MAX_CHARS",
    "Document",
    "Heading",
    "ReadArgs",
    "ReadResult",
    "UrlReader",
    "read_document",
    "render_read",
    "split_budget",
]


def __getattr__(name: str) -> Any:
    """The fetching half (``reading``: httpcore2, h11, fetch and extract) is imported when first asked for, so a
    server that imports this package for read_url's argument model loads none of it until a page is read."""
    if name in _FETCHING:
        from . import reading

        return getattr(reading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """What the package exports, the lazily imported names included."""
    return sorted(__all__)
