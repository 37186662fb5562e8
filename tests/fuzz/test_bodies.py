"""Fuzzing Brave's door: random response bodies and wire bytes through the whole search and summarizer service.

Whatever Brave sends, a tool answers with a v1 envelope whose text stays within its bounds.
"""

from __future__ import annotations

import gzip
import json
import math
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx2
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from brave_search_mcp.brave.summarizer import MAX_FOLLOWUPS, MAX_REFERENCES, MAX_TEXT_CHARS
from brave_search_mcp.config import DEBUG_PAYLOAD_CAP_BYTES, MAX_MAX_BYTES, MAX_MAX_LINES, MIN_MAX_BYTES, MIN_MAX_LINES
from brave_search_mcp.models.envelopes import DIRECT_ANSWERS
from tests.fuzz.checks import BODY_FUZZ, fuzzed_boundary, in_worker
from tests.fuzz.strategies import ANSWER_TYPES, RESULT_FIELDS, WEB_SECTIONS, markup_text, mostly, scalars, texts, values
from tests.fuzz.strategies import field_values as field_values_of
from tests.fuzz.strategies import query_objects as query_objects_of

pytestmark = pytest.mark.anyio


# -- strategies: Brave-side junk ----------------------------------------------------------------

URLS = ("https://a.example/x", "https://a.example/x#frag", "http://b.example/p?q=1", "https://c.example/", "ftp://d/")

json_scalars = scalars(wild=False)
json_junk = values(wild=False, max_depth=60)
field_values = field_values_of(json_scalars)


urls = mostly(st.one_of(st.sampled_from(URLS), st.sampled_from(URLS).map(lambda u: u + "\u00e9/<b>")), json_scalars)
small_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=30), markup_text)


def brave_results(address: st.SearchStrategy[Any], fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    item = st.fixed_dictionaries({"url": address}, optional=dict.fromkeys(RESULT_FIELDS, fields))
    return mostly(item, json_scalars)


results = brave_results(urls, field_values)
# A huge list: one small result repeated (a list of distinct huge results would not fit in a response).
small_result = st.fixed_dictionaries(
    {"url": st.sampled_from(URLS)},
    optional={"title": small_scalars, "description": small_scalars, "age": small_scalars, "type": small_scalars},
)
huge_results = st.builds(lambda item, n: [item] * n, small_result, st.integers(200, 2_500))
result_lists = st.one_of(st.lists(results, max_size=8), st.lists(results, min_size=1, max_size=8), huge_results)
sections = mostly(
    st.fixed_dictionaries(
        {"results": result_lists}, optional={"type": json_scalars, "mutated_by_goggles": json_scalars}
    ),
    field_values,
)
query_objects = query_objects_of(json_scalars)


@st.composite
def search_bodies(draw: st.DrawFn, search_type: str) -> Any:
    """A Brave-shaped answer for ``search_type`` with fields missing, mistyped, null, huge or hostile."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_junk)
    body: dict[str, Any] = {}
    kind = draw(st.integers(0, 7))
    if kind < 6:
        body["type"] = ANSWER_TYPES[search_type]
    elif kind == 6:
        body["type"] = draw(json_scalars)
    if draw(st.booleans()):
        body["query"] = draw(query_objects)
    if search_type == "web":
        for name in WEB_SECTIONS:
            if name == "web" or draw(st.booleans()):
                body[name] = draw(sections)
        if draw(st.booleans()):
            body["summarizer"] = draw(st.one_of(field_values, st.fixed_dictionaries({"key": json_scalars})))
        if draw(st.booleans()):
            body["mixed"] = draw(json_junk)
    else:
        body["results"] = draw(mostly(result_lists, field_values))
    return body


RAW_BODIES = (
    b"",
    b"   \n",
    b"null",
    b"[]",
    b'"a string"',
    b"12",
    b"{",
    b'{"web": {"results": [',
    b"\xff\xfe{}",
    b"\xef\xbb\xbf{}",  # a UTF-8 byte-order mark before the JSON
    b"<html><body>502 Bad Gateway</body></html>",
    b'{"web": {"results": [{"url": "https://a.example/", "title": NaN, "description": Infinity}]}}',
    b'{"web": {"results": [{"url": "https://a.example/\\ud800", "title": "t\\udfff"}]},'
    b' "query": {"altered": "\\ud800"}}',
    b'{"results": [{"url": "https://a.example/", "title": "x", "title": 5}]}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"web": {"results": [' + b"1" * 5_000 + b"]}}",  # an integer past Python's 4300-digit parsing limit
)


@st.composite
def wire_bodies(draw: st.DrawFn, search_type: str) -> tuple[bytes, bool]:
    """(body bytes as sent, gzip-encoded?) — JSON of a generated answer, or raw bytes Brave should never send."""
    roll = draw(st.integers(0, 15))
    if roll == 0:
        raw = draw(st.one_of(st.sampled_from(RAW_BODIES), st.binary(max_size=300)))
    else:
        document = draw(search_bodies(search_type))
        raw = json.dumps(document, ensure_ascii=draw(st.booleans())).encode("utf-8", errors="surrogatepass")
        if roll == 1:
            raw = raw[: draw(st.integers(0, max(0, len(raw) - 1)))]  # cut off mid-body
    zipped = draw(st.booleans())
    return (gzip.compress(raw, mtime=0) if zipped else raw), zipped


class Replay:
    """A MockTransport handler answering every request with the body under test."""

    def __init__(self) -> None:
        self.body = b"{}"
        self.zipped = False
        self.requests = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        headers = {"Content-Type": "application/json"}
        if self.zipped:
            headers["Content-Encoding"] = "gzip"
        return httpx2.Response(200, content=self.body, headers=headers)


limits = st.tuples(st.integers(MIN_MAX_LINES, MAX_MAX_LINES), st.integers(MIN_MAX_BYTES, MAX_MAX_BYTES))


# -- body fuzzing -------------------------------------------------------------------------------


async def test_random_brave_bodies_through_the_whole_search_service() -> None:
    replay = Replay()
    # No cache: every example must reach the transport and get its own body.
    async with fuzzed_boundary(httpx2.MockTransport(replay), cache_size=0) as boundary:
        cap = boundary.settings.max_response_bytes

        @BODY_FUZZ
        @given(st.data(), st.sampled_from(sorted(ANSWER_TYPES)), limits, st.booleans())
        def bodies(data: st.DataObject, search_type: str, bounds: tuple[int, int], debug: bool) -> None:
            wire, zipped = data.draw(wire_bodies(search_type))
            replay.body, replay.zipped = wire, zipped
            max_lines, max_bytes = bounds
            arguments: dict[str, Any] = {
                "query": "fuzzed answer",
                "search_type": search_type,
                "max_lines": max_lines,
                "max_bytes": max_bytes,
            }
            if debug:
                arguments |= {"debug": True, "include_raw_payload": True}
            before = replay.requests
            outcome = anyio.from_thread.run(boundary.call, "brave_web_search", arguments)
            assert replay.requests == before + 1  # 200 answers are never retried
            envelope = outcome.structured
            assert envelope["api_version"] == "v1"
            outcome.text.encode("utf-8")
            json.dumps(envelope, ensure_ascii=False).encode("utf-8")
            assert "Traceback" not in outcome.text
            if outcome.is_error:
                code = envelope["error"]["code"]
                decoded = gzip.decompress(wire) if zipped else wire
                expected = {"PARSE_ERROR", "NO_RESULTS"} | ({"RESPONSE_TOO_LARGE"} if len(decoded) > cap else set())
                assert code in expected, envelope["error"]
                assert envelope["error"]["retryable"] is False
                event(code)
                return
            event("results")
            returned = envelope["meta"]["returned"]  # results: the direct answers (an infobox) are not counted
            assert returned == sum(len(s["results"]) for s in envelope["sections"] if s["key"] not in DIRECT_ANSWERS)
            if returned == len(envelope["sections"]) == 0:  # tight bounds and a long tail: it says so
                assert any(w["code"] == "OUTPUT_TRUNCATED" for w in envelope["warnings"]), envelope["warnings"]
                event("no room for one result")
            for section in envelope["sections"]:
                for result in section["results"]:
                    assert result["url"].startswith(("http://", "https://"))
                    assert result["title"]
                    assert "\n" not in result["title"] + result["snippet"]
            text = outcome.text
            if debug:
                text, _, debug_line = text.partition("\n[debug] ")
                assert debug_line
                raw = envelope["debug"]["raw_payload"]
                assert len(raw.encode("utf-8")) <= DEBUG_PAYLOAD_CAP_BYTES
            assert len(text.split("\n")) <= max_lines
            assert len(text.encode("utf-8")) <= max_bytes

        await in_worker(bodies)


plausible_messages = st.one_of(
    st.fixed_dictionaries({"type": st.just("token"), "data": texts}),
    st.fixed_dictionaries(
        {"type": st.just("inline_reference"), "data": st.fixed_dictionaries({"url": urls, "number": json_scalars})}
    ),
    st.fixed_dictionaries({"type": st.just("enum_start"), "data": st.sampled_from(["ol", "ul", None])}),
    st.fixed_dictionaries({"type": st.just("enum_end")}),
    st.fixed_dictionaries(
        {"type": st.just("enum_item"), "data": st.fixed_dictionaries({}, optional={"name": texts, "text": texts})}
    ),
)
junk_messages = st.one_of(
    st.fixed_dictionaries({"type": json_scalars}, optional={"data": field_values}),
    json_scalars,
)
summary_messages = st.lists(mostly(plausible_messages, junk_messages), max_size=30)
summarizer_bodies = mostly(
    st.fixed_dictionaries(
        {
            "status": mostly(st.sampled_from(["complete", "complete", "complete", "pending", "failed"]), json_scalars),
            "summary": mostly(summary_messages, field_values),
        },
        optional={
            "type": st.just("summarizer"),
            "title": field_values,
            "enrichments": st.one_of(
                field_values,
                st.fixed_dictionaries(
                    {}, optional={"raw": field_values, "context": st.lists(field_values, max_size=30)}
                ),
            ),
            "followups": st.one_of(st.lists(field_values, max_size=20), field_values),
            "entities_infos": st.one_of(field_values, json_junk),
        },
    ),
    json_junk,
)


async def test_random_summarizer_bodies_through_the_whole_service() -> None:
    replay = Replay()
    async with fuzzed_boundary(httpx2.MockTransport(replay), cache_size=0) as boundary:

        @BODY_FUZZ
        @given(summarizer_bodies, st.booleans(), st.booleans())
        def bodies(document: Any, entity_info: bool, inline_references: bool) -> None:
            replay.body = json.dumps(document).encode()
            replay.zipped = False
            arguments = {"key": "fuzz-key", "entity_info": entity_info, "inline_references": inline_references}
            outcome = anyio.from_thread.run(boundary.call, "brave_summarizer", arguments)
            envelope = outcome.structured
            assert envelope["api_version"] == "v1"
            outcome.text.encode("utf-8")
            assert "Traceback" not in outcome.text
            if outcome.is_error:
                code = envelope["error"]["code"]
                too_large = {"RESPONSE_TOO_LARGE"} if len(replay.body) > boundary.settings.max_response_bytes else set()
                assert code in {"SUMMARY_UNAVAILABLE", "PARSE_ERROR"} | too_large, envelope["error"]
                event(code)
                return
            event("summary")
            assert envelope["summary_text"].strip()
            assert len(envelope["summary_text"]) <= MAX_TEXT_CHARS
            assert len(envelope["references"]) <= MAX_REFERENCES
            assert len(envelope["followups"]) <= MAX_FOLLOWUPS
            assert all(r["url"].startswith(("http://", "https://")) for r in envelope["references"])
            assert math.isfinite(envelope["meta"]["duration_ms"])

        await in_worker(bodies)
