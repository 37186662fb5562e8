"""Installed, not cloned: the wheel's contents, and one scripted run from a bare directory through both real clients.

The end-to-end test builds the wheel, installs it with ``uv tool install`` into a throw-away tool
directory and home, registers the *installed* command with Codex and Claude Code through
``scripts/register-mcp.sh``, checks each client's own health check (Codex: ``codex app-server``
starts the server and runs a search; Claude Code: ``claude mcp list`` shows it connected), installs
the skill and runs the skill's commands exactly as written, all against the fake Brave server.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from tests.client_programs import TOOL_NAMES, AppServer, Sandbox, require_tools

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 300


def _uv() -> str:
    """The real uv binary (uv run exports it as UV; a pyenv shim would need pyenv's environment)."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:
        pytest.skip("uv is not installed")
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from this checkout with ``uv build``, outside the checkout."""
    out = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    built = subprocess.run(
        [_uv(), "build", "--wheel", "--quiet", "--out-dir", str(out), str(REPO)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (path,) = out.glob("brave_search_mcp-*.whl")
    return path


def test_the_wheel_ships_the_code_and_the_skill_but_no_tests(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "brave_search_mcp/skill/SKILL.md" in names
    assert "brave_search_mcp/skill/references/parameters.md" in names
    assert "brave_search_mcp/faces/cli.py" in names
    assert "brave_search_mcp/faces/uninstall.py" in names  # the one command that undoes the install
    assert "brave_search_mcp/py.typed" in names
    assert not [n for n in names if n.split("/")[0] in {"tests", "testkit", "bench", "docs", "scripts", "skills"}]
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_the_wheel_metadata_is_complete_for_publishing(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (meta_name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(archive.read(meta_name).decode("utf-8"))
        entry_points = archive.read(meta_name.replace("METADATA", "entry_points.txt")).decode("utf-8")
    assert meta["Name"] == "brave-search-mcp"
    assert meta["License-Expression"] == "MIT"
    assert meta["Requires-Python"] == ">=3.11"
    urls = dict(value.split(", ", 1) for value in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Repository", "Issues", "Documentation"} <= set(urls)
    classifiers = set(meta.get_all("Classifier") or [])
    assert {
        "License :: OSI Approved :: MIT License",
        "Environment :: Console",
        "Intended Audience :: Developers",
        "Topic :: Internet :: WWW/HTTP :: Indexing/Search",
        "Programming Language :: Python :: 3.13",
    } <= classifiers
    assert meta["Description-Content-Type"] == "text/markdown"
    assert "brave-search-mcp = brave_search_mcp.faces.cli:main" in entry_points


def _skill_commands(skill_md: str, command: str) -> list[str]:
    """The command lines the skill's code blocks show, that start with the installed command."""
    blocks = re.findall(r"```sh\n(.*?)```", skill_md, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip().startswith(command)]


@pytest.mark.clients
def test_install_register_check_and_use_the_skill_from_a_bare_directory(tmp_path: Path) -> None:
    """The whole install path of issue 15, as a user without a clone would walk it."""
    node_bin = require_tools("codex", "claude")
    uv = _uv()
    root = tmp_path.resolve()
    home, bare, tools, tool_bin, uv_bin = (root / n for n in ("home", "bare", "uv-tools", "bin", "uv-bin"))
    for directory in (home / ".codex", root / "claude-config", bare, uv_bin):
        directory.mkdir(parents=True)
    for client in ("codex", "claude"):
        (uv_bin / client).symlink_to((node_bin / client).resolve())
    (uv_bin / "uv").symlink_to(uv)
    if (Path(uv).parent / "uvx").exists():
        (uv_bin / "uvx").symlink_to(Path(uv).parent / "uvx")
    cache = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("BRAVE_", "CODEX_", "CLAUDE", "XDG_", "UV", "VIRTUAL"))
    }
    env.update(
        HOME=str(home),
        CODEX_HOME=str(home / ".codex"),
        CLAUDE_CONFIG_DIR=str(root / "claude-config"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        UV_TOOL_DIR=str(tools),
        UV_TOOL_BIN_DIR=str(tool_bin),
        UV_CACHE_DIR=cache,
        UV_PYTHON_DOWNLOADS="never",
        UV_PYTHON=str(Path(sys.base_prefix) / "bin" / "python3"),
        # No checkout on PATH: the tool bin, the clients, uv, and the system.
        PATH=os.pathsep.join([str(tool_bin), str(uv_bin), "/usr/local/bin", "/usr/bin", "/bin"]),
    )
    assert str(REPO) not in env["PATH"]

    def run(*cmd: str | Path, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(c) for c in cmd],
            cwd=bare,
            env={**env, **(extra or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert result.returncode == 0, f"{cmd} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        return result

    wheel_dir = root / "dist"
    wheel_dir.mkdir()
    run(uv, "build", "--wheel", "--quiet", "--out-dir", wheel_dir, REPO)
    (wheel,) = wheel_dir.glob("*.whl")
    run("uv", "tool", "install", "--quiet", wheel)
    installed = tool_bin / "brave-search-mcp"
    assert run("brave-search-mcp", "--version").stdout.startswith("brave-search-mcp ")

    with FakeBraveServer(rate_per_second=1000) as upstream:
        registered = run(
            REPO / "scripts" / "register-mcp.sh",
            "--client",
            "all",
            "--env",
            f"BRAVE_SEARCH_BASE_URL={upstream.base_url}",
            extra={"BRAVE_API_KEY": VALID_KEY},
        )
        assert f"Using the installed {installed}." in registered.stdout

        # Both clients run the installed command: nothing points into the checkout.
        codex_entry = tomllib.loads((home / ".codex" / "config.toml").read_text(encoding="utf-8"))["mcp_servers"]
        claude_entry = json.loads((root / "claude-config" / ".claude.json").read_text(encoding="utf-8"))["mcpServers"]
        for entry in (codex_entry["brave-search"], claude_entry["brave-search"]):
            assert entry["command"] == str(installed)
            assert str(REPO) not in json.dumps(entry)

        # Claude Code's health check starts the server.
        listed = run("claude", "mcp", "list").stdout
        assert f"brave-search: {installed}  - ✔ Connected" in listed or (
            f"brave-search: {installed}" in listed and "✔ Connected" in listed
        ), listed

        # Codex's own client starts it, lists its tools and runs a search through it.
        sandbox = Sandbox(root, home, home / ".codex", root / "claude-config", bare, root / "cfg", root / "log", env)
        app = AppServer(sandbox, {})
        try:
            app.request("initialize", {"clientInfo": {"name": "brave-search-mcp-tests", "version": "0"}})
            app.notify("initialized")
            (status,) = [s for s in app.request("mcpServerStatus/list", {})["data"] if s["name"] == "brave-search"]
            assert sorted(status["tools"]) == sorted(TOOL_NAMES)
            thread = app.request("thread/start", {"ephemeral": True, "cwd": str(bare)})
            called = app.request(
                "mcpServer/tool/call",
                {
                    "threadId": thread["thread"]["id"],
                    "server": "brave-search",
                    "tool": "brave_web_search",
                    "arguments": {"query": "hello world", "max_results": 3},
                },
            )
            assert called.get("isError") is not True, called
            assert called["structuredContent"]["sections"][0]["results"]

            # The skill goes where each client reads it; Codex lists it as a user skill.
            run("brave-search-mcp", "skill", "install")
            skills = app.request("skills/list", {"cwds": [str(bare)], "forceReload": True})["data"]
            found = {s["name"]: s["path"] for group in skills for s in group["skills"]}
            assert found["brave-search"] == str(home / ".agents" / "skills" / "brave-search" / "SKILL.md")
        finally:
            app.close()

        # The skill's commands run exactly as written, from anywhere.
        skill_md = (home / ".claude" / "skills" / "brave-search" / "SKILL.md").read_text(encoding="utf-8")
        commands = _skill_commands(skill_md, "brave-search-mcp skill")
        assert len(commands) >= 2, skill_md
        # nothing exported: the key is found in the file the register script stored (issue 37 item 1)
        key_env = {"BRAVE_SEARCH_BASE_URL": upstream.base_url}
        for line in commands:
            out = subprocess.run(
                ["bash", "-c", line],
                cwd=bare,
                env={**env, **key_env},
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
            body = json.loads(out.stdout)
            assert body["ok"] is True, (line, body)
            assert out.returncode == 0, shlex.quote(line)

        # One command undoes registration and skill; the key file stays (issue 37 item 3).
        removed = run("brave-search-mcp", "uninstall")
        assert "Codex: removed 'brave-search'" in removed.stdout and "Claude Code: removed" in removed.stdout
        assert "brave-search" not in run("claude", "mcp", "list").stdout
        assert not (home / ".claude" / "skills" / "brave-search").exists()
        assert (home / ".config" / "brave-search-mcp" / "api-key").is_file()
