"""The real client programs for tests: where the pinned ones live, throw-away homes for them, Codex's app server.

Used by tests/test_clients.py, tests/test_inspector.py, tests/test_install.py and tests/test_client_snippets.py.
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
from testkit import programs

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
SERVER = REPO / ".venv" / "bin" / "brave-search-mcp"
# A key that looks real enough and is found nowhere else, so a leak anywhere is detectable.
FAKE_KEY = "BSAfake-7Qd9-distinctive-key-not-real"
CLIENT_TIMEOUT = 120

TOOL_NAMES = tuple(tool.name for tool in all_tools())


def node_bin() -> Path:
    """Where the pinned client programs live."""
    override = os.environ.get("BRAVE_MCP_NODE_BIN")
    return Path(override) if override else REPO / ".ci" / "node" / "node_modules" / ".bin"


def unavailable(reason: str) -> NoReturn:
    """Skip with the reason; under CI (CI=true) fail instead: there these tests must really run."""
    programs.unavailable(reason)


def require_tools(*names: str) -> Path:
    """Skip (with the reason) unless node and the named client programs are installed."""
    if shutil.which("node") is None:
        unavailable("node is not installed; the real-client tests need it (run .ci/install-node-tools.sh)")
    bin_dir = node_bin()
    missing = [name for name in names if not (bin_dir / name).exists()]
    if missing:
        unavailable(f"{', '.join(missing)} not found in {bin_dir}; run .ci/install-node-tools.sh")
    if not SERVER.exists():
        unavailable(f"{SERVER} is missing; run `uv sync --extra dev` first")
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


def shim(bin_dir: Path, name: str, real: Path, log: Path) -> None:
    """A wrapper that logs its argv and then runs the real client (so argv can be checked for the key)."""
    path = bin_dir / name
    path.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "{name} $*" >> {shlex.quote(str(log))}\nexec {shlex.quote(str(real))} "$@"\n',
        encoding="utf-8",
    )
    path.chmod(0o755)


def client_sandbox(tmp_path: Path) -> Sandbox:
    """Throw-away homes for Codex and Claude Code, with the client programs on PATH behind logging shims."""
    bin_dir = require_tools("codex", "claude")
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
        shim(shims, name, (bin_dir / name).resolve(), argv_log)
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


def files_containing(root: Path, needle: str) -> list[Path]:
    """Every regular file under root whose bytes contain needle."""
    return [
        path
        for path in root.rglob("*")
        if path.is_file() and not path.is_symlink() and needle.encode() in path.read_bytes()
    ]


def rollback_files(output: str) -> list[str]:
    """The backup files named in the printed rollback command."""
    lines = output.splitlines()
    index = lines.index("To undo this, run:")
    command = shlex.split(lines[index + 1])
    assert command[0].endswith("restore-mcp-from-backup.sh")
    return command[1:]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


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
