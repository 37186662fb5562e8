"""The ``site:`` operators a search engine reads in a query, honoured alike by the fake Brave and the fake SearXNG.

As the big engines read them: ``site:a.org`` keeps the pages of a.org and its subdomains (with a path,
``site:a.org/docs``, only those under it), ``-site:b.org`` drops b.org's, and ``site:`` terms joined by ``OR``
are alternatives, while two ``site:`` terms side by side must both hold (which no page of two different
sites does: nothing is found). The operators leave the query; the rest is what the engines search for.
Written apart from the server's own matching, so a test of one against the other means something.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["SiteOperators", "on_site", "read_operators"]


def on_site(url: str, site: str) -> bool:
    """Whether ``url`` is a page of ``site`` (``host`` or ``host/path``): the host or a subdomain, under the path."""
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".")
    domain, _, path = site.lower().partition("/")
    if not (host == domain or host.endswith("." + domain)):
        return False
    prefix = "/" + path.strip("/") if path.strip("/") else ""
    return not prefix or parts.path == prefix or parts.path.startswith(prefix + "/")


@dataclass(frozen=True)
class SiteOperators:
    """A query's ``site:`` operators: groups of alternatives (each group must hold) and the excluded sites."""

    text: str  # the query without its operators
    groups: tuple[tuple[str, ...], ...] = ()
    excluded: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.groups or self.excluded)

    def keeps(self, url: str) -> bool:
        """Whether a page at ``url`` is one the operators let through."""
        if not all(any(on_site(url, site) for site in group) for group in self.groups):
            return False
        return not any(on_site(url, site) for site in self.excluded)


def read_operators(query: str) -> SiteOperators:
    """``query`` split into its text and its ``site:`` / ``-site:`` operators (``OR`` joins two ``site:``)."""
    tokens = query.split()
    groups: list[list[str]] = []
    excluded: list[str] = []
    text: list[str] = []
    joining = False
    for index, token in enumerate(tokens):
        lower = token.lower()
        if lower.startswith("site:") and len(token) > 5:
            if joining:
                groups[-1].append(token[5:])
            else:
                groups.append([token[5:]])
            joining = False
        elif lower.startswith("-site:") and len(token) > 6:
            excluded.append(token[6:])
        elif (
            token == "OR"
            and index > 0
            and tokens[index - 1].lower().startswith("site:")
            and index + 1 < len(tokens)
            and tokens[index + 1].lower().startswith("site:")
        ):
            joining = True
        else:
            text.append(token)
    return SiteOperators(" ".join(text), tuple(map(tuple, groups)), tuple(excluded))
