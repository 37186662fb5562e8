"""_mcp_config.py, the scripts' stdlib helper: private byte-for-byte backups, the Codex TOML patch, the smoke check."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

from brave_search_mcp.tools.registry import all_tools
from tests.scripts.sandbox import mode, run_helper

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
    result = run_helper(
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
    assert mode(backup) == 0o600
    assert mode(backup.parent) == 0o700
    record = json.loads(backup.read_text(encoding="utf-8"))
    assert record["config_text"] == CODEX_TOML
    assert record["entry_present"] is True

    config.write_text("[mcp_servers.other]\ncommand = 'y'\n", encoding="utf-8")
    assert run_helper("restore-codex-file", str(backup)).returncode == 0
    assert config.read_text(encoding="utf-8") == CODEX_TOML
    assert mode(config) == 0o600


def test_codex_backup_keeps_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    raw = b"# caf\xe9 in latin-1\n"
    config.write_bytes(raw)
    backup = _backup(tmp_path, config)
    assert "config_base64" in json.loads(backup.read_text(encoding="utf-8"))
    config.write_bytes(b"changed\n")
    assert run_helper("restore-codex-file", str(backup)).returncode == 0
    assert config.read_bytes() == raw


def test_restoring_the_backup_of_no_config_removes_the_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    backup = _backup(tmp_path, config)
    assert json.loads(backup.read_text(encoding="utf-8"))["config_existed"] is False
    config.write_text("[mcp_servers.brave-search]\ncommand = 'x'\n", encoding="utf-8")
    assert run_helper("restore-codex-file", str(backup)).returncode == 0
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
    info = run_helper("backup-info", str(local)).stdout.splitlines()
    assert "client=claude" in info
    assert "scope=local" in info
    assert "entry_present=yes" in info
    assert json.loads(run_helper("backup-entry", str(local)).stdout) == local_entry


def test_backup_info_rejects_foreign_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"format": "brave-search-mcp-backup", "version": 1, "client": "vim"}), encoding="utf-8")
    result = run_helper("backup-info", str(path))
    assert result.returncode == 1
    assert "names no valid client" in result.stderr


# ------------------------------------------------------------------------------------------ helper: codex toml


def test_env_vars_are_written_into_the_server_table_once(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(CODEX_TOML + "\n[mcp_servers.other]\ncommand = 'y'\n", encoding="utf-8")
    for _ in range(2):
        result = run_helper(
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
    result = run_helper(
        "codex-set-env-vars", "--config", str(config), "--name", "brave-search", "--var", "BRAVE_API_KEY"
    )
    assert result.returncode == 1
    assert "has no table [mcp_servers.brave-search]" in result.stderr


def test_codex_check_spots_a_different_entry() -> None:
    got = {"transport": {"type": "stdio", "command": "/a", "args": [], "env": {"K": "v"}, "env_vars": []}}
    ok = run_helper("codex-check", "--name", "n", "--command", "/a", "--env", "K=v", input=json.dumps(got), timeout=30)
    assert ok.returncode == 0, ok.stderr
    bad = run_helper(
        "codex-check", "--name", "n", "--command", "/b", "--var", "BRAVE_API_KEY", input=json.dumps(got), timeout=30
    )
    assert bad.returncode == 1
    assert "command '/a'" in bad.stderr
    assert "env_vars" in bad.stderr


# ------------------------------------------------------------------------------------------ helper: smoke


def test_smoke_check_starts_the_real_server(server: Path) -> None:
    result = run_helper("smoke", "--timeout", "60", "--", str(server))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("brave-search ")
    assert f"{len(all_tools())} tools" in result.stdout


def test_smoke_check_reports_a_server_that_exits() -> None:
    true = shutil.which("true")
    assert true is not None
    result = run_helper("smoke", "--timeout", "30", "--", true)
    assert result.returncode == 1
    assert "exited" in result.stderr
    assert "before answering" in result.stderr


def test_smoke_check_reports_a_missing_command(tmp_path: Path) -> None:
    result = run_helper("smoke", "--", str(tmp_path / "nope"))
    assert result.returncode == 1
    assert "cannot start" in result.stderr
