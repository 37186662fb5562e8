"""The register/uninstall/restore scripts' own behaviour, without node: usage, refusals, the key file, backups.

The client programs themselves are exercised in test_clients.py. Here a client CLI is either absent
(a PATH that holds only the basic tools) or a stand-in that records how it was called and then fails,
so these tests can prove what the scripts do *before* and *instead of* touching a client.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from brave_search_mcp.tools.registry import all_tools

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
HELPER = SCRIPTS / "_mcp_config.py"
SERVER = REPO / ".venv" / "bin" / "brave-search-mcp"
FAKE_KEY = "BSAfake-3Kp2-distinctive-key-not-real"
BASIC_TOOLS = ("bash", "env", "dirname", "cat", "mkdir", "chmod", "mktemp", "mv", "rm", "grep", "sed", "timeout")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """A PATH directory with the basic tools and python3, but no codex, claude or uv."""
    path = tmp_path / "bin"
    path.mkdir()
    for tool in BASIC_TOOLS:
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed")
        (path / tool).symlink_to(found)
    (path / "python3").symlink_to(sys.executable)
    return path


def _env(home: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        "HOME": str(home),
        "PATH": str(bin_dir),
        "CODEX_HOME": str(home / ".codex"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude-config"),
        "LANG": "C.UTF-8",
    }
    env.update(extra)
    return env


def _run(
    script: str, *args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPTS / script), *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _helper(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HELPER), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _recording_client(bin_dir: Path, name: str, log: Path) -> None:
    """A stand-in client that records its argv and fails, so a script must stop at its first call."""
    path = bin_dir / name
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "{name} $*" >> "{log}"\necho "boom" >&2\nexit 3\n', encoding="utf-8")
    path.chmod(0o755)


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
    result = _run(script, "--help", env=_env(home, bin_dir))
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
        _recording_client(bin_dir, client, log)
    result = _run("register-mcp.sh", *args, env=_env(home, bin_dir))
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
    result = _run("register-mcp.sh", *args, env=_env(home, bin_dir))
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
    ],
)
def test_uninstall_and_restore_reject_bad_usage(
    script: str, args: list[str], message: str, home: Path, bin_dir: Path
) -> None:
    result = _run(script, *args, env=_env(home, bin_dir))
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
    result = _run(script, *args, env=_env(home, bin_dir))
    assert result.returncode == 1
    assert message in result.stderr
    assert f'export PATH="{REPO}/.ci/node/node_modules/.bin:$PATH"' in result.stderr  # the pinned copies
    assert "npm install -g" not in result.stderr  # never a global, unpinned install


def _copy_of_the_scripts(tmp_path: Path) -> Path:
    """A checkout holding the scripts and the pinned node-tools installer, without the tools installed."""
    repo = tmp_path / "checkout"
    shutil.copytree(SCRIPTS, repo / "scripts")
    (repo / ".ci").mkdir()
    for name in ("install-node-tools.sh", "package.json"):
        shutil.copy2(REPO / ".ci" / name, repo / ".ci" / name)
    return repo


def test_the_missing_client_hint_works_as_written(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    repo = _copy_of_the_scripts(tmp_path)
    register = [str(repo / "scripts" / "register-mcp.sh"), "--client", "codex", "--no-key"]

    def run(path: str) -> str:
        env = _env(home, bin_dir, PATH=path)
        done = subprocess.run(register, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        return done.stderr

    before = run(str(bin_dir))
    installer, path_line = before.split("nothing global): ")[1].split(", then run")[0].split(" && ")
    assert Path(installer) == repo / ".ci" / "install-node-tools.sh" and Path(installer).is_file()
    tools = repo / ".ci" / "node" / "node_modules" / ".bin"
    assert path_line == f'export PATH="{tools}:$PATH"'

    tools.mkdir(parents=True)  # what the installer leaves behind
    _recording_client(tools, "codex", tmp_path / "argv.log")
    installed = run(str(bin_dir))
    assert f"the pinned codex: installed in {tools}, which is not on PATH" in installed
    assert path_line in installed

    after = run(f"{tools}:{bin_dir}")  # the PATH line, followed
    assert "is not on PATH;" not in after


def test_all_needs_both_clients(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    _recording_client(bin_dir, "codex", log)
    result = _run("register-mcp.sh", "--client", "all", "--no-key", env=_env(home, bin_dir))
    assert result.returncode == 1
    assert "'claude' is not on PATH" in result.stderr
    assert not log.exists()


# ------------------------------------------------------------------------------------------ the key


def test_no_key_and_no_terminal_stops_at_once_without_calling_a_client(
    home: Path, bin_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "argv.log"
    _recording_client(bin_dir, "codex", log)
    result = _run(
        "register-mcp.sh",
        "--client",
        "codex",
        "--no-sync",
        "--install",
        "checkout",
        env=_env(home, bin_dir),
        timeout=30,
    )
    assert result.returncode == 1
    assert "no API key" in result.stderr
    assert "--no-key" in result.stderr
    assert not log.exists()
    assert not (home / ".config" / "brave-search-mcp" / "api-key").exists()


def test_a_key_with_whitespace_is_refused_and_not_stored(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    _recording_client(bin_dir, "codex", tmp_path / "argv.log")
    env = _env(home, bin_dir, BRAVE_API_KEY="two words")
    result = _run("register-mcp.sh", "--client", "codex", "--no-sync", "--install", "checkout", env=env)
    assert result.returncode == 1
    assert "whitespace" in result.stderr
    assert "two words" not in result.stderr
    assert not (home / ".config" / "brave-search-mcp" / "api-key").exists()


@pytest.fixture
def server() -> Path:
    if not SERVER.exists():
        pytest.skip(f"{SERVER} is missing; run `uv sync --extra dev`")
    return SERVER


@pytest.mark.usefixtures("server")
def test_the_key_goes_to_a_private_file_and_never_into_a_client_argv(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "argv.log"
    _recording_client(bin_dir, "codex", log)
    xdg = tmp_path / "xdg"
    env = _env(home, bin_dir, BRAVE_API_KEY=FAKE_KEY, XDG_CONFIG_HOME=str(xdg))
    result = _run("register-mcp.sh", "--client", "codex", "--no-sync", "--install", "checkout", env=env)

    # The stand-in codex fails its first call: the script stops there and says which step failed.
    assert result.returncode == 1
    assert "'codex mcp get brave-search' failed" in result.stderr
    assert f"{len(all_tools())} tools" in result.stdout  # the server was started once before any client was touched
    key_file = xdg / "brave-search-mcp" / "api-key"
    assert key_file.read_text(encoding="utf-8") == FAKE_KEY + "\n"
    assert _mode(key_file) == 0o600
    assert _mode(key_file.parent) == 0o700
    assert log.read_text(encoding="utf-8").startswith("codex mcp get --json brave-search")
    assert FAKE_KEY not in log.read_text(encoding="utf-8")
    assert FAKE_KEY not in result.stdout + result.stderr


@pytest.mark.usefixtures("server")
def test_an_existing_key_file_is_reused_and_made_private(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    _recording_client(bin_dir, "codex", tmp_path / "argv.log")
    key_file = tmp_path / "elsewhere" / "key"
    key_file.parent.mkdir()
    key_file.write_text(FAKE_KEY + "\n", encoding="utf-8")
    key_file.chmod(0o644)
    result = _run(
        "register-mcp.sh",
        "--client",
        "codex",
        "--no-sync",
        "--install",
        "checkout",
        "--key-file",
        str(key_file),
        env=_env(home, bin_dir),
    )
    assert "Using the API key already stored in" in result.stdout
    assert _mode(key_file) == 0o600
    assert key_file.read_text(encoding="utf-8") == FAKE_KEY + "\n"


def test_restore_refuses_a_file_that_is_not_a_backup(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"mcpServers": {}}', encoding="utf-8")
    result = _run("restore-mcp-from-backup.sh", str(bogus), env=_env(home, bin_dir))
    assert result.returncode == 1
    assert "not a brave-search-mcp backup" in result.stderr


# ------------------------------------------------------------------------------------------ helper: backups


CODEX_TOML = """\
# personal comment
model = "gpt-5"

[mcp_servers.brave-search]
command = "/opt/x"   # inline comment
startup_timeout_sec = 20

[mcp_servers.brave-search.env]
A = "1"
"""


def _backup(tmp_path: Path, config: Path, client: str = "codex", *extra: str) -> Path:
    result = _helper(
        "backup",
        "--client",
        client,
        "--dir",
        str(tmp_path / "backups"),
        "--config",
        str(config),
        "--name",
        "brave-search",
        "--reason",
        "test",
        *extra,
    )
    assert result.returncode == 0, result.stderr
    return Path(result.stdout.strip())


def test_codex_backup_is_private_and_restores_byte_for_byte(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(CODEX_TOML, encoding="utf-8")
    config.chmod(0o600)
    backup = _backup(tmp_path, config)
    again = _backup(tmp_path, config)
    assert backup != again  # two backups in the same second never overwrite each other
    assert _mode(backup) == 0o600
    assert _mode(backup.parent) == 0o700
    record = json.loads(backup.read_text(encoding="utf-8"))
    assert record["config_text"] == CODEX_TOML
    assert record["entry_present"] is True

    config.write_text("[mcp_servers.other]\ncommand = 'y'\n", encoding="utf-8")
    assert _helper("restore-codex-file", str(backup)).returncode == 0
    assert config.read_text(encoding="utf-8") == CODEX_TOML
    assert _mode(config) == 0o600


def test_codex_backup_keeps_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    raw = b"# caf\xe9 in latin-1\n"
    config.write_bytes(raw)
    backup = _backup(tmp_path, config)
    assert "config_base64" in json.loads(backup.read_text(encoding="utf-8"))
    config.write_bytes(b"changed\n")
    assert _helper("restore-codex-file", str(backup)).returncode == 0
    assert config.read_bytes() == raw


def test_restoring_the_backup_of_no_config_removes_the_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    backup = _backup(tmp_path, config)
    assert json.loads(backup.read_text(encoding="utf-8"))["config_existed"] is False
    config.write_text("[mcp_servers.brave-search]\ncommand = 'x'\n", encoding="utf-8")
    assert _helper("restore-codex-file", str(backup)).returncode == 0
    assert not config.exists()


def test_claude_backup_holds_the_entry_of_the_right_scope(tmp_path: Path) -> None:
    config = tmp_path / ".claude.json"
    user_entry = {"command": "/user/brave"}
    local_entry = {"type": "stdio", "command": "/local/brave", "args": ["-v"]}
    config.write_text(
        json.dumps(
            {
                "mcpServers": {"brave-search": user_entry},
                "projects": {"/p": {"mcpServers": {"brave-search": local_entry}}},
            }
        ),
        encoding="utf-8",
    )
    local = _backup(tmp_path, config, "claude", "--scope", "local", "--project", "/p")
    user = _backup(tmp_path, config, "claude", "--scope", "user", "--project", "/p")
    other = _backup(tmp_path, config, "claude", "--scope", "local", "--project", "/elsewhere")
    assert json.loads(local.read_text(encoding="utf-8"))["entry"] == local_entry
    assert json.loads(user.read_text(encoding="utf-8"))["entry"] == user_entry
    assert json.loads(other.read_text(encoding="utf-8"))["entry_present"] is False
    info = _helper("backup-info", str(local)).stdout.splitlines()
    assert "client=claude" in info
    assert "scope=local" in info
    assert "entry_present=yes" in info
    assert json.loads(_helper("backup-entry", str(local)).stdout) == local_entry


def test_backup_info_rejects_foreign_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"format": "brave-search-mcp-backup", "version": 1, "client": "vim"}), encoding="utf-8")
    result = _helper("backup-info", str(path))
    assert result.returncode == 1
    assert "names no valid client" in result.stderr


# ------------------------------------------------------------------------------------------ helper: codex toml


def test_env_vars_are_written_into_the_server_table_once(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(CODEX_TOML + "\n[mcp_servers.other]\ncommand = 'y'\n", encoding="utf-8")
    for _ in range(2):
        result = _helper(
            "codex-set-env-vars", "--config", str(config), "--name", "brave-search", "--var", "BRAVE_API_KEY"
        )
        assert result.returncode == 0, result.stderr
    text = config.read_text(encoding="utf-8")
    assert text.count("env_vars") == 1
    parsed = tomllib.loads(text)["mcp_servers"]
    assert parsed["brave-search"]["env_vars"] == ["BRAVE_API_KEY"]
    assert parsed["brave-search"]["env"] == {"A": "1"}
    assert "env_vars" not in parsed["other"]
    assert text.startswith("# personal comment\n")


def test_env_vars_need_the_table(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "x"\n', encoding="utf-8")
    result = _helper("codex-set-env-vars", "--config", str(config), "--name", "brave-search", "--var", "BRAVE_API_KEY")
    assert result.returncode == 1
    assert "has no table [mcp_servers.brave-search]" in result.stderr


def test_codex_check_spots_a_different_entry() -> None:
    got = {"transport": {"type": "stdio", "command": "/a", "args": [], "env": {"K": "v"}, "env_vars": []}}
    ok = subprocess.run(
        [sys.executable, str(HELPER), "codex-check", "--name", "n", "--command", "/a", "--env", "K=v"],
        input=json.dumps(got),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(
        [sys.executable, str(HELPER), "codex-check", "--name", "n", "--command", "/b", "--var", "BRAVE_API_KEY"],
        input=json.dumps(got),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert bad.returncode == 1
    assert "command '/a'" in bad.stderr
    assert "env_vars" in bad.stderr


# ------------------------------------------------------------------------------------------ helper: smoke


def test_smoke_check_starts_the_real_server(server: Path) -> None:
    result = _helper("smoke", "--timeout", "60", "--", str(server))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("brave-search ")
    assert f"{len(all_tools())} tools" in result.stdout


def test_smoke_check_reports_a_server_that_exits() -> None:
    true = shutil.which("true")
    assert true is not None
    result = _helper("smoke", "--timeout", "30", "--", true)
    assert result.returncode == 1
    assert "exited" in result.stderr
    assert "before answering" in result.stderr


def test_smoke_check_reports_a_missing_command(tmp_path: Path) -> None:
    result = _helper("smoke", "--", str(tmp_path / "nope"))
    assert result.returncode == 1
    assert "cannot start" in result.stderr


# ------------------------------------------------------------------------------------------ lint


def test_scripts_pass_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    files = [*sorted(str(p) for p in SCRIPTS.glob("*.sh")), str(REPO / ".ci" / "install-node-tools.sh")]
    result = subprocess.run(
        [shellcheck, "-x", *files], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout
    assert os.access(SCRIPTS / "register-mcp.sh", os.X_OK)


# ------------------------------------------------------------------------------------------ prerequisites first


def _key_file(home: Path) -> Path:
    return home / ".config" / "brave-search-mcp" / "api-key"


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
    _recording_client(bin_dir, "codex", log)
    result = _run("register-mcp.sh", "--client", "codex", *args, env=_env(home, bin_dir, BRAVE_API_KEY=FAKE_KEY))
    assert result.returncode == 1, result.stderr
    assert message in result.stderr
    assert not _key_file(home).exists()
    assert not (home / ".config").exists()
    assert not log.exists()
    assert FAKE_KEY not in result.stdout + result.stderr


@pytest.mark.usefixtures("server")
def test_the_checkouts_own_venv_on_path_is_not_taken_for_an_installed_command(
    home: Path, bin_dir: Path, tmp_path: Path
) -> None:
    """An activated dev venv would tie the registration to the clone: tool mode refuses to register it."""
    _recording_client(bin_dir, "codex", tmp_path / "argv.log")
    (bin_dir / "brave-search-mcp").symlink_to(SERVER)
    env = _env(home, bin_dir, BRAVE_API_KEY=FAKE_KEY, PATH=f"{SERVER.parent}{os.pathsep}{bin_dir}")
    result = _run("register-mcp.sh", "--client", "codex", "--no-sync", env=env)
    assert result.returncode == 1
    assert "not on PATH outside this checkout" in result.stderr
    assert not _key_file(home).exists()


@pytest.mark.usefixtures("server")
def test_tool_mode_registers_the_installed_command_found_on_path(home: Path, bin_dir: Path, tmp_path: Path) -> None:
    tools = tmp_path / "tool-bin"
    tools.mkdir()
    installed = tools / "brave-search-mcp"
    installed.write_text(f'#!/bin/sh\nexec "{SERVER}" "$@"\n', encoding="utf-8")
    installed.chmod(0o755)
    log = tmp_path / "argv.log"
    _recording_client(bin_dir, "codex", log)
    env = _env(home, bin_dir, BRAVE_API_KEY=FAKE_KEY, PATH=f"{tools}{os.pathsep}{bin_dir}")
    result = _run("register-mcp.sh", "--client", "codex", "--no-sync", env=env)
    assert f"Using the installed {installed}." in result.stdout
    assert "tools (" in result.stdout  # the installed command was test-started
    assert "'codex mcp get brave-search' failed" in result.stderr  # the stand-in codex stops it after that
    assert _key_file(home).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--install", "pip"], "invalid --install 'pip'"),
        (["--uvx-from", "brave-search-mcp==0.1.0"], "--uvx-from needs --install uvx"),
    ],
)
def test_install_options_are_checked_as_usage(args: list[str], message: str, home: Path, bin_dir: Path) -> None:
    result = _run("register-mcp.sh", "--no-key", *args, env=_env(home, bin_dir))
    assert result.returncode == 2
    assert message in result.stderr
