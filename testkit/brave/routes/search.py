"""The four search endpoints (web, news, images, videos): pages of the fixtures, sections, spellcheck, summary keys.

The fixtures are the recall set: inline goggles (web, news) and the query's ``site:`` operators (every type,
unless ``operators=false``) narrow it before a page is cut, as Brave's do; they reach the web page's news,
videos and discussions too, but not the FAQ, infobox or locations Brave builds beside them."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from testkit.brave.exchange import Exchange
from testkit.brave.fixtures import load
from testkit.brave.goggles import read_goggles
from testkit.brave.params import folded_in, parse_filter, truthy, validate
from testkit.brave.reply import Reply
from testkit.brave.vocab import COUNT_DEFAULT
from testkit.site_operators import read_operators

from .summarizer import Summaries

WEB_PATH = "/res/v1/web/search"
NEWS_PATH = "/res/v1/news/search"
IMAGES_PATH = "/res/v1/images/search"
VIDEOS_PATH = "/res/v1/videos/search"
ENDPOINTS: Mapping[str, str] = {WEB_PATH: "web", NEWS_PATH: "news", IMAGES_PATH: "images", VIDEOS_PATH: "videos"}
_WEB_SECTIONS = ("web", "news", "videos", "discussions", "faq", "infobox", "locations")
_RECALLED = ("web", "news", "videos", "discussions")  # the web page's sections goggles and site: narrow
Keep = Callable[[dict[str, Any]], bool]


class SearchControls(Protocol):
    """The fake's search controls (queries compared case-insensitively, whitespace folded)."""

    no_results_for: set[str]  # answer these queries with every section empty
    spellcheck_rewrites: dict[str, str]  # query -> what Brave says it searched instead
    unsummarizable: set[str]  # queries Brave gives no summarizer key for


class SearchRoute:
    """GET on the four search paths: validated like Brave, billed on success."""

    paths = tuple(ENDPOINTS)
    methods: frozenset[str] | None = frozenset({"GET"})
    bearer = False

    def __init__(self, controls: SearchControls, summaries: Summaries) -> None:
        self.controls = controls
        self.summaries = summaries
        self._fixtures = {name: load(name) for name in ENDPOINTS.values()}
        # Answer valid web searches from this (a recorded page, say) instead of the fixtures:
        self.web_page: Callable[[Mapping[str, str]], dict[str, Any]] | None = None

    def answer(self, ex: Exchange) -> Reply:
        """One search, answered from the fixtures."""
        endpoint = ENDPOINTS[ex.request.path]
        values, goggles, errors = validate(endpoint, ex.request.params)
        if errors:
            return ex.validation(errors)
        keep = _recall(values, goggles)
        if endpoint == "web":
            body = self._web(values, goggles, keep) if self.web_page is None else self.web_page(values)
        elif endpoint == "images":
            body = self._images(values, keep)
        else:
            body = self._list(endpoint, values, keep)
        ex.bill()
        return ex.json(200, body)

    def _empty(self, q: str) -> bool:
        return folded_in(q, self.controls.no_results_for)

    def _query(self, values: Mapping[str, str], *, spellcheck_default: bool = True) -> dict[str, Any]:
        q = values["q"]
        spell = truthy(values.get("spellcheck"), spellcheck_default)
        query: dict[str, Any] = {"original": q}
        altered = next((v for k, v in self.controls.spellcheck_rewrites.items() if folded_in(k, (q,))), None)
        if spell and altered is not None:
            query["altered"] = altered
        query["spellcheck_off"] = not spell
        query["show_strict_warning"] = False
        return query

    def _web(self, values: Mapping[str, str], goggles: list[str], keep: Keep) -> dict[str, Any]:
        fx = copy.deepcopy(self._fixtures["web"])
        q = values["q"]
        empty = self._empty(q)
        count = int(values.get("count", COUNT_DEFAULT["web"]))
        offset = int(values.get("offset", 0))
        filters = parse_filter(values.get("result_filter"))
        summary = truthy(values.get("summary"), False)
        decorations = truthy(values.get("text_decorations"), True)
        extra = truthy(values.get("extra_snippets"), False)

        all_web: list[dict[str, Any]] = [] if empty else list(filter(keep, fx["web"]["results"]))
        start = offset * count
        page = all_web[start : start + count]

        query = fx["query"]
        query.update(self._query(values))
        query["country"] = values.get("country", "us").lower()
        query["language"] = {"main": values.get("search_lang", "en")}
        query["more_results_available"] = start + count < len(all_web)

        defaults = {"web", "news", "videos", "discussions", "faq", "infobox"}
        include = (defaults | ({"summarizer"} if summary else set())) if filters is None else set(filters)
        if filters is not None and "summarizer" in filters:
            include.discard("web")  # mimic Brave issue #272: result_filter=summarizer drops the web results
        if "locations" in include:
            query["local_decision"] = "keep"
            query["is_geolocal"] = True

        out: dict[str, Any] = {"type": "search", "query": query}
        for name in _WEB_SECTIONS:
            if name not in include:
                continue
            section = fx[name]
            section["results"] = page if name == "web" else ([] if empty else section["results"])
            if name in _RECALLED:
                section["results"] = list(filter(keep, section["results"]))
            if name == "web" and goggles:
                section["mutated_by_goggles"] = True
            out[name] = section
        for name in ("web", "news", "videos", "discussions"):
            for result in out.get(name, {}).get("results", []):
                if not decorations and "description" in result:
                    result["description"] = _strip_strong(result["description"])
                if not extra:
                    result.pop("extra_snippets", None)
        if not decorations:
            for item in out.get("faq", {}).get("results", []):
                item["answer"] = _strip_strong(item["answer"])
        eligible = not folded_in(q, self.controls.unsummarizable)
        if summary and "summarizer" in include and not empty and eligible:
            out["summarizer"] = {"type": "summarizer", "key": self.summaries.issue(values)}
        if filters is None:
            out["mixed"] = _mixed(out)
        return out

    def _list(self, endpoint: str, values: Mapping[str, str], keep: Keep) -> dict[str, Any]:
        fx = copy.deepcopy(self._fixtures[endpoint])
        count = int(values.get("count", COUNT_DEFAULT[endpoint]))
        start = int(values.get("offset", 0)) * count
        recalled = list(filter(keep, fx["results"]))
        results: list[dict[str, Any]] = [] if self._empty(values["q"]) else recalled[start : start + count]
        if not truthy(values.get("extra_snippets"), False):
            for result in results:
                result.pop("extra_snippets", None)
        fx["query"] = self._query(values)
        fx["results"] = results
        return fx

    def _images(self, values: Mapping[str, str], keep: Keep) -> dict[str, Any]:
        fx = copy.deepcopy(self._fixtures["images"])
        templates: list[dict[str, Any]] = fx["results"]
        count = int(values.get("count", COUNT_DEFAULT["images"]))
        results = [] if self._empty(values["q"]) else list(filter(keep, (_image(i, templates) for i in range(count))))
        fx["query"] = self._query(values)
        fx["results"] = results
        return fx


def _recall(values: Mapping[str, str], goggles: list[str]) -> Keep:
    """Which results of the fake's lists Brave's recall keeps for this request (every one without a filter)."""
    goggle = read_goggles(goggles)
    operators = read_operators(values["q"]) if truthy(values.get("operators"), True) else None
    tests = [test.keeps for test in (goggle, operators) if test]
    return lambda result: all(test(str(result.get("url", ""))) for test in tests)


def _strip_strong(text: str) -> str:
    return text.replace("<strong>", "").replace("</strong>", "")


def _image(index: int, templates: list[dict[str, Any]]) -> dict[str, Any]:
    image = copy.deepcopy(templates[index % len(templates)])
    variant = index // len(templates)
    if variant:
        image["title"] = f"{image['title']} ({variant + 1})"
        image["url"] = f"{image['url']}/{variant + 1}"
        image["properties"]["url"] = image["properties"]["url"].replace(".png", f"-{variant + 1}.png")
        image["thumbnail"]["src"] = f"{image['thumbnail']['src']}?v={variant + 1}"
    return image


def _mixed(out: Mapping[str, Any]) -> dict[str, Any]:
    def present(name: str) -> bool:
        return bool(out.get(name, {}).get("results"))

    web_count = len(out["web"]["results"]) if "web" in out else 0
    main: list[dict[str, Any]] = []
    if present("locations"):
        main.append({"type": "locations", "all": True})
    interleave = {1: "videos", 2: "discussions", 3: "faq", 4: "news"}
    for i in range(max(web_count, 5)):
        if i < web_count:
            main.append({"type": "web", "index": i, "all": False})
        section = interleave.get(i)
        if section and present(section):
            main.append({"type": section, "all": True})
    side = [{"type": "infobox", "index": 0, "all": False}] if present("infobox") else []
    return {"type": "mixed", "main": main, "top": [], "side": side}
