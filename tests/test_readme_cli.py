"""The README's CLI examples run exactly as written (against the fake upstream), so a reader's first try works."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer

README = Path(__file__).resolve().parent.parent / "README.md"


def _examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## CLI") :]
    block = section[section.index("```sh") + 5 : section.index("```", section.index("```sh") + 5)]
    lines = [line.split("  #")[0].strip() for line in block.strip().splitlines()]
    # Serving commands run until stopped (test_cli_serve.py and the stdio tests start them); a <placeholder>
    # is for the reader to fill in.
    return [line for line in lines if re.search(r"brave-search-mcp \w", line) and "<" not in line]


def test_the_readme_has_examples_of_every_command() -> None:
    commands = {shlex.split(line)[1] for line in _examples()}
    assert commands >= {"search", "summarize", "context", "local", "answer", "status", "tool-help", "skill"}


@pytest.mark.parametrize("line", _examples())
def test_a_readme_cli_example_runs_as_written(line: str, fake_server: FakeBraveServer) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAVE")}
    env.update(BRAVE_SEARCH_API_KEY=VALID_KEY, BRAVE_SEARCH_BASE_URL=fake_server.base_url, BRAVE_SEARCH_STATE="memory")
    argv = shlex.split(line)
    assert argv[0] == "brave-search-mcp"
    done = subprocess.run(
        [sys.executable, "-m", "brave_search_mcp", *argv[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, (line, done.stderr[-500:])
    assert done.stdout.strip()
