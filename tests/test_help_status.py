"""Help cannot drift from validation; status tells the truth and never shows the key."""

from __future__ import annotations

import json
from typing import Any

import pytest

from brave_search_mcp.brave import facts as params
from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.params import prepare_search
from brave_search_mcp.config import Settings
from brave_search_mcp.models.errors import ErrorCode, InternalError, WarningCode
from brave_search_mcp.models.inputs import WebSearchArgs
from brave_search_mcp.tools.boundary import error_outcome
from brave_search_mcp.tools.help import EXAMPLES, ToolDoc, build_help, render_help_text
from brave_search_mcp.tools.registry import all_tools
from testkit.brave.brave import VALID_KEY, FakeBrave
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.tools import tool_boundary

pytestmark = pytest.mark.anyio

TOOL_MODELS = {tool.name: tool.input_model for tool in all_tools()}
TOOL_DOCS = [ToolDoc(tool.name, tool.input_model, tool.help) for tool in all_tools()]


def test_help_lists_exactly_the_parameters_the_models_accept() -> None:
    doc = build_help("params", Settings(), TOOL_DOCS)
    for tool, model in TOOL_MODELS.items():
        listed = {entry["name"] for entry in doc["parameters"][tool]}
        assert listed == set(model.model_fields), tool
        aliases = {alias for entry in doc["parameters"][tool] for alias in entry.get("aliases", [])}
        assert aliases == {a for names in model.ALIASES.values() for a in names}, tool


def test_help_lists_exactly_the_codes_the_errors_module_defines() -> None:
    doc = build_help("errors", Settings(), TOOL_DOCS)
    assert [e["code"] for e in doc["error_codes"]] == [c.value for c in ErrorCode]
    assert [w["code"] for w in doc["warning_codes"]] == [c.value for c in WarningCode]
    assert all(e["what_to_do"] for e in doc["error_codes"])
    retryable = {e["code"]: e["retryable"] for e in doc["error_codes"]}
    assert retryable["RATE_LIMITED"] is True
    assert retryable["QUOTA_EXCEEDED"] is False


def test_help_says_an_internal_error_is_retryable_as_its_envelope_does() -> None:
    doc = build_help("errors", Settings(), TOOL_DOCS)
    envelope = error_outcome("brave_web_search", InternalError("boom"), "0" * 16).structured["error"]
    assert envelope["retryable"] is True
    assert {e["code"]: e["retryable"] for e in doc["error_codes"]}["INTERNAL_ERROR"] is True
    assert "- INTERNAL_ERROR (retryable):" in render_help_text(doc)


def test_help_carries_the_value_lists_the_schemas_leave_out() -> None:
    entries = {e["name"]: e for e in build_help("params", Settings(), TOOL_DOCS)["parameters"]["brave_web_search"]}
    assert entries["country"]["values"] == list(params.COUNTRIES)
    assert entries["search_language"]["values"] == list(params.SEARCH_LANGUAGES)
    assert entries["ui_language"]["values"] == list(params.UI_LANGUAGES)
    assert entries["safe_search"]["values"] == ["off", "moderate", "strict"]
    assert entries["max_results"]["aliases"] == ["count"]


def test_help_limits_follow_the_rules_and_settings() -> None:
    limits = build_help("limits", make_settings(max_lines=200), TOOL_DOCS)["limits"]
    assert limits["max_results"]["images"]["max"] == 200
    assert limits["max_results"]["web"]["max"] == 20
    assert limits["output"]["max_lines"]["default"] == 200
    assert limits["query"] == {"max_chars": 400, "max_words": 50}


@pytest.mark.parametrize("topic", ["params", "examples", "limits", "errors", "all"])
def test_help_topics_select_sections(topic: Any) -> None:
    doc = build_help(topic, Settings(), TOOL_DOCS)
    sections = {"parameters", "search_types", "examples", "limits", "error_codes", "warning_codes"} & set(doc)
    expected = {
        "params": {"parameters", "search_types"},
        "examples": {"examples"},
        "limits": {"limits"},
        "errors": {"error_codes", "warning_codes"},
        "all": {"parameters", "search_types", "examples", "limits", "error_codes", "warning_codes"},
    }[topic]
    assert sections == expected
    assert render_help_text(doc).startswith(f"brave-search help ({topic})")


def test_every_example_is_valid_input_for_its_tool() -> None:
    for example in EXAMPLES:
        TOOL_MODELS[example["tool"]].model_validate(example["arguments"])
        if example["tool"] == "brave_web_search":
            prepared = prepare_search(WebSearchArgs.model_validate(example["arguments"]), Settings())
            assert prepared.warnings == (), example


async def _status(fake: FakeBrave, settings: Settings, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
    clock = FakeClock()
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        service = tool_boundary(settings, client, clock=clock, sleep=clock.sleep)
        await service.call("brave_web_search", {"query": "warm up"})
        outcome = await service.call("brave_web_search_status", arguments)
        assert not outcome.is_error
        return outcome.structured, outcome.text


async def test_status_ok_reports_settings_limits_cache_and_never_the_key(fake: FakeBrave) -> None:
    report, text = await _status(fake, make_settings(), {"verbose": True, "include_limits": True})
    assert report["status"] == "ok"
    assert report["key"] == {"configured": True, "source": "BRAVE_SEARCH_API_KEY", "file": None}
    assert report["rate_limit"]["per_second"] is not None
    assert report["rate_limit"]["remaining_month"] is not None
    assert report["cache"]["misses"] == 1
    assert report["cache"]["entries"] == 1
    assert report["counters"]["web"]["requests"] == 1
    assert report["limits"]["max_results"]["news"]["max"] == 50
    assert "probe" not in report
    assert "goes alone" not in text  # the tests' explicit rate is trusted as given


async def test_status_shows_the_whole_plan_in_force_from_the_answer_that_stated_it() -> None:
    """Issue 44: one clean answer stating 20/s: the whole plan is in force at once (no ramp to show)."""
    fake = FakeBrave(rate_per_second=20)
    report, text = await _status(fake, make_settings(rate_limit=None, burst=None), {})
    plan = report["throttle"]
    assert (plan["plan_stated"], plan["at_once"], plan["burst"], report["settings"]["burst"]) == (True, 20, 20, 20)
    assert "rate in force: 20/s burst 20 (adaptive, plan 20/s)" in text and "goes alone" not in text
    everything = json.dumps(report) + text
    assert VALID_KEY not in everything
    assert VALID_KEY[:6] not in everything


async def test_status_probe_sends_one_count_1_request_per_endpoint(fake: FakeBrave) -> None:
    before = len(fake.requests)
    report, text = await _status(fake, make_settings(), {"probe_connectivity": True})
    probes = fake.requests[before + 1 :]
    assert [r.path.rsplit("/", 2)[-2] for r in probes] == ["web", "news", "images", "videos"]
    assert all(("count", "1") in r.params for r in probes)
    assert [p["ok"] for p in report["probe"]] == [True] * 4
    assert "probe web: ok" in text


async def test_status_probe_through_a_fault_is_degraded(fake: FakeBrave) -> None:
    fake.inject("400_not_in_plan", path="/res/v1/images/search")
    report, text = await _status(fake, make_settings(), {"probe_connectivity": True})
    assert report["status"] == "degraded"
    images = next(p for p in report["probe"] if p["search_type"] == "images")
    assert (images["ok"], images["code"]) == (False, "NOT_IN_PLAN")
    assert "probe failed for images" in report["reasons"]
    assert "! probe failed for images" in text


async def test_status_unconfigured_sends_nothing(fake: FakeBrave) -> None:
    settings = make_settings(api_key=None, api_key_source=None)
    clock = FakeClock()
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        outcome = await tool_boundary(settings, client).call("brave_web_search_status", {"probe_connectivity": True})
    assert outcome.structured["status"] == "unconfigured"
    assert outcome.structured["key"] == {"configured": False, "source": None, "file": None}
    assert fake.requests == []


async def test_a_probe_in_a_fresh_process_reports_what_it_saw() -> None:
    """Issue 37 item 5: no 'not seen yet', 'not learned yet' or 'paused' under four ok probes; rate_limit in the
    report agrees with the plan the throttle confirmed."""
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1, clock=clock)  # a 1/s plan: the probes' last request spends its second
    settings = make_settings(rate_limit=None, burst=None)
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        service = tool_boundary(settings, client, clock=clock, sleep=clock.sleep)
        outcome = await service.call("brave_web_search_status", {"probe_connectivity": True})
    report, text = outcome.structured, outcome.text
    assert [p["ok"] for p in report["probe"]] == [True] * 4
    assert (report["status"], report["reasons"]) == ("ok", [])
    assert report["rate_limit"]["per_second"] == 1 and report["throttle"]["plan_per_second"] == 1
    assert report["settings"]["rate_limit_per_second"] == 1
    assert "brave limits: 1/s" in text or "brave limits: 1.0/s" in text
    for contradiction in ("not seen yet", "not learned yet", "paused"):
        assert contradiction not in text


async def test_a_pause_that_outlasts_the_probe_is_still_reported(fake: FakeBrave) -> None:
    """Only the probes' own pause is left out: one Brave demanded before them, still running, keeps 'paused'."""
    fake.inject("429", retry_after=20, reset=20)
    clock = FakeClock()
    settings = make_settings(retries=0, call_deadline_seconds=10)  # the pause outlasts every probe's budget
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        service = tool_boundary(settings, client, clock=clock, sleep=clock.sleep)
        assert (await service.call("brave_web_search", {"query": "hello"})).is_error
        outcome = await service.call("brave_web_search_status", {"probe_connectivity": True})
    assert outcome.structured["status"] == "paused"


async def test_a_rejected_argument_points_at_the_help_topic_that_lists_that_tools_arguments(fake: FakeBrave) -> None:
    """Issue 37 item 4: read_url's errors pointed at help that did not say it covered read_url."""
    settings = make_settings()
    clock = FakeClock()
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        service = tool_boundary(settings, client, clock=clock, sleep=clock.sleep)
        rejected = await service.call("read_url", {"url": "https://example.com/", "start_char": -1})
        topic = await service.call("brave_web_search_help", {"topic": "params"})
    assert rejected.is_error
    assert 'brave_web_search_help with topic "params" lists the arguments of read_url' in rejected.text
    assert "start_char" in {entry["name"] for entry in topic.structured["parameters"]["read_url"]}
