"""The command line: exit codes 0/1/2, readable errors on stderr, JSON on request, the skill entry."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from brave_search_mcp.config import Settings
from brave_search_mcp.faces.cli import main, missing_key_line
from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import user_dirs


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBraveServer]:
    for name in ("BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY", "BRAVE_API_KEY_FILE", "BRAVE_SEARCH_LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    with FakeBraveServer(rate_per_second=1000) as server:
        monkeypatch.setenv("BRAVE_SEARCH_BASE_URL", server.base_url)
        monkeypatch.setenv("BRAVE_SEARCH_API_KEY", VALID_KEY)
        monkeypatch.setenv("BRAVE_SEARCH_RETRY_BASE_MS", "1")
        monkeypatch.setenv("BRAVE_SEARCH_RETRY_MAX_MS", "2")
        monkeypatch.setenv("BRAVE_SEARCH_RATE_LIMIT", "1000")
        yield server


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_search_prints_ten_clean_results(upstream: FakeBraveServer) -> None:
    code, out, err = run("search", "hello world")
    assert code == 0, err
    lines = out.splitlines()
    assert 'for "hello world"' in lines[0]
    assert "10 web" in lines[0]
    numbered = [line for line in lines if line.split(". ", 1)[0].isdigit()]
    assert [line.split(". ", 1)[0] for line in numbered[:10]] == [str(n) for n in range(1, 11)]
    assert "<strong>" not in out
    assert "&#39;" not in out


def test_search_json_and_options(upstream: FakeBraveServer) -> None:
    code, out, _ = run("search", "rust", "--type", "news", "--count", "3", "--country", "de", "--json")
    assert code == 0
    env = json.loads(out)
    assert env["meta"]["search_type"] == "news"
    assert env["meta"]["requested"] == 3
    sent = dict(upstream.fake.requests[-1].params)
    assert (sent["count"], sent["country"]) == ("3", "DE")


def test_error_envelope_exits_1_with_a_readable_stderr(upstream: FakeBraveServer) -> None:
    upstream.fake.inject("429_quota")
    code, out, err = run("search", "quota")
    assert code == 1
    assert out == ""
    assert err.startswith("QUOTA_EXCEEDED:")
    assert "Traceback" not in err


def test_missing_key_is_one_line_and_exit_1(upstream: FakeBraveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAVE_SEARCH_API_KEY")
    code, out, err = run("search", "hello world")
    assert code == 1
    assert err == missing_key_line(Settings.from_env()) + "\n"
    assert "brave-search-mcp/api-key" in err  # where the registration script stores it
    assert out == ""
    assert upstream.fake.requests == []


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["search"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["search", "q", "--type", "maps"])
    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_configuration_error_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_SEARCH_RETRIES", "many")
    code, _, err = run("search", "q")
    assert code == 2
    assert "BRAVE_SEARCH_RETRIES" in err


def test_invalid_argument_from_the_service_exits_1(upstream: FakeBraveServer) -> None:
    code, _, err = run("search", "q", "--result-filter", "nonsense")
    assert code == 1
    assert err.startswith("INVALID_ARGUMENT:")


def test_status_and_tool_help(upstream: FakeBraveServer) -> None:
    code, out, _ = run("status", "--probe", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["status"] == "ok"
    assert [p["ok"] for p in report["probe"]] == [True] * 4
    assert VALID_KEY not in out
    code, out, _ = run("tool-help", "errors")
    assert code == 0
    assert "QUOTA_EXCEEDED" in out


def test_summarize_by_query_and_by_key(upstream: FakeBraveServer) -> None:
    code, out, err = run("summarize", "what is mcp")
    assert code == 0, err
    assert "Sources:" in out
    code, out, _ = run("search", "what is rust", "--summary", "--json")
    key = json.loads(out)["summarizer_key"]
    code, out, err = run("summarize", "--key", key, "--json")
    assert code == 0, err
    assert json.loads(out)["summary_text"]


def test_skill_entry_prints_ok_json(upstream: FakeBraveServer) -> None:
    code, out, _ = run("skill", "web", "--params-json", '{"query": "hello", "max_results": 2}')
    assert code == 0
    body = json.loads(out)
    assert body["ok"] is True
    web = next(s for s in body["result"]["sections"] if s["key"] == "web")
    assert len(web["results"]) == 2
    code, out, _ = run("skill", "web", "--params-json", '{"query": "hello", "bogus": 1}')
    assert code == 1
    body = json.loads(out)
    assert body["ok"] is False
    assert body["error"]["error"]["code"] == "INVALID_ARGUMENT"
    code, out, _ = run("skill", "summarizer", "--params-json", "[1, 2]")
    assert code == 2
    bad = json.loads(out)
    assert bad["ok"] is False
    # the same envelope as every other error: code, retryable, field and meta
    assert bad["error"]["error"]["code"] == "INVALID_ARGUMENT" and bad["error"]["error"]["retryable"] is False
    assert bad["error"]["error"]["details"]["field"] == "params_json"
    assert bad["error"]["meta"]["tool"] == "brave_summarizer" and bad["error"]["meta"]["trace_id"]


def test_console_script_end_to_end(upstream: FakeBraveServer, tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "BRAVE_SEARCH_API_KEY": VALID_KEY,
        "BRAVE_SEARCH_BASE_URL": upstream.base_url,
        **user_dirs(tmp_path),  # the default state and cache files land here, not in the developer's home
    }
    done = subprocess.run(
        [sys.executable, "-m", "brave_search_mcp", "search", "hello world"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert 'for "hello world"' in first
    assert "10 web" in first
    done = subprocess.run(
        [sys.executable, "-m", "brave_search_mcp", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0
    assert done.stdout.startswith("brave-search-mcp ")


def test_help_shows_examples_that_name_real_commands() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "brave_search_mcp", "--help"], capture_output=True, text=True, timeout=30, check=True
    )
    assert "examples:" in done.stdout
    for command in ("search", "context", "local", "answer", "status --probe", "skill install", "--transport http"):
        assert f"brave-search-mcp {command}" in done.stdout


def test_a_brave_only_command_without_brave_says_which_setting_to_change(
    upstream: FakeBraveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_SEARCH_PROVIDERS", "searxng")
    monkeypatch.setenv("SEARXNG_URL", "http://127.0.0.1:9")
    for command in (["summarize", "x"], ["answer", "x"], ["context", "x"]):
        code, _, err = run(*command)
        assert code == 1
        assert "needs Brave" in err and "BRAVE_SEARCH_PROVIDERS" in err, err
        assert "Unknown tool" not in err and "Fix the named argument" not in err
    assert upstream.fake.requests == []


def test_every_tool_command_and_skill_mode_comes_from_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    from brave_search_mcp.tools.registry import all_tools

    for argv in (["--help"], ["skill", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        shown = capsys.readouterr().out
        for spec in all_tools():
            assert spec.cli.command in shown, (argv, spec.name)
    assert "install" in shown  # `skill --help` names the install path too
