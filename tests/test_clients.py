"""The register/uninstall/restore scripts and the MCP Inspector, driven against the real client programs.

Codex CLI, Claude Code and the MCP Inspector are the pinned npm packages that
``.ci/install-node-tools.sh`` puts in ``.ci/node/`` (or the bin directory named by
``BRAVE_MCP_NODE_BIN``). Every client runs with throw-away ``HOME``, ``CODEX_HOME`` and
``CLAUDE_CONFIG_DIR`` under ``tmp_path``; the user's real configuration is never read or written.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from brave_search_mcp.tools.registry import all_tools
from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer

pytestmark = pytest.mark.clients

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
SERVER = REPO / ".venv" / "bin" / "brave-search-mcp"
# A key that looks real enough and is found nowhere else, so a leak anywhere is detectable.
FAKE_KEY = "BSAfake-7Qd9-distinctive-key-not-real"
CLIENT_TIMEOUT = 120

TOOL_NAMES = tuple(tool.name for tool in all_tools())


def _node_bin() -> Path:
    """Where the pinned client programs live."""
    override = os.environ.get("BRAVE_MCP_NODE_BIN")
    return Path(override) if override else REPO / ".ci" / "node" / "node_modules" / ".bin"


def _unavailable(reason: str) -> NoReturn:
    """Skip with the reason; under CI (CI=true) fail instead: there these tests must really run."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the real-client tests, but {reason}")
    pytest.skip(reason)


def _require_tools(*names: str) -> Path:
    """Skip (with the reason) unless node and the named client programs are installed."""
    if shutil.which("node") is None:
        _unavailable("node is not installed; the real-client tests need it (run .ci/install-node-tools.sh)")
    bin_dir = _node_bin()
    missing = [name for name in names if not (bin_dir / name).exists()]
    if missing:
        _unavailable(f"{', '.join(missing)} not found in {bin_dir}; run .ci/install-node-tools.sh")
    if not SERVER.exists():
        _unavailable(f"{SERVER} is missing; run `uv sync --extra dev` first")
    return bin_dir


@dataclass
class Sandbox:
    """Isolated client homes plus a record of every command line the scripts gave the clients."""

    root: Path
    home: Path
    codex_home: Path
    claude_dir: Path
    project: Path
    config_dir: Path
    argv_log: Path
    env: dict[str, str]

    @property
    def codex_config(self) -> Path:
        return self.codex_home / "config.toml"

    @property
    def claude_config(self) -> Path:
        return self.claude_dir / ".claude.json"

    @property
    def key_file(self) -> Path:
        return self.config_dir / "api-key"

    @property
    def backup_dir(self) -> Path:
        return self.config_dir / "backups"

    def run(
        self, *cmd: str | Path, extra_env: dict[str, str] | None = None, timeout: float = CLIENT_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        """Run a command in the project directory with the sandbox environment and no terminal."""
        env = dict(self.env)
        env.update(extra_env or {})
        return subprocess.run(
            [str(part) for part in cmd],
            cwd=self.project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def script(
        self, name: str, *args: str, extra_env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run one of scripts/*.sh; fail the test with its output when it fails."""
        result = self.run(SCRIPTS / name, *args, extra_env=extra_env)
        assert result.returncode == 0, f"{name} {args} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        return result

    def claude_servers(self, project: bool = False) -> dict[str, Any]:
        """The user-scope (or this project's local-scope) mcpServers table of Claude's config."""
        data = json.loads(self.claude_config.read_text(encoding="utf-8"))
        if project:
            data = data.get("projects", {}).get(str(self.project), {})
        servers: dict[str, Any] = data.get("mcpServers", {})
        return servers


def _shim(bin_dir: Path, name: str, real: Path, log: Path) -> None:
    """A wrapper that logs its argv and then runs the real client (so argv can be checked for the key)."""
    path = bin_dir / name
    path.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "{name} $*" >> {shlex.quote(str(log))}\nexec {shlex.quote(str(real))} "$@"\n',
        encoding="utf-8",
    )
    path.chmod(0o755)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    """Throw-away homes for Codex and Claude Code, with the client programs on PATH behind logging shims."""
    bin_dir = _require_tools("codex", "claude")
    root = tmp_path.resolve()
    home = root / "home"
    codex_home = home / ".codex"
    claude_dir = root / "claude-config"
    project = root / "project"
    shims = root / "shims"
    for directory in (codex_home, claude_dir, project, shims):
        directory.mkdir(parents=True)
    argv_log = root / "client-argv.log"
    argv_log.touch()
    for name in ("codex", "claude"):
        _shim(shims, name, (bin_dir / name).resolve(), argv_log)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BRAVE_", "CODEX_", "CLAUDE", "XDG_CONFIG"))}
    env.update(
        HOME=str(home),
        CODEX_HOME=str(codex_home),
        CLAUDE_CONFIG_DIR=str(claude_dir),
        XDG_CONFIG_HOME=str(home / ".config"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        PATH=f"{shims}{os.pathsep}{bin_dir}{os.pathsep}{env.get('PATH', '')}",
    )
    return Sandbox(root, home, codex_home, claude_dir, project, home / ".config" / "brave-search-mcp", argv_log, env)


def _files_containing(root: Path, needle: str) -> list[Path]:
    """Every regular file under root whose bytes contain needle."""
    return [
        path
        for path in root.rglob("*")
        if path.is_file() and not path.is_symlink() and needle.encode() in path.read_bytes()
    ]


def _rollback_files(output: str) -> list[str]:
    """The backup files named in the printed rollback command."""
    lines = output.splitlines()
    index = lines.index("To undo this, run:")
    command = shlex.split(lines[index + 1])
    assert command[0].endswith("restore-mcp-from-backup.sh")
    return command[1:]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ------------------------------------------------------------------------------------------ Claude Code


def test_claude_register_connects_and_the_key_stays_in_its_file(sandbox: Sandbox) -> None:
    result = sandbox.script(
        "register-mcp.sh",
        "--client",
        "claude",
        "--no-sync",
        "--install",
        "checkout",
        "--env",
        "BRAVE_SEARCH_MAX_LINES=80",
        extra_env={"BRAVE_API_KEY": FAKE_KEY},
    )
    assert "✔ Connected" in result.stdout

    listed = sandbox.run("claude", "mcp", "list")
    assert listed.returncode == 0, listed.stderr
    assert f"brave-search: {SERVER}" in listed.stdout
    assert "✔ Connected" in listed.stdout.split("brave-search:", 1)[1].splitlines()[0]

    assert sandbox.claude_servers()["brave-search"] == {
        "type": "stdio",
        "command": str(SERVER),
        "args": [],
        "env": {"BRAVE_API_KEY_FILE": str(sandbox.key_file), "BRAVE_SEARCH_MAX_LINES": "80"},
    }
    assert sandbox.key_file.read_text(encoding="utf-8") == FAKE_KEY + "\n"
    assert _mode(sandbox.key_file) == 0o600
    assert _mode(sandbox.config_dir) == 0o700
    backups = [Path(p) for p in _rollback_files(result.stdout)]
    assert len(backups) == 1
    assert backups[0].parent == sandbox.backup_dir
    assert _mode(backups[0]) == 0o600
    assert _mode(sandbox.backup_dir) == 0o700

    # The key is in its file and nowhere else: not in configs, backups, logs, argv or the script's output.
    assert "claude mcp add-json brave-search" in sandbox.argv_log.read_text(encoding="utf-8")
    assert _files_containing(sandbox.root, FAKE_KEY) == [sandbox.key_file]
    assert FAKE_KEY not in result.stdout + result.stderr


def test_claude_local_scope_register_and_uninstall(sandbox: Sandbox) -> None:
    sandbox.script(
        "register-mcp.sh", "--client", "claude", "--scope", "local", "--no-key", "--no-sync", "--install", "checkout"
    )
    assert "brave-search" in sandbox.claude_servers(project=True)
    assert "brave-search" not in sandbox.claude_servers()
    listed = sandbox.run("claude", "mcp", "list")
    assert f"brave-search: {SERVER}" in listed.stdout
    assert "✔ Connected" in listed.stdout
    assert not sandbox.key_file.exists()  # --no-key stores nothing

    removed = sandbox.script("uninstall-mcp.sh", "--client", "claude", "--scope", "local")
    assert "removed 'brave-search' from the local scope" in removed.stdout
    assert "brave-search" not in sandbox.claude_servers(project=True)


# ------------------------------------------------------------------------------------------ Codex


class AppServer:
    """A minimal JSON-RPC driver for ``codex app-server`` (stdio), bounded by deadlines."""

    def __init__(self, sandbox: Sandbox, extra_env: dict[str, str]) -> None:
        env = dict(sandbox.env)
        env.update(extra_env)
        self.proc = subprocess.Popen(
            ["codex", "app-server"],
            cwd=sandbox.project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any], timeout: float = 90.0) -> dict[str, Any]:
        """Send one request and return its result (fails the test on an error or time-out)."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"id": self.next_id, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not select.select([self.proc.stdout], [], [], 1.0)[0]:
                continue
            line = self.proc.stdout.readline()
            assert line, f"codex app-server exited while waiting for {method}"
            message = json.loads(line)
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                result: dict[str, Any] = message["result"]
                return result
        pytest.fail(f"codex app-server did not answer {method} within {timeout} s")

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"method": method}) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.mark.parametrize("key_mode", ["file", "env"])
def test_codex_starts_the_registered_server_and_calls_a_tool(sandbox: Sandbox, key_mode: str) -> None:
    with FakeBraveServer(rate_per_second=1000) as upstream:
        args = [
            "--client",
            "codex",
            "--no-sync",
            "--install",
            "checkout",
            "--env",
            f"BRAVE_SEARCH_BASE_URL={upstream.base_url}",
        ]
        if key_mode == "file":
            sandbox.script("register-mcp.sh", *args, extra_env={"BRAVE_SEARCH_API_KEY": VALID_KEY})
            codex_env: dict[str, str] = {}  # Codex has no key in its environment: only the key file works
        else:
            sandbox.script("register-mcp.sh", *args, "--key-mode", "env", extra_env={"BRAVE_API_KEY": VALID_KEY})
            codex_env = {"BRAVE_API_KEY": VALID_KEY}  # forwarded through env_vars, never written down
        config = sandbox.codex_config.read_text(encoding="utf-8")
        assert VALID_KEY not in config
        assert ('env_vars = ["BRAVE_API_KEY"]' in config) == (key_mode == "env")

        app = AppServer(sandbox, codex_env)
        try:
            app.request("initialize", {"clientInfo": {"name": "brave-search-mcp-tests", "version": "0"}})
            app.notify("initialized")
            status = app.request("mcpServerStatus/list", {})
            (entry,) = [server for server in status["data"] if server["name"] == "brave-search"]
            assert entry["serverInfo"]["name"] == "brave-search"
            assert sorted(entry["tools"]) == sorted(TOOL_NAMES)
            assert not entry.get("toolsError")

            thread = app.request("thread/start", {"ephemeral": True, "cwd": str(sandbox.project)})
            called = app.request(
                "mcpServer/tool/call",
                {
                    "threadId": thread["thread"]["id"],
                    "server": "brave-search",
                    "tool": "brave_web_search",
                    "arguments": {"query": "hello world", "max_results": 3},
                },
            )
        finally:
            app.close()
    assert called.get("isError") is not True, called
    envelope = called["structuredContent"]
    assert envelope["api_version"] == "v1"
    assert envelope["sections"][0]["results"], envelope
    assert envelope["meta"]["query"] == "hello world"


# ------------------------------------------------------------------------------------------ both


FOREIGN_CODEX_CONFIG = """\
# my own settings: keep this comment
model = "gpt-5"

[mcp_servers.brave-search]
command = "/opt/other/brave"   # someone else's server of the same name
args = ["--flag"]
enabled = true
startup_timeout_sec = 20

[mcp_servers.brave-search.env]
OTHER_SETTING = "kept"

[mcp_servers.other]
command = "/bin/true"
"""
FOREIGN_CLAUDE_ENTRY = {"type": "stdio", "command": "/opt/other/brave", "args": ["--flag"], "env": {"X": "1"}}


def test_register_twice_uninstall_and_restore_give_back_the_exact_configs(sandbox: Sandbox) -> None:
    # A user who already has a different "brave-search" in both clients.
    sandbox.codex_config.write_text(FOREIGN_CODEX_CONFIG, encoding="utf-8")
    sandbox.codex_config.chmod(0o600)
    added = sandbox.run("claude", "mcp", "add-json", "-s", "user", "brave-search", json.dumps(FOREIGN_CLAUDE_ENTRY))
    assert added.returncode == 0, added.stderr
    # A used Claude Code has its own state (userID...) in the file already; the first `mcp list` writes it.
    assert sandbox.run("claude", "mcp", "list").returncode == 0
    codex_before = sandbox.codex_config.read_bytes()
    claude_before = sandbox.claude_config.read_bytes()

    first = sandbox.script(
        "register-mcp.sh",
        "--client",
        "all",
        "--no-sync",
        "--install",
        "checkout",
        extra_env={"BRAVE_API_KEY": FAKE_KEY},
    )
    assert "Codex: replaced 'brave-search'" in first.stdout
    assert "Claude Code: replaced 'brave-search'" in first.stdout
    first_backups = _rollback_files(first.stdout)
    assert len(first_backups) == 2

    # Twice: no key in the environment now, no terminal: the stored key is reused, nothing hangs.
    second = sandbox.script("register-mcp.sh", "--client", "all", "--no-sync", "--install", "checkout")
    assert "Using the API key already stored" in second.stdout

    listed = sandbox.run("codex", "mcp", "list", "--json")
    names = [server["name"] for server in json.loads(listed.stdout)]
    assert sorted(names) == ["brave-search", "other"]
    got = json.loads(sandbox.run("codex", "mcp", "get", "--json", "brave-search").stdout)
    assert got["transport"]["command"] == str(SERVER)
    assert got["transport"]["env"] == {"BRAVE_API_KEY_FILE": str(sandbox.key_file)}
    assert list(sandbox.claude_servers()) == ["brave-search"]
    assert sandbox.claude_servers()["brave-search"]["command"] == str(SERVER)

    removed = sandbox.script("uninstall-mcp.sh", "--client", "all")
    assert "Codex: removed 'brave-search'" in removed.stdout
    assert sandbox.run("codex", "mcp", "get", "--json", "brave-search").returncode != 0
    assert "brave-search" not in sandbox.claude_servers()
    again = sandbox.script("uninstall-mcp.sh", "--client", "all")
    assert "nothing to remove" in again.stdout
    assert "To undo this" not in again.stdout

    restored = sandbox.script("restore-mcp-from-backup.sh", *first_backups)
    assert sandbox.codex_config.read_bytes() == codex_before
    assert sandbox.claude_config.read_bytes() == claude_before
    assert sandbox.claude_servers()["brave-search"] == FOREIGN_CLAUDE_ENTRY
    assert len(_rollback_files(restored.stdout)) == 2  # the restore is itself undoable

    # The key never reached a client config, a backup, a client's argv or the clients' own files.
    argv = sandbox.argv_log.read_text(encoding="utf-8")
    assert "codex mcp add brave-search" in argv
    assert "claude mcp add-json brave-search" in argv
    assert _files_containing(sandbox.root, FAKE_KEY) == [sandbox.key_file]
    backups = sorted(sandbox.backup_dir.iterdir())
    assert len(backups) >= 6
    assert all(_mode(path) == 0o600 for path in backups)


# ------------------------------------------------------------------------------------------ Inspector


def _inspector(bin_dir: Path, env_args: list[str], *method_args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAVE_")}
    return subprocess.run(
        [str(bin_dir / "mcp-inspector"), "--cli", "--format", "json", "-q", *env_args, str(SERVER), *method_args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        check=False,
    )


def test_inspector_cli_lists_tools_and_calls_web_search(tmp_path: Path) -> None:
    bin_dir = _require_tools("mcp-inspector")
    key_file = tmp_path / "api-key"
    key_file.write_text(VALID_KEY + "\n", encoding="utf-8")
    with FakeBraveServer(rate_per_second=1000) as upstream:
        env_args = ["-e", f"BRAVE_SEARCH_BASE_URL={upstream.base_url}", "-e", f"BRAVE_API_KEY_FILE={key_file}"]
        listed = _inspector(bin_dir, env_args, "--method", "tools/list")
        assert listed.returncode == 0, listed.stdout + listed.stderr
        names = [tool["name"] for tool in json.loads(listed.stdout)["result"]["tools"]]
        assert sorted(names) == sorted(TOOL_NAMES)

        called = _inspector(
            bin_dir,
            env_args,
            "--method",
            "tools/call",
            "--tool-name",
            "brave_web_search",
            "--tool-args-json",
            '{"query": "hello world", "max_results": 3}',
        )
    assert called.returncode == 0, called.stdout + called.stderr
    result = json.loads(called.stdout)["result"]
    assert result["isError"] is False
    envelope = result["structuredContent"]
    assert envelope["api_version"] == "v1"
    assert envelope["sections"] and envelope["sections"][0]["results"]
    assert result["content"][0]["text"].startswith(envelope["summary"])


def test_inspector_cli_reports_a_missing_key_as_a_tool_error(tmp_path: Path) -> None:
    bin_dir = _require_tools("mcp-inspector")
    called = _inspector(
        bin_dir, [], "--method", "tools/call", "--tool-name", "brave_web_search", "--tool-args-json", '{"query": "x"}'
    )
    assert called.returncode != 0  # the Inspector's CLI exits non-zero on isError: true
    assert "tool_is_error" in called.stderr
    result = json.loads(called.stdout)["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "MISSING_API_KEY"
