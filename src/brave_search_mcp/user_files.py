"""Where the user's files live: the stored key, the shared state and the cache, each in its platform's folder.

The folders are platformdirs' user config, state and cache directories for ``brave-search-mcp`` (no author
folder): on Linux an absolute ``XDG_CONFIG_HOME`` / ``XDG_STATE_HOME`` / ``XDG_CACHE_HOME`` or ``~/.config``,
``~/.local/state``, ``~/.cache``; on macOS the same XDG variables or ``~/Library/Application Support`` and
``~/Library/Caches``; on Windows the local application data folder (the cache in its ``Cache`` subfolder).
platformdirs reads those variables and the home folder from this process's environment itself; this module
reads no variable of its own (``config.py`` is the one that does), so a test moves the folders by setting
``HOME`` and the ``XDG_*`` variables, or by running a subprocess with them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
from platformdirs.api import PlatformDirsABC
from platformdirs.macos import MacOS
from platformdirs.unix import Unix
from platformdirs.windows import Windows

APP_DIR = "brave-search-mcp"
# Counters (the month's requests under the spending cap), learned plans and breakers are state: the user's state
# directory, which no cleaner wipes. Cached answers and pages are cache: the user's cache directory, safe to wipe.
STATE_FILE = "state.sqlite3"
CACHE_FILE = "cache.sqlite3"
KEY_FILE = "api-key"  # in the config directory: what scripts/register-mcp.sh writes (mode 0600)


def platform_dirs(app: str = APP_DIR, *, platform: str = sys.platform, opinion: bool = True) -> PlatformDirsABC:
    """platformdirs' folders of ``app`` on this platform, or on another one a test names (``linux``, ``darwin``,
    ``win32``); ``opinion`` False drops the ``Cache`` subfolder Windows puts under an app's cache."""
    if platform == sys.platform:
        return platformdirs.PlatformDirs(app, appauthor=False, opinion=opinion)
    if platform.startswith("win"):
        return Windows(app, appauthor=False, opinion=opinion)
    return MacOS(app, appauthor=False) if platform == "darwin" else Unix(app, appauthor=False)


def user_config_dir(*, platform: str = sys.platform) -> Path:
    """This app's config directory, where the registration scripts store the key."""
    return Path(platform_dirs(platform=platform).user_config_dir)


def user_state_dir(*, platform: str = sys.platform) -> Path:
    """This app's state directory: counters and plans that no cache cleaner may wipe."""
    return Path(platform_dirs(platform=platform).user_state_dir)


def user_cache_dir(*, platform: str = sys.platform) -> Path:
    """This app's cache directory: answers and pages that are safe to wipe."""
    return Path(platform_dirs(platform=platform).user_cache_dir)


def default_key_path(*, platform: str = sys.platform) -> Path:
    """The key file the registration script writes and every face reads when no key is set explicitly."""
    return user_config_dir(platform=platform) / KEY_FILE


def default_state_path(*, platform: str = sys.platform) -> Path:
    """The SQLite file of the user's counters, plans and breakers (shared by all their processes)."""
    return user_state_dir(platform=platform) / STATE_FILE


def default_cache_path(*, platform: str = sys.platform) -> Path:
    """The SQLite file of the user's cached answers and pages (shared by all their processes, safe to wipe)."""
    return user_cache_dir(platform=platform) / CACHE_FILE


def legacy_state_path(cache_path: Path) -> Path:
    """Where versions before issue 35 kept everything, counters included: beside the cache file, in the cache
    directory (read once, to move the counters to the state file)."""
    return cache_path.with_name(STATE_FILE)


def playwright_cache_dir(*, platform: str = sys.platform) -> Path:
    """Where ``playwright install`` puts browsers unless PLAYWRIGHT_BROWSERS_PATH says otherwise: ms-playwright in
    the user's cache folder."""
    return Path(platform_dirs("ms-playwright", platform=platform, opinion=False).user_cache_dir)
