"""Brave's official TypeScript server, installed with npm into a cache directory, run against the bench's fake.

The official server (``@brave/brave-search-mcp-server``) has no base-URL setting: it calls the global
``fetch`` with absolute ``https://api.search.brave.com`` URLs. ``bench/node/redirect-fetch.mjs`` is
loaded with ``node --import`` and rewrites that origin to the fake's ``http://127.0.0.1:PORT``
(``BENCH_BRAVE_ORIGIN``). Configuration read from its 2.1.4 ``dist/config.js``: the key comes from
``BRAVE_API_KEY``, the transport from ``--transport stdio`` (also the default), and ``dotenv`` reads a
``.env`` from the working directory, so the server runs in the cache directory, which has none.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

PACKAGE = "@brave/brave-search-mcp-server"
VERSION = "2.1.4"
SERVER_NAME = "brave-search-mcp-server"  # serverInfo.name in its initialize result
PRELOAD = Path(__file__).resolve().parent / "node" / "redirect-fetch.mjs"
ORIGIN_ENV = "BENCH_BRAVE_ORIGIN"
INSTALL_TIMEOUT = 300.0


@dataclass(frozen=True)
class OfficialServer:
    """An installed official server: how to start it and where."""

    node: str
    entry: Path
    cache_dir: Path
    version: str

    def command(self) -> list[str]:
        """``node --import redirect-fetch.mjs dist/index.js --transport stdio``: node itself, so its pid is /proc's."""
        return [self.node, "--import", PRELOAD.as_uri(), str(self.entry), "--transport", "stdio"]


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/brave-search-mcp-bench``, else ``~/.cache/brave-search-mcp-bench``."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "brave-search-mcp-bench"


def install_dir(root: Path, version: str = VERSION) -> Path:
    """One npm prefix per pinned version, so a version bump never reuses a stale install."""
    return root / f"official-{version}"


def entry_point(prefix: Path) -> Path:
    """The server's ``dist/index.js`` under an npm prefix."""
    return prefix / "node_modules" / "@brave" / "brave-search-mcp-server" / "dist" / "index.js"


def installed_version(prefix: Path) -> str | None:
    """The version npm installed under ``prefix``, or None when it is absent or unreadable."""
    manifest = entry_point(prefix).parent.parent / "package.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None


def official_env(base_url: str, key: str, path: str | None = None) -> dict[str, str]:
    """Environment of the official server: its key variable, the fake's origin for the preload, PATH and HOME."""
    split = urlsplit(base_url)
    if split.scheme != "http" or split.hostname != "127.0.0.1" or split.port is None:
        raise ValueError(f"the official server may only be pointed at the local fake, not {base_url!r}")
    return {
        "PATH": path if path is not None else os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "BRAVE_API_KEY": key,
        ORIGIN_ENV: f"http://127.0.0.1:{split.port}",
        "NODE_ENV": "production",
    }


def ensure_official(
    root: Path | None = None, *, version: str = VERSION, timeout: float = INSTALL_TIMEOUT
) -> OfficialServer | str:
    """The installed server (installing it with npm when missing), or one line saying why it is skipped."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "official server skipped: node/npm not found on PATH"
    prefix = install_dir(root or cache_root(), version)
    if installed_version(prefix) != version:
        prefix.mkdir(parents=True, exist_ok=True)
        argv = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--omit=dev"]
        logger.info("installing %s@%s into %s", PACKAGE, version, prefix)
        try:
            done = subprocess.run(
                [*argv, f"{PACKAGE}@{version}"],
                cwd=prefix,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"official server skipped: npm install failed ({exc})"
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return f"official server skipped: npm install exited {done.returncode} ({tail[0][:200]})"
        if installed_version(prefix) != version:
            return f"official server skipped: npm installed no {PACKAGE}@{version} under {prefix}"
    return OfficialServer(node=node, entry=entry_point(prefix), cache_dir=prefix, version=version)
