"""Removing our server from Codex's and Claude Code's own files, for ``uninstall`` where a client's CLI is gone.

The clients' ``mcp remove`` is the way when they are on PATH; without them their files still start the server.
Each file is copied beside itself first (owner-only, like the original) and replaced atomically. Codex's TOML is
edited as text (the standard library reads TOML but does not write it): the lines of the server's tables go,
and the result must parse to exactly the old document without that server, else the file is left untouched and
the message says what to remove by hand. Only an entry that runs brave-search-mcp is removed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


class ClientFileError(Exception):
    """A client's file could not be changed safely; the message names the file and what to remove by hand."""


def _table_path(line: str) -> list[str] | None:
    """The key path of a TOML table header line (``[mcp_servers."brave-search".env]``), else None."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    try:
        node: Any = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        key, node = next(iter(node.items()))
        path.append(key)
    return path


def without_codex_server(text: str, name: str) -> str:
    """``config.toml`` without the tables of server ``name`` (its ``[mcp_servers.<name>]`` and sub-tables)."""
    kept: list[str] = []
    dropping = False
    for line in text.splitlines(keepends=True):
        path = _table_path(line)
        if path is not None:
            dropping = path[:2] == ["mcp_servers", name]
        if not dropping:
            kept.append(line)
    return "".join(kept)


def _backup_and_write(path: Path, data: str) -> Path:
    """Copy ``path`` to ``<name>.bak-<time>`` beside it (its mode kept), then replace it atomically."""
    backup = path.with_name(f"{path.name}.bak-{time.strftime('%Y%m%d-%H%M%S')}")
    shutil.copy2(path, backup)
    mode = path.stat().st_mode & 0o777
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return backup


RunsUs = Callable[[str, Sequence[str]], bool]


def remove_from_codex_file(path: Path, name: str, runs_us: RunsUs) -> str:
    """Remove server ``name`` from Codex's ``config.toml`` if it runs this program; say what happened."""
    if not path.is_file():
        return f"Codex: not installed (no codex on PATH, no {path}); nothing to remove."
    text = path.read_text(encoding="utf-8")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ClientFileError(f"Codex: {path} is not valid TOML ({exc}); remove [mcp_servers.{name}] by hand") from None
    servers = document.get("mcp_servers")
    servers = servers if isinstance(servers, dict) else {}
    entry = servers.get(name)
    if not isinstance(entry, dict):
        return f"Codex: no server named '{name}' in {path}."
    command, args = str(entry.get("command") or entry.get("url") or ""), [str(a) for a in entry.get("args") or []]
    if not runs_us(command, args):
        return f"Codex: '{name}' in {path} runs {command or 'something else'}, not brave-search-mcp; left alone."
    edited = without_codex_server(text, name)
    expected = {**document, "mcp_servers": {k: v for k, v in servers.items() if k != name}}
    try:
        result = tomllib.loads(edited)
    except tomllib.TOMLDecodeError:
        result = None
    if result not in (expected, {k: v for k, v in expected.items() if k != "mcp_servers" or v}):
        raise ClientFileError(
            f"Codex: '{name}' in {path} is not written as its own [mcp_servers.{name}] table; remove it by hand"
        )
    backup = _backup_and_write(path, edited)
    return f"Codex: codex is not on PATH; removed '{name}' ({command}) from {path} directly (backup: {backup})."


def remove_from_claude_file(path: Path, name: str, runs_us: RunsUs) -> list[str]:
    """Remove server ``name`` from Claude Code's ``.claude.json``, user and local (per-project) scopes, where it
    runs this program; say what happened (project scope lives in a project's own ``.mcp.json``: not touched)."""
    if not path.is_file():
        return [f"Claude Code: not installed (no claude on PATH, no {path}); nothing to remove."]
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ClientFileError(f"Claude Code: {path} is not JSON ({exc}); remove '{name}' from it by hand") from None
    holders: list[tuple[str, dict[str, Any]]] = [("the user scope", document)] if isinstance(document, dict) else []
    projects = document.get("projects") if isinstance(document, dict) else None
    for project, settings in (projects or {}).items() if isinstance(projects, dict) else ():
        if isinstance(settings, dict):
            holders.append((f"the local scope of {project}", settings))
    said: list[str] = []
    removed = 0
    for where, holder in holders:
        servers = holder.get("mcpServers")
        entry = servers.get(name) if isinstance(servers, dict) else None
        if not isinstance(entry, dict) or not isinstance(servers, dict):
            continue
        command = str(entry.get("command") or entry.get("url") or "")
        if not runs_us(command, [str(a) for a in entry.get("args") or []]):
            said.append(f"Claude Code: '{name}' in {where} runs {command or 'something else'}; left alone.")
            continue
        del servers[name]
        removed += 1
        said.append(f"Claude Code: claude is not on PATH; removed '{name}' from {where} in {path} directly.")
    if not removed:
        return said or [f"Claude Code: no server named '{name}' in {path}."]
    backup = _backup_and_write(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return [*said, f"Claude Code: the previous {path.name} is kept as {backup}."]
