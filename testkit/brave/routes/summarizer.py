"""The summarizer endpoint: keys the web answers issue, polled "pending" first, then complete (or failed)."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from testkit.brave.errors import field_error
from testkit.brave.exchange import Exchange
from testkit.brave.fixtures import load
from testkit.brave.params import folded_in, truthy, validate
from testkit.brave.reply import Reply

SUMMARIZER_PATH = "/res/v1/summarizer/search"


class SummaryControls(Protocol):
    """The fake's summarizer controls (queries compared folded)."""

    summarizer_pending_polls: int  # polls answered "pending" before the summary is ready
    summary_failing: set[str]  # queries whose summary ends with status "failed"
    summary_never_ready: set[str]  # queries whose summary stays "pending" forever


@dataclass
class _Summary:
    query: str
    polls: int = 0


class Summaries:
    """The summarizer keys the web answers issued, and how often each was polled."""

    def __init__(self) -> None:
        self._by_key: dict[str, _Summary] = {}

    def issue(self, values: Mapping[str, str]) -> str:
        """The key of the summary of this web search (the same search, the same key)."""
        q = values["q"]
        country = values.get("country", "us").lower()
        language = values.get("search_lang", "en")
        safesearch = values.get("safesearch", "moderate")
        digest = hashlib.sha256(f"{q}\x00{country}\x00{language}\x00{safesearch}".encode()).hexdigest()
        key = json.dumps(
            {"query": q, "country": country, "language": language, "safesearch": safesearch, "results_hash": digest}
        )
        self._by_key.setdefault(key, _Summary(query=q))
        return key

    def get(self, key: str) -> _Summary | None:
        """The summary behind ``key``, if one was issued."""
        return self._by_key.get(key)

    def clear(self) -> None:
        """Forget every key."""
        self._by_key.clear()


class SummarizerRoute:
    """GET /res/v1/summarizer/search?key=...: not billed (reference/brave-api.md §3.7)."""

    paths = (SUMMARIZER_PATH,)
    methods: frozenset[str] | None = frozenset({"GET"})
    bearer = False

    def __init__(self, controls: SummaryControls, summaries: Summaries) -> None:
        self.controls = controls
        self.summaries = summaries
        self._fixture = load("summarizer")

    def answer(self, ex: Exchange) -> Reply:
        """Validate the key, then answer with the summary's current state."""
        values, _, errors = validate("summarizer", ex.request.params)
        summary = self.summaries.get(values["key"]) if not errors else None
        if not errors and summary is None:
            msg = "Value error, unknown or expired summarizer key"
            errors.append(field_error("value_error", "key", msg, values["key"], {}))
        if errors or summary is None:
            return ex.validation(errors)
        return ex.json(200, self._body(summary, values))

    def _body(self, summary: _Summary, values: Mapping[str, str]) -> dict[str, Any]:
        summary.polls += 1
        never = folded_in(summary.query, self.controls.summary_never_ready)
        if never or summary.polls <= self.controls.summarizer_pending_polls:
            return {"type": "summarizer", "status": "pending"}
        if folded_in(summary.query, self.controls.summary_failing):
            return {"type": "summarizer", "status": "failed"}
        body = copy.deepcopy(self._fixture)
        if not truthy(values.get("inline_references"), False):
            body["summary"] = [m for m in body["summary"] if m["type"] != "inline_reference"]
        if not truthy(values.get("entity_info"), False):
            body.pop("entities_infos", None)
        return body
