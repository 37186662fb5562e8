"""``brave-search-mcp uninstall``: one command that undoes what registering and ``skill install`` did.

It removes the Codex and Claude Code registrations of this program (through the clients' own ``mcp remove``, or
in their files, backed up first, where a client's CLI is not on PATH: ``client_files``; only an entry that runs
brave-search-mcp: a server of the same name that runs something else is left alone),
and the skill folders ``skill install`` wrote. The stored key stays unless ``--purge`` is given, which also
deletes the state and cache folders. It ships in the wheel, so it works after the checkout is gone; the program
itself is removed by the tool that installed it (``uv tool uninstall brave-search-mcp``), last.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from brave_search_mcp.config import client_config_files
from brave_search_mcp.faces.client_files import ClientFileError, remove_from_claude_file, remove_from_codex_file
from brave_search_mcp.faces.skill_install import SKILL_NAME, uninstall_skill
from brave_search_mcp.user_files import default_key_path, user_cache_dir, user_state_dir

DEFAULT_NAME = "brave-search"
CLIENT_TIMEOUT = 60  # seconds for one client command (claude mcp get starts the server to check it)
MAX_SCOPES = 3  # Claude Code keeps a server per scope: user, local, project

Run = Callable[[list[str]], subprocess.CompletedProcess[str]]


class UninstallError(Exception):
    """A client refused to remove an entry; the message says which and how to do it by hand."""


def runs_this_program(command: str, args: Sequence[str]) -> bool:
    """Whether a registration starts brave-search-mcp: the installed command, a checkout's, uvx or python -m."""
    words = [command, *args]
    return any(
        Path(word).name == "brave-search-mcp" or word.startswith("brave-search-mcp==") or word == "brave_search_mcp"
        for word in words
    )


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=CLIENT_TIMEOUT, check=False,
                          stdin=subprocess.DEVNULL)  # fmt: skip


@dataclass
class Clients:
    """The client programs found on PATH (None: not installed) and how to run them (tests pass their own)."""

    codex: str | None
    claude: str | None
    run: Run = _run
    files: tuple[Path, Path] = field(default_factory=client_config_files)  # edited directly when a CLI is missing

    @classmethod
    def on_path(cls) -> Clients:
        """The clients the user's PATH finds."""
        return cls(codex=shutil.which("codex"), claude=shutil.which("claude"))


def remove_codex(clients: Clients, name: str) -> str:
    """Remove Codex's entry ``name`` if it runs this program; say what happened."""
    if clients.codex is None:
        return remove_from_codex_file(clients.files[0], name, runs_this_program)
    found = clients.run([clients.codex, "mcp", "get", "--json", name])
    if found.returncode != 0:
        return f"Codex: no server named '{name}'."
    try:
        transport = json.loads(found.stdout[found.stdout.index("{") :]).get("transport") or {}
    except ValueError:
        raise UninstallError(f"Codex: 'codex mcp get --json {name}' printed no JSON; remove it by hand") from None
    command, args = str(transport.get("command") or transport.get("url") or ""), transport.get("args") or []
    if not runs_this_program(command, [str(arg) for arg in args]):
        return f"Codex: '{name}' runs {command or 'something else'}, not brave-search-mcp; left alone."
    removed = clients.run([clients.codex, "mcp", "remove", name])
    if removed.returncode != 0:
        raise UninstallError(f"Codex: 'codex mcp remove {name}' failed: {_last_line(removed)}")
    return f"Codex: removed '{name}' ({command})."


def remove_claude(clients: Clients, name: str) -> list[str]:
    """Remove Claude Code's entries ``name`` that run this program, scope by scope; say what happened."""
    if clients.claude is None:
        return remove_from_claude_file(clients.files[1], name, runs_this_program)
    said: list[str] = []
    for _ in range(MAX_SCOPES):
        found = clients.run([clients.claude, "mcp", "get", name])
        if found.returncode != 0:
            break
        fields = _claude_fields(found.stdout)
        command, scope = fields.get("Command", ""), _scope(fields.get("Scope", ""))
        if not runs_this_program(command, fields.get("Args", "").split()):
            said.append(f"Claude Code: '{name}' runs {command or 'something else'}, not brave-search-mcp; left alone.")
            return said
        removed = clients.run([clients.claude, "mcp", "remove", name, "-s", scope])
        if removed.returncode != 0:
            raise UninstallError(f"Claude Code: 'claude mcp remove {name} -s {scope}' failed: {_last_line(removed)}")
        said.append(f"Claude Code: removed '{name}' from the {scope} scope ({command}).")
    return said or [f"Claude Code: no server named '{name}'."]


def _claude_fields(text: str) -> dict[str, str]:
    """``claude mcp get``'s "  Key: value" lines."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.strip().partition(":")
        if colon and key in ("Scope", "Command", "Args", "Type"):
            fields[key] = value.strip()
    return fields


def _scope(text: str) -> str:
    """Claude Code's scope name from its description ("User config (available in all your projects)")."""
    lowered = text.lower()
    return next((scope for scope in ("user", "project", "local") if lowered.startswith(scope)), "local")


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in (done.stderr or done.stdout or "").splitlines() if line.strip()]
    return lines[-1][:200] if lines else f"exit status {done.returncode}"


def purge() -> list[str]:
    """Delete the stored key (its folder too when nothing else is left in it) and this user's state and cache
    folders; say what went."""
    said = []
    key = default_key_path()
    if key.is_file():
        key.unlink()
        said.append(f"Deleted the stored API key {key}.")
        if not any(key.parent.iterdir()):
            key.parent.rmdir()
    for folder in (user_state_dir(), user_cache_dir()):
        if folder.is_dir():
            shutil.rmtree(folder)
            said.append(f"Deleted {folder}.")
    return said


def run_uninstall(argv: Sequence[str], out: TextIO, err: TextIO, clients: Clients | None = None) -> int:
    """``brave-search-mcp uninstall [--name NAME] [--purge]``; exit 0 (also when nothing was there), 1 or 2."""
    parser = argparse.ArgumentParser(
        prog="brave-search-mcp uninstall",
        description="Remove this program's Codex and Claude Code registrations and the agent skill it installed. "
        "The stored API key stays unless --purge is given.",
        epilog="Then remove the program itself: uv tool uninstall brave-search-mcp (or pipx uninstall ...).",
    )
    parser.add_argument("--name", default=DEFAULT_NAME, help=f"registration name (default {DEFAULT_NAME})")
    parser.add_argument("--purge", action="store_true", help="also delete the stored key, the state and the cache")
    try:
        ns = parser.parse_args(list(argv))
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    clients = clients or Clients.on_path()
    failed = False
    steps: list[Callable[[], list[str]]] = [
        lambda: [remove_codex(clients, ns.name)],
        lambda: remove_claude(clients, ns.name),
        lambda: (
            [f"Removed the {SKILL_NAME} skill from {path}." for path in uninstall_skill(home=Path.home())]
            or [f"No {SKILL_NAME} skill installed."]
        ),
    ]
    if ns.purge:
        steps.append(lambda: purge() or ["No stored key, state or cache to delete."])
    for step in steps:
        try:
            for line in step():
                out.write(line + "\n")
        except (UninstallError, ClientFileError, OSError, subprocess.TimeoutExpired) as exc:
            err.write(f"brave-search-mcp: uninstall: {exc}\n")
            failed = True
    if not ns.purge and default_key_path().is_file():
        out.write(f"Kept the stored API key {default_key_path()} (--purge deletes it).\n")
    out.write("To remove the program too: uv tool uninstall brave-search-mcp (or: pipx uninstall brave-search-mcp).\n")
    return 1 if failed else 0
