"""Reading what the server wrote: the text a model reads, its per-call log lines, its import times (pure)."""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from .results import CallLog, ImportProfile

# Lower-case tag names (what Brave's snippets carry) and character entities; "Vec<T>" is text, not markup.
_MARKUP = re.compile(r"</?[a-z][a-z0-9]*(?:\s[^<>]*)?/?>|&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);")


def find_markup(text: str) -> list[str]:
    """HTML tags or character entities left in text meant to be clean."""
    return _MARKUP.findall(text)


def source_ages(results: Iterable[Mapping[str, Any]]) -> list[str]:
    """The age each source result carries (``age``, else ``page_age``), for results that have one."""
    ages = []
    for result in results:
        age = result.get("age") or result.get("page_age")
        if isinstance(age, str) and age.strip():
            ages.append(age.strip())
    return ages


def text_of(result: Mapping[str, Any]) -> str:
    """The text content of a CallToolResult, joined: what the model reads."""
    return "".join(
        str(item.get("text", ""))
        for item in result.get("content", [])
        if isinstance(item, dict) and item.get("type") == "text"
    )


def parse_call_log(text: str) -> dict[str, CallLog]:
    """The server's per-call JSON log lines on stderr, by trace id (other lines are ignored)."""
    calls: dict[str, CallLog] = {}
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("msg") != "tool call" or "trace_id" not in record:
            continue
        calls[str(record["trace_id"])] = CallLog(
            duration_ms=float(record["duration_ms"]),
            cache_hit=record.get("cache_hit"),
            attempts=int(record.get("attempts") or 0),
        )
    return calls


def parse_importtime(text: str) -> dict[str, int]:
    """``-X importtime`` output as ``{module: self microseconds}`` (the first import of each module)."""
    modules: dict[str, int] = {}
    for line in text.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue  # the header line
        name = parts[2].strip()
        modules.setdefault(name, int(parts[0].strip()))
    return modules


def import_profile(floor_runs: list[dict[str, int]], server_runs: list[dict[str, int]], top: int = 10) -> ImportProfile:
    """Median per-module self time; what the server imports that the floor does not, largest first."""
    if not floor_runs or len(floor_runs) != len(server_runs):
        raise ValueError("need the same, non-zero number of floor and server import profiles")

    def medians(runs: list[dict[str, int]]) -> dict[str, float]:
        names = set().union(*runs)
        return {name: statistics.median(run.get(name, 0) for run in runs) / 1000 for name in names}

    floor, server = medians(floor_runs), medians(server_runs)
    extra = {name: ms for name, ms in server.items() if name not in floor}
    ranked = sorted(extra.items(), key=lambda item: (-item[1], item[0]))
    return ImportProfile(
        runs=len(server_runs),
        floor_total_ms=sum(floor.values()),
        server_total_ms=sum(server.values()),
        extra_total_ms=sum(extra.values()),
        top_extra=[(name, round(ms, 2)) for name, ms in ranked[:top]],
    )
