"""The leak check's scenario: a distinctive fake key through every tool and every error path, and its detectors.

tests/test_leaks.py runs it in memory, tests/test_leaks_stdio.py through the real stdio server in a sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from testkit.brave import FAULTS, SUMMARIZER_PATH, WEB_PATH, FakeBrave
from tests.fault_cases import SEARCH_PATHS, SEARCH_TYPES

KEY = "k3y-C4NARY-q8Zr7Tx2-Wv5Lm9-fake"
# The key, and pieces of it a partial print (a prefix, a suffix, a middle) would leave behind.
MARKERS = (KEY, "k3y-C4NARY-q8Zr", "q8Zr7Tx2", "Wv5Lm9-fake")
# Faults that cost real time (the per-attempt timeout): tried on one search and one status probe only.
SLOW_FAULTS = frozenset({"timeout", "hang", "slow_body"})
FAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "timeout": {"seconds": 2.0},
    "hang": {"seconds": 2.0},
    "slow_body": {"delay": 0.1, "chunk_size": 64},
    "oversize": {"size": 1024 * 1024},
    "429": {"retry_after": 0, "reset": 0},  # no real waiting in the subprocess
    "429_quota": {"month_reset": 0},  # the month "resets" at once, so later steps are not gated
}
RETRIES = 1
CALL_LIMIT = 15.0


def find_key(data: str | bytes) -> str | None:
    """The first key marker found in ``data`` (case-insensitive), or None."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    lowered = text.lower()
    return next((marker for marker in MARKERS if marker.lower() in lowered), None)


def assert_no_key(data: str | bytes, where: str) -> None:
    marker = find_key(data)
    assert marker is None, f"the API key ({marker!r}) leaked into {where}"


def fake_brave() -> FakeBrave:
    # No "pending" summarizer polls: the server's real sleeps between polls would only slow the runs down.
    return FakeBrave(api_keys=[KEY], rate_per_second=1000, monthly_limit=0, summarizer_pending_polls=0)


# -- the scenario: every tool through every error path ------------------------------------------

Call = Callable[[str, dict[str, Any]], Awaitable[tuple[dict[str, Any], str]]]


@dataclass
class Transcript:
    """Everything the tools answered, and which error codes that covered."""

    outputs: list[str] = field(default_factory=list)
    codes: set[str] = field(default_factory=set)

    def add(self, structured: dict[str, Any], text: str) -> dict[str, Any]:
        self.outputs.append(text)
        self.outputs.append(json.dumps(structured, ensure_ascii=False))
        error = structured.get("error")
        if error is not None:
            self.codes.add(error["code"])
        for probe in structured.get("probe", []):
            if not probe["ok"]:
                self.codes.add(probe["code"])
        return structured


# Every code a healthy key can meet through the four tools (MISSING_API_KEY needs no key; INTERNAL_ERROR a bug).
EXPECTED_CODES = frozenset(
    {
        "INVALID_ARGUMENT",
        "AUTH_FAILED",
        "NOT_IN_PLAN",
        "RATE_LIMITED",
        "QUOTA_EXCEEDED",
        "UPSTREAM_VALIDATION",
        "UPSTREAM_ERROR",
        "TIMEOUT",
        "NETWORK_ERROR",
        "PARSE_ERROR",
        "RESPONSE_TOO_LARGE",
        "NO_RESULTS",
        "SUMMARY_UNAVAILABLE",
    }
)


async def run_scenario(fake: FakeBrave, call: Call) -> Transcript:
    """Every fault the fake knows through every tool that reaches Brave, then the other error paths."""
    seen = Transcript()

    async def record(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        structured, text = await call(tool, arguments)
        return seen.add(structured, text)

    async def summarizer_key() -> str:
        envelope = await record("brave_web_search", {"query": "leak check summary", "summary": True})
        key = envelope["summarizer_key"]
        assert isinstance(key, str)
        return key

    for index, fault in enumerate(sorted(FAULTS)):
        search_type = SEARCH_TYPES[index % len(SEARCH_TYPES)]
        targets = ["search", "status"] if fault in SLOW_FAULTS else ["search", "summary-query", "summary-key", "status"]
        for target in targets:
            fake.reset()
            arguments: dict[str, Any]
            if target == "search":
                tool, path = "brave_web_search", SEARCH_PATHS[search_type]
                arguments = {"query": f"leak {fault}", "search_type": search_type}
            elif target == "status":
                tool, path = "brave_web_search_status", SEARCH_PATHS[search_type]
                arguments = {"probe_connectivity": True, "verbose": True}
            elif target == "summary-query":
                tool, path, arguments = "brave_summarizer", WEB_PATH, {"query": f"leak {fault}"}
            else:
                tool, path = "brave_summarizer", SUMMARIZER_PATH
                arguments = {"key": await summarizer_key()}
            fake.inject(fault, path=path, times=RETRIES + 1, **FAULT_OPTIONS.get(fault, {}))
            await record(tool, arguments)
        # Help answers the same while the upstream is broken.
        await record("brave_web_search_help", {"topic": "all"})

    fake.reset()
    for tool in ("brave_web_search", "brave_summarizer", "brave_web_search_help", "brave_web_search_status"):
        await record(tool, {"bogus": KEY[:3], "query": 5})  # unknown field, wrong type
    fake.no_results_for.add("nothing here")
    fake.summary_failing.add("a summary that fails")
    fake.summary_never_ready.add("a summary never ready")
    await record("brave_web_search", {"query": "nothing here"})
    await record("brave_summarizer", {"query": "a summary that fails"})
    await record("brave_summarizer", {"query": "a summary never ready", "deadline_seconds": 0.3})
    await record("brave_summarizer", {"key": "an unknown summarizer key"})
    envelope = await record(
        "brave_web_search",
        {"query": "debug me", "debug": True, "include_raw_payload": True, "include_request_url": True},
    )
    assert envelope["debug"]["request_url"].startswith("http")
    assert envelope["debug"]["raw_payload"]
    await record("brave_web_search_status", {"verbose": True, "include_limits": True, "probe_connectivity": True})
    # Last, because it holds the throttle for a minute: a wait too long to hold the call for is given up at once.
    fake.inject("429", retry_after=120)
    await record("brave_web_search", {"query": "long wait"})
    return seen
