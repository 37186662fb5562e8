"""Every client snippet in docs/clients.md section 4 parses, and runs where a real client program exists.

Claude Code and Codex snippets go through the real CLIs with throw-away homes; the Claude Desktop,
Cursor and VS Code JSON (hosts that cannot run here) are parsed, their host-side substitutions
filled in, and the resulting server entry is started by the MCP Inspector's CLI (a real MCP client).
``brave-search-mcp`` is put on PATH as an installed command would be (a link outside the checkout).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.client_programs import SERVER, TOOL_NAMES, require_tools

pytestmark = pytest.mark.clients

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "clients.md"
FAKE_KEY = "BSAfake-snippet-key-not-real"


def _section4() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index("## 4. Registering by hand") : text.index("## 5. ")]


def _snippets() -> dict[str, list[tuple[str, str]]]:
    """Fenced blocks of section 4 grouped by the bold label before them: label → [(language, body)]."""
    grouped: dict[str, list[tuple[str, str]]] = {}
    label = ""
    for part in re.split(r"(```\w*\n.*?```)", _section4(), flags=re.S):
        block = re.fullmatch(r"```(\w*)\n(.*?)```", part, flags=re.S)
        if block is None:
            labels = re.findall(r"\*\*(.+?)\*\*", part)
            label = labels[-1] if labels else label
            continue
        grouped.setdefault(label, []).append((block.group(1), block.group(2)))
    return grouped


def _one(label: str, language: str) -> str:
    (body,) = [body for lang, body in _snippets()[label] if lang == language]
    return body


def test_every_json_and_toml_snippet_parses() -> None:
    count = 0
    for blocks in _snippets().values():
        for language, body in blocks:
            if language == "json":
                json.loads(body)
                count += 1
            elif language == "toml":
                tomllib.loads(body)
                count += 1
    assert count == 6  # project .mcp.json, Codex, Claude Desktop, Cursor, VS Code, Codex behind a proxy


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Throw-away homes, and brave-search-mcp on PATH from outside the checkout."""
    bin_dir = require_tools("codex", "claude", "mcp-inspector")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "brave-search-mcp").symlink_to(SERVER)
    for name in ("codex", "claude", "mcp-inspector"):
        (tools / name).symlink_to((bin_dir / name).resolve())
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".config" / "brave-search-mcp").mkdir(parents=True)
    (home / ".config" / "brave-search-mcp" / "api-key").write_text(FAKE_KEY + "\n", encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("BRAVE_", "CODEX_", "CLAUDE", "VIRTUAL"))}
    base.update(
        HOME=str(home),
        CODEX_HOME=str(home / ".codex"),
        CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        PATH=os.pathsep.join([str(tools), "/usr/local/bin", "/usr/bin", "/bin"]),
    )
    return base


def _sh(line: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["bash", "-c", line], env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
    return result


def _connected(listing: str) -> bool:
    line = next((row for row in listing.splitlines() if row.startswith("brave-search:")), "")
    return "✔ Connected" in line


def test_claude_code_user_scope_snippet_connects(env: dict[str, str], tmp_path: Path) -> None:
    lines = [line for line in _one("Claude Code, user scope", "sh").splitlines() if line.startswith("claude mcp add")]
    _sh(lines[0], env, tmp_path)
    entry = json.loads((tmp_path / "claude-config" / ".claude.json").read_text(encoding="utf-8"))["mcpServers"]
    assert entry["brave-search"]["env"] == {"BRAVE_API_KEY_FILE": f"{env['HOME']}/.config/brave-search-mcp/api-key"}
    assert _connected(_sh("claude mcp list", env, tmp_path).stdout)


def test_claude_code_project_scope_snippet_writes_the_shown_neutral_mcp_json(
    env: dict[str, str], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    _sh(_one("Claude Code, project scope", "sh").strip(), env, project)
    written = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))
    assert written == json.loads(_one("Claude Code, project scope", "json"))
    values = json.dumps(written)
    assert str(tmp_path) not in values and '"/' not in values  # nothing machine-specific
    # Approve the project's servers as a user would (trust dialog + enable), then Claude starts it.
    config_path = tmp_path / "claude-config" / ".claude.json"
    config: dict[str, Any] = json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else {}
    config.setdefault("projects", {}).setdefault(str(project), {})["hasTrustDialogAccepted"] = True
    config_path.write_text(json.dumps(config), encoding="utf-8")
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text('{"enableAllProjectMcpServers": true}', encoding="utf-8")
    assert _connected(_sh("claude mcp list", {**env, "BRAVE_API_KEY": FAKE_KEY}, project).stdout)


def test_codex_snippet_is_what_codex_reads(env: dict[str, str], tmp_path: Path) -> None:
    (Path(env["CODEX_HOME"]) / "config.toml").write_text(_one("Codex", "toml"), encoding="utf-8")
    got = json.loads(_sh("codex mcp get --json brave-search 2>/dev/null", env, tmp_path).stdout)
    assert got["transport"]["command"] == "brave-search-mcp"
    assert got["transport"]["env_vars"] == ["BRAVE_API_KEY"]


def _inspector_lists_tools(servers: dict[str, Any], env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "inspector.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    out = _sh(
        f"mcp-inspector --cli --format json -q --config {config} --server brave-search --method tools/list",
        env,
        tmp_path,
    ).stdout
    assert sorted(tool["name"] for tool in json.loads(out)["result"]["tools"]) == sorted(TOOL_NAMES)


def test_claude_desktop_snippet_starts_with_the_absolute_paths_filled_in(env: dict[str, str], tmp_path: Path) -> None:
    servers = json.loads(_one("Claude Desktop", "json"))["mcpServers"]
    entry = servers["brave-search"]
    assert entry["command"].startswith("/") and entry["command"].endswith("/.local/bin/brave-search-mcp")
    entry["command"] = entry["command"].replace("/Users/me/.local/bin", str(tmp_path / "bin"))
    entry["env"]["BRAVE_API_KEY_FILE"] = entry["env"]["BRAVE_API_KEY_FILE"].replace("/Users/me", env["HOME"])
    assert Path(entry["env"]["BRAVE_API_KEY_FILE"]).is_file()
    _inspector_lists_tools(servers, env, tmp_path)


@pytest.mark.parametrize(("label", "key"), [("Cursor", "mcpServers"), ("VS Code", "servers")])
def test_cursor_and_vs_code_snippets_start_with_the_hosts_substitution_filled_in(
    label: str, key: str, env: dict[str, str], tmp_path: Path
) -> None:
    doc = json.loads(_one(label, "json"))
    entry = doc[key]["brave-search"]
    reference = entry["env"]["BRAVE_API_KEY"]
    assert reference in {"${env:BRAVE_API_KEY}", "${input:brave-api-key}"}  # never a literal key
    if key == "servers":
        assert doc["inputs"][0]["password"] is True
    entry["env"]["BRAVE_API_KEY"] = FAKE_KEY
    entry.pop("type", None)
    _inspector_lists_tools({"brave-search": entry}, env, tmp_path)
