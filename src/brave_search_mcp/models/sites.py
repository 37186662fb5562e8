"""Site filters (``sites`` / ``exclude_sites``): one reading of an entry and one URL match for every tool and provider.

An entry is a domain, optionally with a path prefix (``docs.python.org/3/library``). A domain covers its
subdomains, as Brave's ``$site=`` and the engines' ``site:`` do, and a leading ``*.`` says the same thing
(``*.example.com`` is ``example.com`` and everything under it); a path prefix covers that path and what lies
below it, segment by segment (``/3/library`` holds ``/3/library/os.html``, not ``/3/libraryx``). Providers
compile a filter into what their upstream honours (goggles, ``site:`` operators or terms); the use cases then
drop whatever the answer still holds outside it, so a filter only ever narrows an answer, never widens it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from brave_search_mcp.models.envelopes import Envelope, Section
from brave_search_mcp.models.errors import NoResults

MAX_SITES = 10
MAX_SITE_CHARS = 200  # a goggle instruction may hold 500; a host 253
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# What a path prefix may hold: URL path characters, none of a goggle's pattern syntax (* ^ | $) or ? and #.
_PATH = re.compile(r"[A-Za-z0-9._~!&'()+,;=:@%/-]*")

AppliedAs = Literal["goggle", "site: operators", "site: terms"]


@dataclass(frozen=True)
class SiteRule:
    """One entry: a host (lower case, ASCII) and a path prefix (``""``: the whole site; never a trailing ``/``)."""

    host: str
    path: str = ""

    @property
    def text(self) -> str:
        """The entry as this server writes it (``docs.python.org/3/library``)."""
        return self.host + self.path

    def matches(self, host: str, path: str) -> bool:
        """Whether a page at ``host`` + ``path`` lies inside this entry."""
        if host != self.host and not host.endswith("." + self.host):
            return False
        return not self.path or path == self.path or path.startswith(self.path + "/")

    def covers(self, other: SiteRule) -> bool:
        """Whether every page inside ``other`` is inside this entry too."""
        return self.matches(other.host, other.path)


def host_key(host: str) -> str:
    """A host as every comparison of sites reads it (site filters, same-site links, source labels), so none of them
    disagrees on a spelling: lower case, without the trailing dot of a fully qualified name, and an international
    name in its ASCII (punycode) form, as upstreams often write it. A name IDNA cannot encode stays as given: it
    matches no ASCII entry."""
    host = host.rstrip(".").lower()
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def _quoted(entry: str) -> str:
    text = "".join(char for char in entry if char.isprintable())
    return repr(text if len(text) <= 60 else text[:59] + "…")


def parse_site(entry: str) -> SiteRule:
    """An entry as a rule; ``ValueError`` saying what is wrong with it (a scheme, a wildcard, not a domain)."""
    text = entry.strip()
    if not text:
        raise ValueError("an entry is empty")
    if len(text) > MAX_SITE_CHARS:
        raise ValueError(f"{_quoted(text)} is longer than {MAX_SITE_CHARS} characters")
    if "://" in text or re.match(r"(?i)https?:", text):
        raise ValueError(f"{_quoted(text)} has a scheme; give the domain alone, e.g. docs.python.org")
    if "*" in text.removeprefix("*."):
        raise ValueError(f"{_quoted(text)}: the only wildcard is a leading *. (and a domain covers its subdomains)")
    host, slash, path = text.removeprefix("*.").partition("/")
    if "?" in path or "#" in path or not _PATH.fullmatch(path):
        raise ValueError(f"{_quoted(text)}: a path prefix holds URL path characters only (no ?, #, * or spaces)")
    host = host_key(host)
    if not host or len(host) > 253 or not all(_LABEL.fullmatch(label) for label in host.split(".")):
        raise ValueError(f"{_quoted(text)} is not a domain such as docs.python.org (optionally with a path)")
    return SiteRule(host, ("/" + path).rstrip("/") if slash else "")


def check_sites(values: list[str] | None) -> list[str] | None:
    """A ``sites`` / ``exclude_sites`` list as written by this server: each entry checked, repeats dropped."""
    if values is None:
        return None
    if len(values) > MAX_SITES:
        raise ValueError(f"at most {MAX_SITES} entries (got {len(values)})")
    return list(dict.fromkeys(parse_site(value).text for value in values))


def _host_and_path(url: str) -> tuple[str, str] | None:
    try:
        parts = urlsplit(url)
        host = host_key(parts.hostname or "")
    except ValueError:
        return None
    return (host, parts.path or "/") if host else None


class SiteFilterMeta(Envelope):
    """What the structured output says of a site filter: the entries, how the upstream was told, what was dropped."""

    sites: list[str] | None = None
    exclude_sites: list[str] | None = None
    applied_as: AppliedAs | None = None  # None: the upstream was not told, the results were only filtered here
    dropped: int = 0  # results the upstream still returned outside the filter, removed here


@dataclass(frozen=True)
class SiteFilter:
    """The entries results must come from (any of; none: anywhere) and those they must never come from."""

    sites: tuple[SiteRule, ...] = ()
    exclude: tuple[SiteRule, ...] = ()

    @classmethod
    def of(cls, sites: Sequence[str] | None, exclude_sites: Sequence[str] | None) -> SiteFilter | None:
        """The filter of checked lists; None when neither names a site."""
        found = cls(tuple(map(parse_site, sites or ())), tuple(map(parse_site, exclude_sites or ())))
        return found if found.sites or found.exclude else None

    def keeps(self, url: str) -> bool:
        """Whether a result at ``url`` passes (a URL without a host passes only a filter without ``sites``)."""
        where = _host_and_path(url)
        if where is None:
            return not self.sites
        if self.sites and not any(rule.matches(*where) for rule in self.sites):
            return False
        return not any(rule.matches(*where) for rule in self.exclude)

    def leaves_nothing(self) -> bool:
        """Whether ``exclude_sites`` covers every entry of ``sites``: no result could ever pass."""
        return bool(self.sites) and all(any(ex.covers(rule) for ex in self.exclude) for rule in self.sites)

    def operators(self) -> str:
        """The filter as search-engine operators: ``site:a OR site:b -site:c`` (several sites are alternatives)."""
        terms = [" OR ".join(f"site:{rule.text}" for rule in self.sites)] if self.sites else []
        return " ".join([*terms, *(f"-site:{rule.text}" for rule in self.exclude)])

    def named(self) -> str:
        """The filter in a sentence: ``sites [a, b], exclude_sites [c]``."""
        parts = [f"sites [{', '.join(r.text for r in self.sites)}]"] if self.sites else []
        parts += [f"exclude_sites [{', '.join(r.text for r in self.exclude)}]"] if self.exclude else []
        return ", ".join(parts)

    def meta(self, applied_as: AppliedAs | None, dropped: int) -> SiteFilterMeta:
        """The structured output's account of this filter."""
        return SiteFilterMeta(
            sites=[r.text for r in self.sites] or None,
            exclude_sites=[r.text for r in self.exclude] or None,
            applied_as=applied_as,
            dropped=dropped,
        )

    def keep_sections(self, sections: Sequence[Section]) -> tuple[list[Section], int]:
        """The sections with only the results that pass (emptied sections gone), and how many were dropped."""
        kept: list[Section] = []
        dropped = 0
        for section in sections:
            results = []
            for result in section.results:
                if self.keeps(result.url):
                    results.append(result)
                elif result.url:  # a suggestion (no URL) is no page from elsewhere
                    dropped += 1
            if len(results) == len(section.results):
                kept.append(section)
            elif results:
                kept.append(section.model_copy(update={"results": results}))
        return kept, dropped

    def no_results(self, found: str, dropped: int = 0, details: Mapping[str, Any] | None = None) -> NoResults:
        """NO_RESULTS that names the filter: ``found`` says what was searched; the filter was not widened."""
        elsewhere = f"; {dropped} result{'' if dropped == 1 else 's'} from elsewhere dropped" if dropped else ""
        return NoResults(
            f"{found} within {self.named()}{elsewhere}. The filter is never widened: name more sites, drop some "
            "exclude_sites, or broaden the query.",
            details={**(details or {}), "site_filter": self.named(), "dropped": dropped},
        )
