"""The local upstream: the project's fake Brave, answering web searches with a real-sized page.

Text sizes only mean something on result data of real sizes, so web answers are sliced from the
project's "hello world" page (``testkit/brave/fixtures/web_hello_world.json``: written for this
project with the field sizes, markup and ages of a recorded Brave answer to that query); everything
else (key check, validation, rate limits, headers) stays the fake's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testkit.brave.brave import FIXTURES_DIR, FakeBrave

RECORDED_PAGE = FIXTURES_DIR / "web_hello_world.json"
_SECTIONS = ("web", "news", "videos", "discussions", "faq", "infobox", "locations")


def load_recorded_page(path: Path = RECORDED_PAGE) -> dict[str, Any]:
    """The real-sized Brave web answer the bench's fake serves."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("web", {}).get("results"), list):
        raise ValueError(f"{path} is not a Brave web search answer")
    return data


def _strip_strong(text: Any) -> Any:
    return text.replace("<strong>", "").replace("</strong>", "") if isinstance(text, str) else text


def page_slice(page: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """What Brave would send for these (validated) parameters from one recorded page.

    Only the requested sections, the requested page of web results, ``extra_snippets`` only when
    asked for, and ``<strong>`` highlights removed when ``text_decorations`` is false, as Brave does.
    Shares the page's objects where it changes nothing, so it costs microseconds, not a deep copy.
    """
    count = int(values.get("count", "20"))
    offset = int(values.get("offset", "0"))
    raw_filter = values.get("result_filter")
    wanted = None if raw_filter is None else {part.strip() for part in raw_filter.split(",") if part.strip()}
    decorations = values.get("text_decorations", "true").strip().lower() in ("true", "1")
    extra = values.get("extra_snippets", "false").strip().lower() in ("true", "1")
    results: list[Any] = page["web"]["results"]
    start = offset * count
    query = dict(page.get("query", {}))
    query["original"] = values.get("q", query.get("original", ""))
    query["more_results_available"] = start + count < len(results)
    out: dict[str, Any] = {"type": "search", "query": query}
    for name in _SECTIONS:
        if name not in page or (wanted is not None and name not in wanted):
            continue
        section = dict(page[name])
        items = section.get("results", [])
        if name == "web":
            items = items[start : start + count]
        section["results"] = [_shape_result(item, decorations, extra) for item in items]
        out[name] = section
    if wanted is None and "mixed" in page:
        out["mixed"] = page["mixed"]
    return out


def _shape_result(item: Any, decorations: bool, extra: bool) -> Any:
    if not isinstance(item, dict):
        return item
    shaped = dict(item)
    if not extra:
        shaped.pop("extra_snippets", None)
    if not decorations and "description" in shaped:
        shaped["description"] = _strip_strong(shaped["description"])
    return shaped


class RecordedPageBrave(FakeBrave):
    """The fake Brave, but successful web searches are answered from a recorded page.

    Sets the search route's ``web_page``, so key, rate window, parameter validation, headers and gzip
    stay exactly the fake's, and the answer is built once (about a millisecond end to end).
    """

    def __init__(self, page: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.search.web_page = lambda values: page_slice(page, values)


def make_fake(rate_per_second: int, page: Mapping[str, Any] | None = None) -> FakeBrave:
    """A fake with unlimited monthly quota, answering web searches from the recorded page (read when not given)."""
    return RecordedPageBrave(page or load_recorded_page(), rate_per_second=rate_per_second, monthly_limit=0)
