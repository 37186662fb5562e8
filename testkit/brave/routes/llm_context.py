"""The LLM-context endpoint: grounding passages for a query, with local results when asked or located; inline
goggles narrow the pages it grounds on, as on the search endpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testkit.brave.exchange import Exchange
from testkit.brave.goggles import read_goggles
from testkit.brave.params import folded_in
from testkit.brave.reply import Reply

from .query_params import Allowed, check_query_params, q_error

LLM_PATH = "/res/v1/llm/context"
_PARAMS: Allowed = {
    "q": None, "country": None, "search_lang": None, "count": (1, 50), "maximum_number_of_urls": (1, 50),
    "maximum_number_of_tokens": (1024, 32768), "maximum_number_of_snippets": (1, 256),
    "maximum_number_of_tokens_per_url": (512, 8192), "maximum_number_of_snippets_per_url": (1, 100),
    "context_threshold_mode": None, "enable_local": None, "goggles": None, "freshness": None, "safesearch": None,
    "spellcheck": None, "enable_source_metadata": None,
}  # fmt: skip
_MAX_Q = (600, 75)  # the newest LLM-context reference; other endpoints 400/50


class LlmContextRoute:
    """GET /res/v1/llm/context; a key without the "llm_context" feature gets 400 OPTION_NOT_IN_PLAN."""

    paths = (LLM_PATH,)
    methods: frozenset[str] | None = None  # the plan is checked before the method, as on Brave's newer endpoints
    bearer = False

    def __init__(self) -> None:
        self.no_context_for: set[str] = set()  # queries answered with empty grounding (compared folded)

    def answer(self, ex: Exchange) -> Reply:
        """Plan, method and parameters checked, then the grounding."""
        refused = ex.not_in_plan("llm_context", "Free") or ex.only_get()
        if refused is not None:
            return refused
        values, _, errors = check_query_params(ex.request.params, _PARAMS)
        problem = q_error(values.get("q"), required=True, limits=_MAX_Q)
        errors += [problem] if problem else []
        if errors:
            return ex.validation(errors)
        ex.bill()
        goggles = [value for name, value in ex.request.params if name == "goggles"]
        return ex.json(200, self._context(values, ex.request.headers, goggles))

    def _context(self, values: Mapping[str, str], headers: Mapping[str, str], goggles: list[str]) -> dict[str, Any]:
        q = values["q"]
        if folded_in(q, self.no_context_for):
            return {"grounding": {"generic": [], "map": []}, "sources": {}}
        local = values.get("enable_local") in ("true", "1") or (
            values.get("enable_local") is None and any(name.startswith("x-loc-") for name in headers)
        )
        body = context_body(q, local=local, urls=int(values.get("maximum_number_of_urls", "20")))
        goggle = read_goggles(goggles)
        if goggle is not None:
            grounding = body["grounding"]
            for name in ("generic", "map"):
                grounding[name] = [item for item in grounding[name] if goggle.keeps(item["url"])]
            if "poi" in grounding and not goggle.keeps(grounding["poi"]["url"]):
                del grounding["poi"]
        return body


def context_body(query: str, *, local: bool, urls: int) -> dict[str, Any]:
    """An LLM-context answer for ``query``: three pages (one repeated, one passage repeated, one JSON table)."""
    topic = " ".join(query.split())[:80]
    generic = [
        {
            "url": "https://docs.example.org/guide",
            "title": f"Guide: {topic}",
            "snippets": [
                f"The guide to {topic} starts with the basics and explains each concept with an example.",
                "Install the tool, then run it once to create the configuration file.",
            ],
        },
        {
            "url": "https://blog.example.com/posts/deep-dive",
            "title": "A deep dive &amp; a few pitfalls",
            "snippets": [
                "Install the tool, then run it once to create the configuration file.",  # repeated passage
                '{"type":"table","rows":[{"option":"timeout","default":"15 s"},{"option":"retries","default":"3"}]}',
                "Pitfall: the cache key must include every parameter that changes the answer. " * 3,
            ],
        },
        {
            "url": "https://docs.example.org/guide/",  # the same page again (trailing slash)
            "title": f"Guide: {topic}",
            "snippets": ["Advanced usage covers streaming, retries and deadlines in depth."],
        },
        {
            "url": "https://qa.example.net/questions/42",
            "title": "Q&A: how do I start?",
            "snippets": ["Start small: one request, one result, then add options as you need them."],
        },
    ][: max(1, urls)]
    sources: dict[str, Any] = {
        "https://docs.example.org/guide": {
            "title": f"Guide: {topic}",
            "hostname": "docs.example.org",
            "age": ["Monday, March 2, 2026", "2026-03-02", "265 days ago", "2026-03-02T00:00:00Z"],
        },
        "https://blog.example.com/posts/deep-dive": {
            "title": "A deep dive",
            "hostname": "blog.example.com",
            "age": None,
        },
        "https://qa.example.net/questions/42": {
            "title": "Q&A",
            "hostname": "qa.example.net",
            "age": ["Friday, January 9, 2026", "2026-01-09", "318 days ago"],
        },
    }
    grounding: dict[str, Any] = {"generic": generic, "map": []}
    if local:
        grounding["poi"] = {
            "name": "Pastelaria Exemplo",
            "url": "https://pastelaria.example.pt",
            "title": "Pastelaria Exemplo – official site",
            "snippets": ['{"name":"Pastelaria Exemplo","address":"Rua de Belém 84, Lisboa","rating":4.7,"open":true}'],
        }
        grounding["map"] = [
            {
                "name": "Tasca do Teste",
                "url": "https://tasca-teste.example.pt",
                "title": "Tasca do Teste",
                "snippets": ["Small tavern with grilled fish; evenings only."],
            }
        ]
        sources["https://pastelaria.example.pt"] = {
            "title": "Pastelaria Exemplo",
            "hostname": "pastelaria.example.pt",
            "age": None,
        }
    return {"grounding": grounding, "sources": sources}
