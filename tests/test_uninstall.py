"""``uninstall`` where codex and claude are not on PATH: our entries go from their files directly, backed up first;
anything else in those files stays exactly as it was (issue 43 item 10)."""

from __future__ import annotations

import io
import json
import stat
import tomllib
from pathlib import Path

import pytest

from brave_search_mcp.faces.uninstall import Clients, run_uninstall

CODEX_TOML = """\
model = "o4-mini"

[mcp_servers.brave-search]
command = "/home/u/.local/bin/brave-search-mcp"
args = []

[mcp_servers.brave-search.env]
BRAVE_SEARCH_LOG_LEVEL = "WARNING"

[mcp_servers.other]
command = "npx"
args = ["-y", "some-other-server"]
"""
OURS = {"type": "stdio", "command": "uvx", "args": ["--from", "brave-search-mcp==0.1.0", "brave-search-mcp"]}
THEIRS = {"type": "stdio", "command": "npx", "args": ["-y", "@brave/brave-search-mcp-server"]}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return tmp_path


def _uninstall() -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_uninstall([], out, err, Clients(codex=None, claude=None))
    return code, out.getvalue(), err.getvalue()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)


def test_without_the_client_programs_our_entries_leave_their_files_with_a_backup(home: Path) -> None:
    codex, claude = home / ".codex" / "config.toml", home / ".claude.json"
    _write(codex, CODEX_TOML)
    claude_data = {
        "numStartups": 3,
        "mcpServers": {"brave-search": OURS, "memory": THEIRS},
        "projects": {
            "/home/dev/pa": {"mcpServers": {"brave-search": OURS}},
            "/home/dev/pb": {"mcpServers": {"brave-search": THEIRS}},
        },
    }
    _write(claude, json.dumps(claude_data))
    code, said, err = _uninstall()
    assert code == 0, err
    left = tomllib.loads(codex.read_text(encoding="utf-8"))
    assert left == {
        "model": "o4-mini",
        "mcp_servers": {"other": {"command": "npx", "args": ["-y", "some-other-server"]}},
    }
    assert json.loads(claude.read_text(encoding="utf-8")) == {
        "numStartups": 3,
        "mcpServers": {"memory": THEIRS},
        "projects": {"/home/dev/pa": {"mcpServers": {}}, "/home/dev/pb": {"mcpServers": {"brave-search": THEIRS}}},
    }
    for path, original in ((codex, CODEX_TOML), (claude, json.dumps(claude_data))):
        (backup,) = path.parent.glob(f"{path.name}.bak-*")
        assert backup.read_text(encoding="utf-8") == original
        assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(backup.stat().st_mode) == 0o600
        assert str(backup) in said
    assert (
        f"Codex: codex is not on PATH; removed 'brave-search' (/home/u/.local/bin/brave-search-mcp) from {codex}"
        in said
    )
    assert f"removed 'brave-search' from the user scope in {claude} directly." in said
    assert f"removed 'brave-search' from the local scope of /home/dev/pa in {claude} directly." in said
    assert "'brave-search' in the local scope of /home/dev/pb runs npx; left alone." in said
    code, again, _ = _uninstall()  # twice: nothing of ours is left, nothing else is touched
    assert code == 0 and f"Codex: no server named 'brave-search' in {codex}." in again
    assert len(list(codex.parent.glob("config.toml.bak-*"))) == 1


def test_an_entry_written_in_another_toml_form_is_left_and_named_with_how_to_remove_it(home: Path) -> None:
    inline = 'model = "o4-mini"\n[mcp_servers]\nbrave-search = { command = "brave-search-mcp" }\n'
    codex = home / ".codex" / "config.toml"
    _write(codex, inline)
    code, said, err = _uninstall()
    assert code == 1
    assert f"Codex: 'brave-search' in {codex} is not written as its own [mcp_servers.brave-search] table" in err
    assert codex.read_text(encoding="utf-8") == inline and not list(codex.parent.glob("*.bak-*"))
    assert f"Claude Code: not installed (no claude on PATH, no {home / '.claude.json'}); nothing to remove." in said
