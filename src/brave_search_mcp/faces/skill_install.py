"""Install the packaged ``brave-search`` agent skill where Claude Code and Codex look for skills.

The skill's source (``skills/brave-search`` in the repository) ships inside the wheel as
``brave_search_mcp/skill``. Its commands are written for a checkout (``uv run --directory <repo>
brave-search-mcp ...``); installing rewrites them to the installed command, so every command in the
installed skill runs as written, from any directory, with no clone.

Where each client looks (checked with the real programs, see docs/clients.md):
``claude`` → ``~/.claude/skills/brave-search``; ``codex`` → ``~/.agents/skills/brave-search`` (the
user-level skills folder of Codex's documentation; ``codex app-server``'s ``skills/list`` reports it
with scope ``user``).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TextIO

from brave_search_mcp.tools.registry import all_tools

SKILL_NAME = "brave-search"
DEFAULT_COMMAND = "brave-search-mcp"
# Skills folder of each client, relative to the home directory.
TARGETS: Mapping[str, tuple[str, ...]] = {
    "claude": (".claude", "skills"),
    "codex": (".agents", "skills"),
}
# How the repository's skill spells the command: a checkout run through uv.
_CHECKOUT_COMMAND = re.compile(r"uv run --directory <repo> brave-search-mcp")
_CHECKOUT_NOTE = re.compile(r"; `<repo>` is this project's checkout")
_PLACEHOLDER = re.compile(r"<repo>")


class SkillInstallError(Exception):
    """The skill cannot be installed as asked; the message says why and what to do."""


def skill_source() -> Traversable:
    """The skill shipped in the package (from a checkout: the repository's ``skills/brave-search``)."""
    packaged = resources.files("brave_search_mcp") / "skill"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[3] / "skills" / SKILL_NAME
    if checkout.is_dir():
        return checkout
    raise SkillInstallError("the brave-search skill is not part of this installation (rebuild the wheel)")


def render_skill_text(text: str, command: str) -> str:
    """Rewrite the checkout command spelled in the skill to ``command``; refuse to leave a placeholder."""
    if not command.strip() or "\n" in command:
        raise SkillInstallError("the command must be one non-empty line")
    text = _CHECKOUT_NOTE.sub(f"; `{command}` is the installed command", text)
    text = _CHECKOUT_COMMAND.sub(lambda _match: command, text)
    leftover = _PLACEHOLDER.search(text)
    if leftover is not None:
        line = text.count("\n", 0, leftover.start()) + 1
        raise SkillInstallError(f"the skill still has a <repo> placeholder at line {line} after rewriting")
    return text


def _walk(node: Traversable, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Traversable]]:
    """Every file under node with its relative path parts (sorted, so installs are reproducible)."""
    for child in sorted(node.iterdir(), key=lambda item: item.name):
        if child.name.startswith(".") or child.name == "__pycache__":
            continue
        if child.is_dir():
            yield from _walk(child, (*prefix, child.name))
        else:
            yield (*prefix, child.name), child


def _render_tree(source: Traversable, command: str) -> dict[tuple[str, ...], bytes]:
    """The installed files: markdown rewritten for ``command``, everything else copied as is."""
    files: dict[tuple[str, ...], bytes] = {}
    for parts, item in _walk(source):
        data = item.read_bytes()
        if parts[-1].endswith(".md"):
            data = render_skill_text(data.decode("utf-8"), command).encode("utf-8")
        files[parts] = data
    if ("SKILL.md",) not in files:
        raise SkillInstallError("the packaged skill has no SKILL.md")
    return files


def _replace_dir(dest: Path, files: Mapping[tuple[str, ...], bytes]) -> None:
    """Write files into a fresh sibling folder, then swap it in, so a reader never sees half a skill."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.new-", dir=dest.parent))
    try:
        for parts, data in files.items():
            path = staging.joinpath(*parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.chmod(staging, 0o755)
        if dest.is_symlink() or dest.is_file():
            dest.unlink()
        elif dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
            os.replace(dest, old / dest.name)
            shutil.rmtree(old)
        os.replace(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def install_skill(
    *, home: Path, targets: Sequence[str] = ("claude", "codex"), command: str = DEFAULT_COMMAND
) -> list[Path]:
    """Write the skill, with its commands spelled as ``command``, into each client's skills folder."""
    unknown = [target for target in targets if target not in TARGETS]
    if unknown or not targets:
        raise SkillInstallError(f"unknown skill target(s) {unknown or '(none)'}; choose from {', '.join(TARGETS)}")
    files = _render_tree(skill_source(), command)
    installed: list[Path] = []
    for target in dict.fromkeys(targets):
        dest = home.joinpath(*TARGETS[target], SKILL_NAME)
        _replace_dir(dest, files)
        installed.append(dest)
    return installed


def uninstall_skill(*, home: Path, targets: Sequence[str] = tuple(TARGETS)) -> list[Path]:
    """Remove the skill ``install_skill`` wrote (a folder whose SKILL.md names this skill; a symlink is unlinked,
    its target kept) from each client's skills folder; the paths removed."""
    removed: list[Path] = []
    for target in targets:
        dest = home.joinpath(*TARGETS[target], SKILL_NAME)
        if dest.is_symlink():
            dest.unlink()
        elif (dest / "SKILL.md").is_file() and _is_this_skill(dest / "SKILL.md"):
            shutil.rmtree(dest)
        else:
            continue
        removed.append(dest)
    return removed


def _is_this_skill(skill_md: Path) -> bool:
    """Whether a SKILL.md is this project's (its front matter names the skill)."""
    head = skill_md.read_text(encoding="utf-8", errors="replace")[:200]
    return head.startswith("---") and f"\nname: {SKILL_NAME}\n" in head


def default_command(argv0: str, which: str | None) -> str:
    """The bare name when it is on PATH (survives upgrades), else the absolute path this process runs from."""
    if which is not None:
        return DEFAULT_COMMAND
    return shlex.quote(str(Path(argv0).absolute()))


def run_install_command(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    """``brave-search-mcp skill install [--target T]... [--command CMD] [--home DIR]``; exit 0, 1 or 2."""
    parser = argparse.ArgumentParser(
        prog="brave-search-mcp skill install",
        description="Install the brave-search agent skill for Claude Code and Codex.",
    )
    parser.add_argument("--target", action="append", choices=sorted(TARGETS), help="client (repeatable; default both)")
    parser.add_argument("--command", help="how the skill runs this program (default: brave-search-mcp if on PATH)")
    parser.add_argument("--home", type=Path, help="home directory to install under (default: yours)")
    try:
        ns = parser.parse_args(list(argv))
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    command = ns.command or default_command(sys.argv[0], shutil.which(DEFAULT_COMMAND))
    try:
        paths = install_skill(home=ns.home or Path.home(), targets=ns.target or tuple(TARGETS), command=command)
    except (SkillInstallError, OSError) as exc:
        err.write(f"brave-search-mcp: skill install failed: {exc}\n")
        return 1
    for path in paths:
        out.write(f"Installed the brave-search skill in {path}\n")
    modes = "|".join(spec.cli.command for spec in all_tools())  # every mode works, each named as its tool's command
    out.write(f"Its commands run: {command} skill {modes} --params-json '<json>'\n")
    return 0
