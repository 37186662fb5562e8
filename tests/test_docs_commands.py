"""Every command a reader is shown works as written, or is checked for the names it relies on.

The commands come from README.md and docs/*.md, the skill's pages, every ``--help`` of the command line, the
help tool's examples, the README's table of Brave's official tools and the Dockerfile's comment
(tests/doc_commands.py collects and classifies them). What can run offline runs in a sandbox (a temporary
HOME and XDG folders, the fake Brave on loopback, a fake key, in-memory state; a page to read comes from a
local site) and must end as the docs say (tests/doc_runs.py). What cannot (Docker, downloads, a person's real
client configuration, the suite itself) is checked instead for the files, versions, settings and options it
names (tests/doc_checks.py). Classification is by pattern, so the docs can be rewritten freely; only a new
*kind* of command needs a new rule.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from tests import doc_runs
from tests.doc_checks import check, check_names
from tests.doc_commands import REPO, Command, classify, documented_commands

COMMANDS = documented_commands()
RUNNERS: dict[str, Callable[[Command, dict[str, str]], None]] = {
    "run": doc_runs.run,
    "read": doc_runs.read,
    "summary_key": doc_runs.with_summary_key,
    "stdio": doc_runs.stdio,
    "curl": doc_runs.curl,
    "refused": doc_runs.refused,
    "http": lambda command, env: doc_runs.serve_until_interrupted(command, env, "/healthz"),
}


def test_the_docs_and_every_help_text_are_scanned() -> None:
    sources = {c.where.split(":")[0] for c in COMMANDS}
    assert len(COMMANDS) > 80
    assert sources >= {"README.md", "docs/http.md", "skills/brave-search/SKILL.md", "Dockerfile"}
    assert {"brave-search-mcp --help", "brave-search-mcp read --help", "brave-search-mcp search --help"} <= sources
    assert any(c.where.startswith("brave_web_search_help examples") for c in COMMANDS)
    assert any(c.where.startswith("README.md migration table") for c in COMMANDS)
    cli = {shlex.split(c.text)[1] for c in COMMANDS if re.match(r"brave-search-mcp [a-z]", c.text)}
    assert cli >= {"search", "summarize", "context", "local", "answer", "read", "status", "tool-help", "skill"}
    assert "uninstall" in cli
    assert any(c.text.startswith("curl ") for c in COMMANDS)


def test_every_documented_command_is_classified() -> None:
    unclassified = [str(c) for c in COMMANDS if classify(c) is None]
    assert unclassified == [], "classify these in RULES of tests/doc_commands.py:\n" + "\n".join(unclassified)


def test_the_container_user_has_a_home_for_the_default_state() -> None:
    """Without one, the default SQLite state could not be made and every start fell back to memory, warning."""
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"useradd [^\n]*--create-home --home-dir (\S+)", dockerfile)
    home = re.search(r"--home-dir (\S+)", dockerfile)
    assert home and f"ENV HOME={home.group(1)}" in dockerfile


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_a_documented_command_works_as_written(command: Command, tmp_path: Path) -> None:
    rule = classify(command)
    if rule is None:
        pytest.fail(f"unclassified: {command}")
    check_names(command)
    if rule.kind == "check":
        check(command, COMMANDS)
        return
    with FakeBraveServer(rate_per_second=1000) as brave:
        env = doc_runs.sandbox(tmp_path, brave.base_url)
        if rule.kind == "fake" and "testkit.searxng" in command.text:
            doc_runs.serve_until_interrupted(command, env, "/search?q=docs&format=json")
        elif rule.kind == "fake":  # with the key the docs say it accepts
            headers = {"X-Subscription-Token": VALID_KEY}
            doc_runs.serve_until_interrupted(command, env, "/res/v1/web/search?q=docs", **headers)
        else:
            RUNNERS[rule.kind](command, env)
