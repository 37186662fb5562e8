"""Issue 36 item 6: status never says ``ok`` while the state is degraded, a stored value was dropped, the rate
limiting failed, or the last calls failed on a setting (a rejected key, a misconfigured provider): it names the
cause, and says ``ok`` again once it is gone. Item 1: a breaker record no process of ours wrote is dropped and
rebuilt, never adopted."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.compose import build_tools, open_client
from brave_search_mcp.providers.breaker import CircuitBreaker
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.ratelimit.admission import Admission
from brave_search_mcp.tools.boundary import ToolBoundary
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock
from testkit.searxng import FakeSearxng
from testkit.settings import make_settings
from testkit.tools import tool_boundary

pytestmark = pytest.mark.anyio


async def _status(tools: ToolBoundary) -> tuple[str, list[str], str]:
    outcome = await tools.call("brave_web_search_status", {})
    assert not outcome.is_error
    return outcome.structured["status"], outcome.structured["reasons"], outcome.text


async def test_a_rejected_key_is_named_until_a_call_succeeds(fake: FakeBrave) -> None:
    clock = FakeClock()
    settings = make_settings()
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        tools = tool_boundary(settings, client, clock=clock, sleep=clock.sleep)
        fake.inject("422_token")
        failed = await tools.call("brave_web_search", {"query": "rejected"})
        assert failed.structured["error"]["code"] == "AUTH_FAILED"
        status, reasons, text = await _status(tools)
        assert status == "degraded"
        assert any("rejected the API key (AUTH_FAILED)" in r and "web" in r for r in reasons), reasons
        assert "! Brave rejected the API key" in text
        assert not (await tools.call("brave_web_search", {"query": "accepted again"})).is_error
        assert (await _status(tools))[0] == "ok"


async def test_a_provider_misconfigured_is_named_although_the_fallback_answers(fake: FakeBrave) -> None:
    """SearXNG with JSON output off: every search falls back to Brave and succeeds, but status names SearXNG's
    setting instead of saying ok; once SearXNG answers, it is ok again."""
    clock, searxng = FakeClock(), FakeSearxng()
    searxng.json_enabled = False
    settings = make_settings(providers="searxng,brave", searxng_url="http://searxng.test")
    provider = SearxngProvider(
        SearxngConfig("http://searxng.test"), transport=searxng.mock_transport(), clock=clock, sleep=clock.sleep
    )
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        tools = build_tools(settings, client, clock=clock, sleep=clock.sleep, others={"searxng": provider})
        answered = await tools.call("brave_web_search", {"query": "json off"})
        assert answered.structured["meta"]["provider"] == "brave"
        status, reasons, _ = await _status(tools)
        assert status == "degraded"
        assert any(
            r.startswith("searxng: the last call failed on its configuration (PROVIDER_MISCONFIGURED") for r in reasons
        )
        searxng.json_enabled = True
        answered = await tools.call("brave_web_search", {"query": "json on"})
        assert answered.structured["meta"]["provider"] == "searxng"
        assert (await _status(tools))[0] == "ok"


async def test_a_rejected_key_in_a_chain_is_named_once(fake: FakeBrave) -> None:
    """Brave first, SearXNG behind it: a rejected key falls back and status names it in one line (with the
    endpoint), not twice (once more as the Brave breaker's setting error)."""
    clock, searxng = FakeClock(), FakeSearxng()
    settings = make_settings(providers="brave,searxng", searxng_url="http://searxng.test")
    provider = SearxngProvider(
        SearxngConfig("http://searxng.test"), transport=searxng.mock_transport(), clock=clock, sleep=clock.sleep
    )
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        tools = build_tools(settings, client, clock=clock, sleep=clock.sleep, others={"searxng": provider})
        fake.inject("422_token")
        answered = await tools.call("brave_web_search", {"query": "rejected"})
        assert answered.structured["meta"]["provider"] == "searxng", answered.text
        status, reasons, _ = await _status(tools)
    assert status == "degraded"
    assert [r for r in reasons if "AUTH_FAILED" in r] == [
        "Brave rejected the API key (AUTH_FAILED) on the last call to web"
    ]


@asynccontextmanager
async def _on_sqlite(fake: FakeBrave, path: Path, **overrides: Any) -> AsyncIterator[ToolBoundary]:
    settings = make_settings(state=f"sqlite://{path}", **overrides)
    async with open_client(settings, transport=fake.mock_transport()) as client:
        yield build_tools(settings, client, backend=client.limits.state)


async def test_a_degraded_state_is_named(fake: FakeBrave, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    async with _on_sqlite(fake, tmp_path / "a-file" / "s.db") as tools:  # its directory cannot be made
        assert not (await tools.call("brave_web_search", {"query": "served on memory"})).is_error
        status, reasons, _ = await _status(tools)
    assert status == "degraded"
    assert any(r.startswith("shared state unavailable") and "a-file" in r for r in reasons), reasons


async def test_a_dropped_record_is_named(fake: FakeBrave, tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with _on_sqlite(fake, path) as tools:
        backend = tools.ports.client.limits.state
        await backend.records.put("some record", {"a": 1})
        with sqlite3.connect(path) as other:
            other.execute("UPDATE records SET value = '[1, 2]'")
        assert await backend.records.get("some record") is None
        status, reasons, _ = await _status(tools)
    assert status == "degraded"
    assert any("1 stored value(s) failed validation and were dropped" in r for r in reasons), reasons


async def test_a_stored_plan_status_refuses_is_named_not_silently_repaired(
    fake: FakeBrave, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored plan holding a pause of four months (no rule sets one) is dropped and rebuilt when status reads it:
    status says so (degraded, the cause named) instead of repairing it silently and saying ok; one warning line."""
    path = tmp_path / "s.db"
    async with _on_sqlite(fake, path) as tools:
        assert not (await tools.call("brave_web_search", {"query": "learn the plan"})).is_error
        await tools.ports.client.limits.state.settle()
        with sqlite3.connect(path) as other:
            for name, text in other.execute("SELECT upstream, state FROM plans").fetchall():
                plan = json.loads(text) | {"blocked_until": time.time() + 10**7}
                other.execute("UPDATE plans SET state = ? WHERE upstream = ?", (json.dumps(plan), name))
        with caplog.at_level(logging.WARNING, logger="brave_search_mcp"):
            status, reasons, _ = await _status(tools)
        with sqlite3.connect(path) as other:
            stored = [json.loads(text) for (text,) in other.execute("SELECT state FROM plans")]
    assert status == "degraded"
    assert any("failed validation and were dropped" in r and "rate-limit plan" in r for r in reasons), reasons
    assert all(plan.get("blocked_until") is None or plan["blocked_until"] < time.time() + 60 for plan in stored)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "plan" in r.getMessage()]
    assert len(warnings) == 1, warnings


@asynccontextmanager
async def _queue_raising(
    error: Exception, fake: FakeBrave, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ToolBoundary]:
    """The tools over a client whose search queue raises ``error`` (something no layer expects) on every wait."""
    clock = FakeClock()
    settings = make_settings()

    async def broken(self: Any, **_: Any) -> float:
        raise error

    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        assert isinstance(client.limits.search, Admission)
        monkeypatch.setattr(type(client.limits.search.limiter), "acquire", broken)
        yield tool_boundary(settings, client, clock=clock, sleep=clock.sleep)


async def test_a_failure_inside_admission_goes_out_without_it_and_is_named(
    fake: FakeBrave, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in admission (here: the queue raising something no layer expects) used to end the call with
    INTERNAL_ERROR; the request now goes out without admission and status names the failure."""
    async with _queue_raising(ZeroDivisionError("a plan nobody validated"), fake, monkeypatch) as tools:
        answered = await tools.call("brave_web_search", {"query": "goes out anyway"})
        assert not answered.is_error, answered.text
        assert fake.hits("/web/search", status=200) == 1
        status, reasons, _ = await _status(tools)
    assert status == "degraded"
    assert any("rate limiting failed" in r and "ZeroDivisionError: a plan nobody validated" in r for r in reasons)


async def test_a_failure_inside_admission_is_named_while_it_lasts_and_logged_once(
    fake: FakeBrave, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The failure is named while the step keeps failing (one warning with its trace for all of them); the first
    call whose step works again clears it, so status says ok again instead of "degraded" for the process's life."""
    async with _queue_raising(ZeroDivisionError("a glitch"), fake, monkeypatch) as tools:
        with caplog.at_level(logging.WARNING, logger="brave_search_mcp"):
            for query in ("one", "two"):
                assert not (await tools.call("brave_web_search", {"query": query})).is_error
                status, reasons, _ = await _status(tools)
                assert status == "degraded" and any("ZeroDivisionError: a glitch" in r for r in reasons), reasons
        traces = [r for r in caplog.records if "admission failed in admit" in r.getMessage()]
        assert len(traces) == 1 and traces[0].exc_info is not None
        monkeypatch.undo()  # the glitch is over
        assert not (await tools.call("brave_web_search", {"query": "three"})).is_error
        status, reasons, _ = await _status(tools)
    assert (status, reasons) == ("ok", [])


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ({"failures": 10**30, "opened_wall": None}, "failures"),
        ({"failures": True}, "failures"),
        ({"failures": 3, "opened_wall": float("inf")}, "opened_wall"),
        ({"failures": 3, "opened_wall": 1e308}, "opened_wall"),
        ({"failures": 3, "opened_wall": "yesterday"}, "opened_wall"),
        ({"failures": 3, "opened_wall": None, "last_error": "x" * 5000}, "last_error"),
    ],
)
def test_a_breaker_record_no_process_of_ours_wrote_is_refused_whole(record: dict[str, Any], why: str) -> None:
    breaker = CircuitBreaker("searxng", threshold=3, clock=lambda: 100.0, wall_clock=time.time)
    breaker.record_failure("timeout")
    before = breaker.snapshot()
    with pytest.raises(ValueError, match=why):
        breaker.adopt(record)
    assert breaker.snapshot() == before


async def test_a_bad_breaker_record_is_dropped_and_written_anew(fake: FakeBrave, tmp_path: Path) -> None:
    """An inf opening time in the shared record (hand-edited, another program) is not adopted: it is dropped, the
    breaker's own state is written in its place, and every search goes on."""
    path = tmp_path / "s.db"
    searxng = FakeSearxng()
    clock = FakeClock()
    provider = SearxngProvider(
        SearxngConfig("http://searxng.test"), transport=searxng.mock_transport(), clock=clock, sleep=clock.sleep
    )
    settings = make_settings(state=f"sqlite://{path}", providers="searxng,brave", searxng_url="http://searxng.test")
    async with open_client(settings, transport=fake.mock_transport()) as client:
        tools = build_tools(settings, client, backend=client.limits.state, others={"searxng": provider})
        assert not (await tools.call("brave_web_search", {"query": "first"})).is_error
        with sqlite3.connect(path) as other:
            other.execute("""UPDATE records SET value = '{"failures": 3, "opened_wall": 1e999}'""")
        answered = await tools.call("brave_web_search", {"query": "second"})
        assert answered.structured["meta"]["provider"] == "searxng", answered.text
        status, reasons, _ = await _status(tools)
    assert status == "degraded" and any("breaker: opened_wall" in r for r in reasons), reasons
    with sqlite3.connect(path) as other:
        values = [row[0] for row in other.execute("SELECT value FROM records WHERE key LIKE '%breaker:searxng'")]
    assert values and all("Infinity" not in v for v in values)


async def test_status_after_an_ordinary_request_is_ok_and_a_fresh_process_shows_the_learned_rate(
    tmp_path: Path,
) -> None:
    """Issue 43 item 14: a 1/s plan's spent second read as 'paused', and a fresh process (the CLI's status) said
    'not learned yet (the first request goes alone)' beside 'plan 1/s' from the shared state."""
    fake = FakeBrave(rate_per_second=1)
    path = tmp_path / "s.db"
    async with _on_sqlite(fake, path, rate_limit=None, burst=None) as tools:
        assert not (await tools.call("brave_web_search", {"query": "an ordinary search"})).is_error
        status, reasons, text = await _status(tools)
    assert (status, reasons) == ("ok", [])
    assert "paused" not in text
    async with _on_sqlite(fake, path, rate_limit=None, burst=None) as fresh:
        status, reasons, text = await _status(fresh)
    assert (status, reasons) == ("ok", [])
    assert "rate in force: 1/s burst 1 (a stored plan: this process's next request goes alone to check it, " in text
    assert "(adaptive, plan 1/s)" in text and "not learned yet" not in text  # issue 44: a stored plan is checked once
