"""Reading what the server and the machine wrote: log lines, import times, markup, ages, /proc, hot spots."""

from __future__ import annotations

import json

import pytest

from bench.hotspots import BUILTINS_FILE, code_label, hot_spots
from bench.machine import cpu_model, mem_total_bytes, physical_cores
from bench.readings import find_markup, import_profile, parse_call_log, parse_importtime, source_ages, text_of
from bench.rpc import read_vm_status
from testkit.brave import VALID_KEY
from testkit.stdio import RpcError, result_of, server_env

# ------------------------------------------------------------------------------------------------ parsing


def test_call_log_lines_are_found_by_trace_id() -> None:
    lines = [
        "import time: noise",
        json.dumps({"msg": "tool call", "trace_id": "a1", "duration_ms": 0.4, "cache_hit": True, "attempts": 0}),
        json.dumps({"msg": "something else", "trace_id": "zz", "duration_ms": 9}),
        "{not json",
        json.dumps({"msg": "tool call", "trace_id": "b2", "duration_ms": 3.2, "cache_hit": False, "attempts": 1}),
    ]
    calls = parse_call_log("\n".join(lines))
    assert set(calls) == {"a1", "b2"}
    assert calls["a1"].duration_ms == 0.4 and calls["a1"].cache_hit is True
    assert calls["b2"].attempts == 1


def test_importtime_parsing_and_the_extra_modules() -> None:
    floor = "import time: self [us] | cumulative | imported package\nimport time:       100 |        100 | json\n"
    server = floor + "import time:      2500 |       3000 |   brave_search_mcp.models\nimport time: 7 | 7 | tiny\n"
    assert parse_importtime(floor) == {"json": 100}
    profile = import_profile([parse_importtime(floor)], [parse_importtime(server)])
    assert profile.top_extra == [("brave_search_mcp.models", 2.5), ("tiny", 0.01)]
    assert profile.extra_total_ms == pytest.approx(2.507)
    assert profile.floor_total_ms == pytest.approx(0.1)
    with pytest.raises(ValueError, match="same"):
        import_profile([], [])


def test_markup_finder_sees_tags_and_entities_but_not_plain_text() -> None:
    assert find_markup("Vec<T> is fine, so is a & b and x < y > z") == []
    assert find_markup("a <strong>b</strong> &quot;c&#x27; &#39;") == [
        "<strong>",
        "</strong>",
        "&quot;",
        "&#x27;",
        "&#39;",
    ]


def test_source_ages_prefer_age_then_page_age() -> None:
    results = [{"age": "2 days ago", "page_age": "2024"}, {"page_age": "2023-01-01"}, {"age": " "}, {}]
    assert source_ages(results) == ["2 days ago", "2023-01-01"]


def test_text_of_joins_only_text_content() -> None:
    result = {"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "x"}, {"type": "text", "text": "b"}]}
    assert text_of(result) == "ab"


def test_vm_status_lines() -> None:
    status = "Name:\tpython\nVmPeak:\t  300 kB\nVmHWM:\t   79000 kB\nVmRSS:\t 78000 kB\nThreads: 3\n"
    assert read_vm_status(status) == {"VmPeak": 300, "VmHWM": 79000, "VmRSS": 78000}


def test_jsonrpc_error_is_an_rpc_error() -> None:
    assert result_of({"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}) == {"ok": True}
    with pytest.raises(RpcError, match="JSON-RPC error"):
        result_of({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "nope"}})


@pytest.mark.parametrize("for_tests", [True, False])
def test_server_env_is_minimal_and_points_at_the_fake(for_tests: bool) -> None:
    env = server_env("http://127.0.0.1:1234", for_tests=for_tests, BRAVE_SEARCH_RETRIES="0")
    assert env["BRAVE_SEARCH_BASE_URL"] == "http://127.0.0.1:1234"
    assert env["BRAVE_SEARCH_API_KEY"] == VALID_KEY
    assert env["BRAVE_SEARCH_RETRIES"] == "0"
    assert not [name for name in env if name not in ("PATH", "HOME") and not name.startswith("BRAVE_SEARCH_")]
    assert ("BRAVE_SEARCH_STATE" in env) is for_tests  # the bench measures the shipped defaults


CPUINFO = """processor\t: 0
model name\t: Example CPU @ 3.00GHz
physical id\t: 0
core id\t: 0

processor\t: 1
model name\t: Example CPU @ 3.00GHz
physical id\t: 0
core id\t: 0

processor\t: 2
model name\t: Example CPU @ 3.00GHz
physical id\t: 0
core id\t: 1
"""


def test_machine_facts_from_proc_text() -> None:
    assert cpu_model(CPUINFO) == "Example CPU @ 3.00GHz"
    assert cpu_model("processor : 0\n") == "unknown"
    assert physical_cores(CPUINFO) == 2
    assert physical_cores("processor : 0\n") is None
    assert mem_total_bytes("MemTotal:       2048 kB\nMemFree: 1 kB\n") == 2048 * 1024
    assert mem_total_bytes("") is None


def test_hot_spots_sum_own_time_per_function_and_file() -> None:
    entries = [
        ("f.py", "f.py:a", 0.3),
        ("f.py", "f.py:b", 0.1),
        ("f.py", "f.py:a", 0.1),
        (BUILTINS_FILE, "<method 'join' of 'str' objects>", 0.5),
    ]
    functions, files = hot_spots(entries, calls=10, top=2)
    assert [(s.label, round(s.share, 2)) for s in functions] == [
        ("<method 'join' of 'str' objects>", 0.5),
        ("f.py:a", 0.4),
    ]
    assert files[0].label == BUILTINS_FILE and files[1].label == "f.py"
    assert files[1].own_us_per_call == pytest.approx(50_000)
    assert hot_spots([], calls=1) == ([], [])
    with pytest.raises(ValueError, match="positive"):
        hot_spots(entries, calls=0)


def test_code_labels_name_anonymous_code_by_line() -> None:
    file, label = code_label((lambda: None).__code__)
    assert file.endswith("test_readings.py")
    assert label.startswith(file + ":<lambda> (line ")
    assert code_label("<built-in method len>") == (BUILTINS_FILE, "<built-in method len>")
