"""A page's links for ``read_url``'s ``links`` argument: what an agent follows to walk a site without guessing URLs.

The links come from the fetched HTML, resolved against ``<base href>`` and the final URL (http(s) only: never
``javascript:``, ``mailto:`` and the like, never an in-page anchor or a link back to the page itself), and are
deduplicated by URL without its fragment. ``all`` lists every ``<a href>`` in page order, navigation and
footer included. ``same_site`` lists the links the main text kept, in its order, that stay on the page's own
site: trafilatura judges navigation, sidebars and footers to be chrome, and the reader takes its word rather
than guessing from class names. What is shown is capped by count and bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urldefrag, urljoin, urlsplit

from brave_search_mcp.models.sites import host_key
from brave_search_mcp.render.text import clean_text, http_url, one_line

LinkScope = Literal["same_site", "all"]
MAX_STORED_LINKS = 1_000  # what the cached document keeps of a page's links (a page rarely has more worth keeping)
MAX_SHOWN_LINKS = 100  # what one answer shows...
MAX_SHOWN_BYTES = 8_000  # ...and in at most this many bytes of link lines (about 2,000 tokens)
TEXT_LIMIT = 120


@dataclass(frozen=True)
class Link:
    """One link of a page: its text and its absolute URL."""

    text: str
    url: str


def target_key(url: str) -> str:
    """How links are compared: the absolute URL without its fragment (``page#a`` and ``page#b`` are one page)."""
    return urldefrag(url)[0]


def link_base(tree: Any, final_url: str) -> str:
    """What the page's relative links are relative to: its ``<base href>``, else its own final URL."""
    for href in tree.xpath("//base/@href")[:1]:
        return urljoin(final_url, str(href).strip())
    return final_url


def resolved(href: str, base: str) -> str | None:
    """``href`` as the absolute http(s) URL a browser would follow, or None: an in-page ``#anchor``, or
    ``javascript:``, ``mailto:`` and every other scheme."""
    href = href.strip()
    return http_url(urljoin(base, href)) if href and not href.startswith("#") else None


class LinkList:
    """Collects a page's links in order: each distinct page once (the first text and URL), never the page itself."""

    def __init__(self, page_url: str) -> None:
        self._seen = {target_key(page_url)}
        self.links: list[Link] = []

    def add(self, text: str, url: str | None) -> None:
        """Keep ``url`` (already absolute, or None to skip) unless it is a page already listed or the cap is met."""
        if url is None or len(self.links) >= MAX_STORED_LINKS or target_key(url) in self._seen:
            return
        self._seen.add(target_key(url))
        self.links.append(Link(clean_text(text, limit=TEXT_LIMIT), url))


def page_links(tree: Any, final_url: str) -> tuple[Link, ...]:
    """Every distinct http(s) link of the parsed page ``tree``, in page order, navigation and footer included."""
    base = link_base(tree, final_url)
    found = LinkList(final_url)
    for anchor in tree.iter("a"):
        text = anchor.text_content() or anchor.get("title") or anchor.get("aria-label") or ""
        found.add(text, resolved(str(anchor.get("href") or ""), base))
    return tuple(found.links)


def same_site(url: str, page_url: str) -> bool:
    """Whether ``url`` is on the page's own site: the same host (``www.`` aside) and port, either scheme."""
    return _origin(url) == _origin(page_url)


def _origin(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return host_key(parts.hostname or "").removeprefix("www."), None if port == default else port


def links_for(page: Iterable[Link], content: Iterable[Link], scope: LinkScope, page_url: str) -> list[Link]:
    """The links ``scope`` asks for: ``all`` the page's, in page order; ``same_site`` the main text's links
    to the page's own site, in the text's order and with its words."""
    if scope == "all":
        return list(page)
    return [link for link in content if same_site(link.url, page_url)]


def capped(links: list[Link], markdown: bool) -> tuple[list[str], int]:
    """The link lines shown (at most ``MAX_SHOWN_LINKS`` in ``MAX_SHOWN_BYTES``) and how many were left out."""
    lines: list[str] = []
    used = 0
    for link in links[:MAX_SHOWN_LINKS]:
        line = link_line(link, markdown)
        size = len(line.encode()) + 1
        if used + size > MAX_SHOWN_BYTES:
            break
        lines.append(line)
        used += size
    return lines, len(links) - len(lines)


def link_line(link: Link, markdown: bool) -> str:
    """One link as the model reads it: ``- [text](url)``, or ``- text: url`` in text format."""
    url = one_line(link.url)
    text = (link.text or url).replace("[", "(").replace("]", ")") if markdown else link.text
    if markdown:
        return f"- [{text}]({url})"
    return f"- {text}: {url}" if text else f"- {url}"
