"""The register/uninstall/restore scripts' own behaviour, without node: usage, refusals, the key file, backups.

The client programs themselves are exercised in test_clients.py. Here a client CLI is either absent
(a PATH that holds only the basic tools) or a stand-in that records how it was called and then fails,
so these tests can prove what the scripts do *before* and *instead of* touching a client. The helper's own
commands are tested in test_helper.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from brave_search_mcp.tools.registry import all_tools
from testkit.programs import require
from tests.scripts.sandbox import (
    FAKE_KEY,
    REPO,
    SCRIPTS,
    SERVER,
    copy_of_the_scripts,
    key_file,
    mode,
    recording_client,
    run_script,
    script_env,
)


def _register_codex_checkout(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Register with codex from this checkout, without syncing it first."""
    return run_script(
        "register-mcp.sh", "--client", "codex", "--no-sync", "--install", "checkout", *args, env=env, timeout=timeout
    )


# ------------------------------------------------------------------------------------------ usage


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("register-mcp.sh", ["--client", "--scope", "--key-mode", "--no-key", "--env", "--backup-dir"]),
        ("uninstall-mcp.sh", ["--client", "--name", "--scope", "--remove-key"]),
        ("restore-mcp-from-backup.sh", ["BACKUP_FILE", "byte for byte", "--backup-dir"]),
    ],
)
def test_help_explains_the_options(script: str, expected: list[str], home: Path, bin_dir: Path) -> None:
    result = run_script(script, "--help", env=script_env(home, bin_dir))
    assert result.returncode == 0
    assert result.stdout.startswith("Usage:")
    for option in expected:
        assert option in result.stdout
    assert result.stderr == ""


def test_install_node_tools_has_help() -> None:
    result = subprocess.run(
        [str(REPO / ".ci" / "install-node-tools.sh"), "--help"], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0
    assert ".ci/node" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--client", "vscode"], "invalid --client 'vscode'"),
        (["--name", "brave search"], "invalid server name"),
        (["--name", "brave.search"], "invalid server name"),
        (["--scope", "global"], "invalid --scope 'global'"),
        (["--key-mode", "argv"], "invalid --key-mode 'argv'"),
        (["--env", "HOME=/tmp"], "only BRAVE_SEARCH_* settings"),
        (["--env", "BRAVE_API_KEY=abc"], "only BRAVE_SEARCH_* settings"),
        (["--env", "BRAVE_SEARCH_API_KEY=abc"], "BRAVE_SEARCH_API_KEY is refused"),
        (["--env", "BRAVE_SEARCH_MAX_LINES"], "needs NAME=VALUE"),
        (["--env=BRAVE_SEARCH_max=1"], "invalid variable name"),
        (["--client", "codex", "--scope", "local"], "Claude Code only"),
        (["--client", "all", "--scope", "project"], "Claude Code only"),
        (["--name"], "--name needs a value"),
        (["--server-command", "relative/bin", "--no-key"], None),
        (["--bogus"], "unknown argument: --bogus"),
    ],
)
def test_register_rejects_bad_usage_with_status_2(
    args: list[str], message: str | None, home: Path, bin_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "argv.log"
    for client in ("codex", "claude"):
        recording_client(bin_dir, client, log)
    result = run_script("register-mcp.sh", *args, env=script_env(home, bin_dir))
    if message is None:  # a relative --server-command is refused before any client is called
        assert result.returncode == 2
        assert "absolute path" in result.stderr
    else:
        assert result.returncode == 2, result.stderr
        assert message in result.stderr
    assert "--help" in result.stderr
    assert not log.exists(), "no client may be called on bad usage"
    assert not (home / ".config").exists(), "nothing may be written on bad usage"


@pytest.mark.parametrize("args", [["--key", FAKE_KEY], [f"--api-key={FAKE_KEY}"], ["--brave-api-key", FAKE_KEY]])
def test_register_refuses_a_key_on_the_command_line_without_echoing_it(
    args: list[str], home: Path, bin_dir: Path
) -> None:
    result = run_script("register-mcp.sh", *args, env=script_env(home, bin_dir))
    assert result.returncode == 2
    assert "never taken from the command line" in result.stderr
    assert FAKE_KEY not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        ("uninstall-mcp.sh", ["--scope", "everywhere"], "invalid --scope"),
        ("uninstall-mcp.sh", ["--frobnicate"], "unknown argument"),
        ("uninstall-mcp.sh", ["--name", "a/b"], "invalid server name"),
        ("restore-mcp-from-backup.sh", [], "give the backup file"),
        ("restore-mcp-from-backup.sh", ["/nonexistent/backup.json"], "no such backup file"),
        ("restore-mcp-from-backup.sh", ["--wat"], "unknown option"),
        ("register-mcp.sh", ["--no-key", "--install", "pip"], "invalid --install 'pip'"),
        ("register-mcp.sh", ["--no-key", "--uvx-from", "brave-search-mcp==0.1.0"], "--uvx-from needs --install uvx"),
    ],
)
def test_the_scripts_reject_bad_usage(script: str, args: list[str], message: str, home: Path, bin_dir: Path) -> None:
    result = run_script(script, *args, env=script_env(home, bin_dir))
    assert result.returncode == 2
    assert message in result.stderr


# ------------------------------------------------------------------------------------------ missing clients


@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        ("register-mcp.sh", ["--client", "codex", "--no-key"], "'codex' is not on PATH"),
        ("register-mcp.sh", ["--client", "claude", "--no-key"], "'claude' is not on PATH"),
        ("register-mcp.sh", ["--no-key"], "neither 'codex' nor 'claude' is on PATH"),
        ("uninstall-mcp.sh", ["--client", "codex"], "'codex' is not on PATH"),
        ("uninstall-mcp.sh", ["--client", "all"], "is not on PATH"),
    ],
)
def test_a_missing_client_cli_is_a_clear_failure(
    script: str, args: list[str], message: str, home: Path, bin_dir: Path
) -> None:
    result = run_script(script, *args, env=script_env(home, bin_dir))
    assert result.returncode == 1
    assert message in result.stderr
    assert f'export PATH="{REPO}/.ci/node/node_modules/.bin:$PATH"' in result.stderr  # the pinned copies
    assert "npm install -g" not in result.stderr  # never a global, unpinned install


def test_the_missing_client_hint_works_as_written(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    repo = copy_of_the_scripts(tmp_path)
    register = [str(repo / "scripts" / "register-mcp.sh"), "--client", "codex", "--no-key"]

    def run(path: str) -> str:
        env = script_env(home, bin_dir, PATH=path)
        done = subprocess.run(register, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        return done.stderr

    before = run(str(bin_dir))
    installer, path_line = before.split("nothing global): ")[1].split(", then run")[0].split(" && ")
    assert Path(installer) == repo / ".ci" / "install-node-tools.sh" and Path(installer).is_file()
    tools = repo / ".ci" / "node" / "node_modules" / ".bin"
    assert path_line == f'export PATH="{tools}:$PATH"'

    tools.mkdir(parents=True)  # what the installer leaves behind
    recording_client(tools, "codex", tmp_path / "argv.log")
    installed = run(str(bin_dir))
    assert f"the pinned codex: installed in {tools}, which is not on PATH" in installed
    assert path_line in installed

    after = run(f"{tools}:{bin_dir}")  # the PATH line, followed
    assert "is not on PATH;" not in after


def test_all_needs_both_clients(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    recording_client(bin_dir, "codex", log)
    result = run_script("register-mcp.sh", "--client", "all", "--no-key", env=script_env(home, bin_dir))
    assert result.returncode == 1
    assert "'claude' is not on PATH" in result.stderr
    assert not log.exists()


# ------------------------------------------------------------------------------------------ the key


def test_no_key_and_no_terminal_stops_at_once_without_calling_a_client(
    home: Path, bin_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "argv.log"
    recording_client(bin_dir, "codex", log)
    result = _register_codex_checkout(env=script_env(home, bin_dir), timeout=30)
    assert result.returncode == 1
    assert "no API key" in result.stderr
    assert "--no-key" in result.stderr
    assert not log.exists()
    assert not key_file(home).exists()


def test_a_key_with_whitespace_is_refused_and_not_stored(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    recording_client(bin_dir, "codex", tmp_path / "argv.log")
    env = script_env(home, bin_dir, BRAVE_API_KEY="two words")
    result = _register_codex_checkout(env=env)
    assert result.returncode == 1
    assert "whitespace" in result.stderr
    assert "two words" not in result.stderr
    assert not key_file(home).exists()


@pytest.mark.usefixtures("server")
def test_the_key_goes_to_a_private_file_and_never_into_a_client_argv(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    recording_client(bin_dir, "codex", log)
    xdg = tmp_path / "xdg"
    env = script_env(home, bin_dir, BRAVE_API_KEY=FAKE_KEY, XDG_CONFIG_HOME=str(xdg))
    result = _register_codex_checkout(env=env)

    # The stand-in codex fails its first call: the script stops there and says which step failed.
    assert result.returncode == 1
    assert "'codex mcp get brave-search' failed" in result.stderr
    assert f"{len(all_tools())} tools" in result.stdout  # the server was started once before any client was touched
    stored = xdg / "brave-search-mcp" / "api-key"
    assert stored.read_text(encoding="utf-8") == FAKE_KEY + "\n"
    assert mode(stored) == 0o600
    assert mode(stored.parent) == 0o700
    assert log.read_text(encoding="utf-8").startswith("codex mcp get --json brave-search")
    assert FAKE_KEY not in log.read_text(encoding="utf-8")
    assert FAKE_KEY not in result.stdout + result.stderr


@pytest.mark.usefixtures("server")
def test_an_existing_key_file_is_reused_and_made_private(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    recording_client(bin_dir, "codex", tmp_path / "argv.log")
    elsewhere = tmp_path / "elsewhere" / "key"
    elsewhere.parent.mkdir()
    elsewhere.write_text(FAKE_KEY + "\n", encoding="utf-8")
    elsewhere.chmod(0o644)
    result = _register_codex_checkout("--key-file", str(elsewhere), env=script_env(home, bin_dir))
    assert "Using the API key already stored in" in result.stdout
    assert mode(elsewhere) == 0o600
    assert elsewhere.read_text(encoding="utf-8") == FAKE_KEY + "\n"


def test_restore_refuses_a_file_that_is_not_a_backup(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"mcpServers": {}}', encoding="utf-8")
    result = run_script("restore-mcp-from-backup.sh", str(bogus), env=script_env(home, bin_dir))
    assert result.returncode == 1
    assert "not a brave-search-mcp backup" in result.stderr


# ------------------------------------------------------------------------------------------ lint


def test_scripts_pass_shellcheck() -> None:
    shellcheck = require("shellcheck", ".ci/run installs it: apt-get install -y shellcheck")
    files = [*sorted(str(p) for p in SCRIPTS.glob("*.sh")), str(REPO / ".ci" / "install-node-tools.sh")]
    result = subprocess.run(
        [shellcheck, "-x", *files], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout
    assert os.access(SCRIPTS / "register-mcp.sh", os.X_OK)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--no-sync"], "brave-search-mcp is not installed"),
        (["--install", "uvx"], "--install uvx needs uvx on PATH"),
        (["--server-command", "/bin/false"], "the server did not start"),
        (["--install", "checkout", "--repo", "/"], "uv is not on PATH"),
        (["--install", "checkout", "--no-sync", "--repo", "/"], "/.venv/bin/brave-search-mcp does not exist"),
    ],
)
def test_a_failing_prerequisite_stops_before_the_key_file_is_written(
    args: list[str], message: str, home: Path, bin_dir: Path, tmp_path: Path
) -> None:
    """The key is available, but a missing install, uvx or a server that cannot start leaves no key file behind."""
    log = tmp_path / "argv.log"
    recording_client(bin_dir, "codex", log)
    result = run_script(
        "register-mcp.sh", "--client", "codex", *args, env=script_env(home, bin_dir, BRAVE_API_KEY=FAKE_KEY)
    )
    assert result.returncode == 1, result.stderr
    assert message in result.stderr
    assert not key_file(home).exists()
    assert not (home / ".config").exists()
    assert not log.exists()
    assert FAKE_KEY not in result.stdout + result.stderr


@pytest.mark.usefixtures("server")
def test_the_checkouts_own_venv_on_path_is_not_taken_for_an_installed_command(
    home: Path, bin_dir: Path, tmp_path: Path
) -> None:
    """An activated dev venv would tie the registration to the clone: tool mode refuses to register it."""
    recording_client(bin_dir, "codex", tmp_path / "argv.log")
    (bin_dir / "brave-search-mcp").symlink_to(SERVER)
    env = script_env(home, bin_dir, BRAVE_API_KEY=FAKE_KEY, PATH=f"{SERVER.parent}{os.pathsep}{bin_dir}")
    result = run_script("register-mcp.sh", "--client", "codex", "--no-sync", env=env)
    assert result.returncode == 1
    assert "not on PATH outside this checkout" in result.stderr
    assert not key_file(home).exists()


@pytest.mark.usefixtures("server")
def test_tool_mode_registers_the_installed_command_found_on_path(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    tools = tmp_path / "tool-bin"
    tools.mkdir()
    installed = tools / "brave-search-mcp"
    installed.write_text(f'#!/bin/sh\nexec "{SERVER}" "$@"\n', encoding="utf-8")
    installed.chmod(0o755)
    log = tmp_path / "argv.log"
    recording_client(bin_dir, "codex", log)
    env = script_env(home, bin_dir, BRAVE_API_KEY=FAKE_KEY, PATH=f"{tools}{os.pathsep}{bin_dir}")
    result = run_script("register-mcp.sh", "--client", "codex", "--no-sync", env=env)
    assert f"Using the installed {installed}." in result.stdout
    assert "tools (" in result.stdout  # the installed command was test-started
    assert "'codex mcp get brave-search' failed" in result.stderr  # the stand-in codex stops it after that
    assert key_file(home).exists()
