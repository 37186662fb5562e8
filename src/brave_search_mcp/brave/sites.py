"""A site filter as Brave honours it: one inline goggle where goggles apply, ``site:`` operators in the query elsewhere.

The goggle (github.com/brave/goggles-quickstart) starts with a generic ``$discard`` when ``sites`` is given, so
only results some rule names survive, then one ``$site=`` rule per entry and one ``$discard,site=`` rule per
exclusion; a path prefix is the rule's pattern, ended by ``^`` (a separator or the end of the URL). A caller's
own inline goggles are merged into it (their rules and ours in one goggle); goggle URLs travel beside it.
Videos and images take no goggles, and with every goggle slot taken by a URL there is no room for ours: then
the filter goes into the query as ``site:`` operators, within Brave's 400 characters / 50 words, or the call
is refused: a filter is never dropped.
"""

from __future__ import annotations

from brave_search_mcp.brave.facts import MAX_GOGGLES, MAX_QUERY_CHARS, MAX_QUERY_WORDS
from brave_search_mcp.models.errors import InvalidArgument
from brave_search_mcp.models.sites import SiteFilter, SiteRule


def _rule(rule: SiteRule, action: str) -> str:
    pattern = f"{rule.path}^" if rule.path else ""
    return f"{pattern}${action}site={rule.host}"


def goggle(sites: SiteFilter) -> str:
    """The filter as one inline goggle."""
    lines = ["$discard"] if sites.sites else []
    lines += [_rule(rule, "") for rule in sites.sites]
    lines += [_rule(rule, "discard,") for rule in sites.exclude]
    return "\n".join(lines)


def _inline(entry: str) -> bool:
    return "\n" in entry or entry.startswith(("$", "!"))


def with_goggles(sites: SiteFilter, goggles: list[str]) -> list[str] | None:
    """The goggles to send with the filter: the caller's URLs, then their inline goggles and the filter as one;
    None when the URLs leave no slot for it."""
    urls = [entry for entry in goggles if not _inline(entry)]
    if len(urls) >= MAX_GOGGLES:
        return None
    return [*urls, "\n".join([*(entry.strip("\n") for entry in goggles if _inline(entry)), goggle(sites)])]


def with_operators(sites: SiteFilter, query: str) -> str:
    """``query`` followed by the filter's ``site:`` operators; INVALID_ARGUMENT when together they pass Brave's
    limits (a filter is never dropped, and the query is not cut to make room)."""
    sent = f"{query} {sites.operators()}"
    words = len(sent.split())
    if len(sent) > MAX_QUERY_CHARS or words > MAX_QUERY_WORDS:
        raise InvalidArgument(
            f"the query with the site: operators of {sites.named()} comes to {len(sent)} characters / {words} words; "
            f"Brave allows {MAX_QUERY_CHARS} / {MAX_QUERY_WORDS}: shorten the query or name fewer sites.",
            field="sites" if sites.sites else "exclude_sites",
        )
    return sent
