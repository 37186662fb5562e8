"""The results the fake's engines "find": SearXNG-shaped items per category, page and query, deterministic.

Shaped like a real instance's answers (team notes, searxng-real.md §a, §e): a page is the instance's own
size (27 merged results on the measured instance, whatever ``count`` a client wants), results found at the
same position by two engines have the **same score** and come in pairs, and a real instance returns equal
scores in a different order on identical requests (``swap_ties``); news dates come with an offset, naive,
or null; images carry ``img_src``/``thumbnail_src``/``resolution``; videos ``thumbnail``, ``length`` as
``"3:20"`` or as float seconds, ``author``, ``views`` and ``iframe_src``. The engines honour the query's
``site:`` operators (``testkit.site_operators``): with ``site:`` terms every page found is on one of those
sites (in turn), and a ``-site:`` site's pages are not found.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from testkit.site_operators import SiteOperators, on_site, read_operators

from .syntax import ENGINES

__all__ = ["page_of"]

_NEWS_EPOCH = datetime(2025, 3, 14, 9, 30, tzinfo=UTC)


def _slug(query: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-")[:40] or "q"


def _item(query: str, category: str, n: int, i: int, engines: tuple[str, ...]) -> dict[str, Any]:
    """Result ``n`` (0-based, over all pages) at position ``i`` of its page."""
    slug = _slug(query)
    found_by = [engines[n % len(engines)], *([engines[(n + 1) % len(engines)]] if n % 3 == 0 else [])]
    item: dict[str, Any] = {
        "url": f"https://site{n % 7}.example.org/{slug}/{n + 1}",
        "title": f"{query} – result {n + 1}",
        "content": f"About <b>{query}</b> &amp; more (result {n + 1}).",
        "engine": found_by[0],
        "engines": found_by,
        "positions": [i // 2 + 1] * len(found_by),
        "score": round(1.0 / (i // 2 + 1), 4),  # pairs tie, as two engines' results at one position do
        "category": category,
        "template": "default.html",
        "img_src": "",
        "thumbnail": "",
        "priority": "",
        "publishedDate": None,
    }
    if category == "news":
        item["url"] = f"https://news{n % 3}.example.com/{slug}/{n + 1}"
        when = _NEWS_EPOCH - timedelta(hours=n)
        item["publishedDate"] = [when.isoformat(), when.replace(tzinfo=None).isoformat(), None][n % 3]
    elif category == "images":
        item.update(
            template="images.html",
            img_src=f"https://img.example.net/{slug}/{n + 1}.jpg",
            thumbnail_src=f"https://img.example.net/{slug}/{n + 1}.thumb.jpg",
            resolution="800 x 600",
            img_format="JPEG",
        )
    elif category == "videos":
        item.update(
            template="videos.html",
            url=f"https://video.example.net/{slug}/{n + 1}",
            thumbnail=f"https://video.example.net/{slug}/{n + 1}.jpg",
            length="3:20" if n % 2 == 0 else 200.0 + n,
            author=f"channel {n % 4}",
            views=f"{n + 1}.5K",
            iframe_src=f"https://video.example.net/embed/{n + 1}",
            publishedDate=(_NEWS_EPOCH - timedelta(days=n)).isoformat(),
        )
    return item


def _on_sites(items: list[dict[str, Any]], operators: SiteOperators, first: int) -> list[dict[str, Any]]:
    """The items as engines find them under ``site:`` operators: moved onto the named sites, the excluded gone."""
    head, *rest = operators.groups or ((),)
    sites = [site for site in head if all(any(on_site(f"https://{site}", s) for s in group) for group in rest)]
    if operators.groups and not sites:
        return []  # two site: terms that must both hold: no page is on two sites
    for n, item in enumerate(items, first):
        if sites:
            item["url"] = f"https://{sites[n % len(sites)].rstrip('/')}/{item['url'].split('/', 3)[3]}"
    return [item for item in items if operators.keeps(item["url"])]


def page_of(
    query: str, category: str, page: int, per_page: int, *, only_engine: str | None = None, swap_ties: bool = False
) -> list[dict[str, Any]]:
    """One instance page of ``category`` (global numbering, so pages never repeat a URL); ``[]`` for no query."""
    operators = read_operators(query)
    if not operators.text.strip():
        return []  # the engines searched for nothing and found nothing
    engines = (only_engine,) if only_engine else ENGINES[category]
    items = [_item(operators.text, category, (page - 1) * per_page + i, i, engines) for i in range(per_page)]
    if operators:
        items = _on_sites(items, operators, (page - 1) * per_page)
    if swap_ties:
        for i in range(0, len(items) - 1, 2):
            items[i], items[i + 1] = items[i + 1], items[i]
    return items
