"""The register/uninstall/restore scripts, driven against the real client programs (Codex CLI, Claude Code).

They are the pinned npm packages that ``.ci/install-node-tools.sh`` puts in ``.ci/node/`` (or the bin
directory named by ``BRAVE_MCP_NODE_BIN``). Every client runs with throw-away ``HOME``, ``CODEX_HOME`` and
``CLAUDE_CONFIG_DIR`` under ``tmp_path``; the user's real configuration is never read or written. The MCP
Inspector has its own tests (test_inspector.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testkit.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from tests.client_programs import (
    FAKE_KEY,
    SERVER,
    TOOL_NAMES,
    AppServer,
    Sandbox,
    client_sandbox,
    files_containing,
    mode,
    rollback_files,
)

pytestmark = pytest.mark.clients


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    """Throw-away homes for Codex and Claude Code, with the client programs on PATH behind logging shims."""
    return client_sandbox(tmp_path)


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
    assert mode(sandbox.key_file) == 0o600
    assert mode(sandbox.config_dir) == 0o700
    backups = [Path(p) for p in rollback_files(result.stdout)]
    assert len(backups) == 1
    assert backups[0].parent == sandbox.backup_dir
    assert mode(backups[0]) == 0o600
    assert mode(sandbox.backup_dir) == 0o700

    # The key is in its file and nowhere else: not in configs, backups, logs, argv or the script's output.
    assert "claude mcp add-json brave-search" in sandbox.argv_log.read_text(encoding="utf-8")
    assert files_containing(sandbox.root, FAKE_KEY) == [sandbox.key_file]
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
    first_backups = rollback_files(first.stdout)
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
    assert len(rollback_files(restored.stdout)) == 2  # the restore is itself undoable

    # The key never reached a client config, a backup, a client's argv or the clients' own files.
    argv = sandbox.argv_log.read_text(encoding="utf-8")
    assert "codex mcp add brave-search" in argv
    assert "claude mcp add-json brave-search" in argv
    assert files_containing(sandbox.root, FAKE_KEY) == [sandbox.key_file]
    backups = sorted(sandbox.backup_dir.iterdir())
    assert len(backups) >= 6
    assert all(mode(path) == 0o600 for path in backups)


# ------------------------------------------------------------------------------------------ uninstall (issue 37)


def test_one_command_removes_both_registrations_and_the_skill_and_keeps_the_key(sandbox: Sandbox) -> None:
    """`brave-search-mcp uninstall` (shipped in the wheel) undoes register + skill install: afterwards
    `claude mcp list` no longer lists the server (it used to show it '✘ Failed to connect' once the program was
    gone) and Codex has no entry; a server of the same name that runs something else is left alone."""
    register = ("--client", "all", "--no-sync", "--install", "checkout")
    sandbox.script("register-mcp.sh", *register, extra_env={"BRAVE_API_KEY": FAKE_KEY})
    assert sandbox.run(SERVER, "skill", "install").returncode == 0
    skills = [sandbox.home / ".claude/skills/brave-search", sandbox.home / ".agents/skills/brave-search"]
    assert all((folder / "SKILL.md").is_file() for folder in skills)

    done = sandbox.run(SERVER, "uninstall")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Codex: removed 'brave-search' ({SERVER})." in done.stdout
    assert f"Claude Code: removed 'brave-search' from the user scope ({SERVER})." in done.stdout
    assert f"Kept the stored API key {sandbox.key_file}" in done.stdout
    listed = sandbox.run("claude", "mcp", "list")
    assert "brave-search" not in listed.stdout, listed.stdout
    assert sandbox.run("codex", "mcp", "get", "--json", "brave-search").returncode != 0
    assert "brave-search" not in sandbox.codex_config.read_text(encoding="utf-8")
    assert not any(folder.exists() for folder in skills)
    assert sandbox.key_file.read_text(encoding="utf-8") == FAKE_KEY + "\n"

    again = sandbox.run(SERVER, "uninstall", "--purge")  # nothing left to remove: still exit 0; the key goes
    assert again.returncode == 0, again.stderr
    assert "Codex: no server named 'brave-search'." in again.stdout
    assert f"Deleted the stored API key {sandbox.key_file}." in again.stdout
    assert not sandbox.key_file.exists()


def test_uninstall_leaves_a_server_of_the_same_name_that_runs_something_else(sandbox: Sandbox) -> None:
    official = {"type": "stdio", "command": "npx", "args": ["-y", "@brave/brave-search-mcp-server"], "env": {}}
    added = sandbox.run("claude", "mcp", "add-json", "brave-search", json.dumps(official), "-s", "user")
    assert added.returncode == 0, added.stderr
    done = sandbox.run(SERVER, "uninstall")
    assert done.returncode == 0, done.stderr
    assert "Claude Code: 'brave-search' runs npx, not brave-search-mcp; left alone." in done.stdout
    assert sandbox.claude_servers()["brave-search"]["command"] == "npx"
