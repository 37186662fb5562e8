"""Where the script tests run the scripts: a HOME and a PATH of basic tools only, stand-in clients, the helper."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
HELPER = SCRIPTS / "_mcp_config.py"
SERVER = REPO / ".venv" / "bin" / "brave-search-mcp"
FAKE_KEY = "BSAfake-3Kp2-distinctive-key-not-real"
BASIC_TOOLS = ("bash", "env", "dirname", "cat", "mkdir", "chmod", "mktemp", "mv", "rm", "grep", "sed", "timeout")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def script_env(home: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        "HOME": str(home),
        "PATH": str(bin_dir),
        "CODEX_HOME": str(home / ".codex"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude-config"),
        "LANG": "C.UTF-8",
    }
    env.update(extra)
    return env


def run_script(
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


def run_helper(*args: str, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HELPER), *args],
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def recording_client(bin_dir: Path, name: str, log: Path) -> None:
    """A stand-in client that records its argv and fails, so a script must stop at its first call."""
    path = bin_dir / name
    path.write_text(f'#!/bin/sh\nprintf "%s\\n" "{name} $*" >> "{log}"\necho "boom" >&2\nexit 3\n', encoding="utf-8")
    path.chmod(0o755)


def copy_of_the_scripts(tmp_path: Path) -> Path:
    """A checkout holding the scripts and the pinned node-tools installer, without the tools installed."""
    repo = tmp_path / "checkout"
    shutil.copytree(SCRIPTS, repo / "scripts")
    (repo / ".ci").mkdir()
    for name in ("install-node-tools.sh", "package.json"):
        shutil.copy2(REPO / ".ci" / name, repo / ".ci" / name)
    return repo


def key_file(home: Path) -> Path:
    return home / ".config" / "brave-search-mcp" / "api-key"
