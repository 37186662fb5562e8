"""Where settings come from besides ``BRAVE_SEARCH_*``: the API key's files and variables, and the variables of
Brave's official server, so a user moving from it keeps their setup.

Everything here works on the environment mapping ``config.Settings.from_env`` hands in: this module never looks
at the process environment itself. The key is never echoed; only where it came from is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

KeySource = Literal[
    "BRAVE_API_KEY_FILE", "BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY", "--brave-api-key", "default_key_file"
]


class ConfigError(ValueError):
    """A setting is invalid; the message names the environment variable."""


def key_problem(key: str) -> str | None:
    """Why ``key`` cannot be sent in an HTTP header, or None; the key itself is never part of the answer."""
    if not key:
        return "it is empty"
    if not key.isascii():
        return "it has non-ASCII characters (a zero-width space or smart quote pasted with it?)"
    if any(ch.isspace() for ch in key):
        return "it has white space inside it"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        return "it has control characters"
    return None


def read_key_file(path: Path, name: str) -> str:
    """The key a key file holds; ``ConfigError`` naming ``name`` when it cannot be used (never echoing it)."""
    try:
        value = path.expanduser().read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{name} names a file that cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{name} names a file that is not UTF-8 text") from None
    if not value:
        raise ConfigError(f"{name} names an empty file")
    if any(ch.isspace() for ch in value):
        raise ConfigError(f"{name} must hold the key alone on one line")
    problem = key_problem(value)
    if problem:
        raise ConfigError(f"{name}: the key in that file cannot be used: {problem}")
    return value


@dataclass(frozen=True)
class FoundKey:
    """The key and where it came from (``file``: the key file it was read from, if any)."""

    value: str | None = None
    source: KeySource | None = None
    file: Path | None = None
    notes: tuple[str, ...] = ()


def lookup_key(env: Mapping[str, str], *, flag: str | None = None, default_file: Path | None = None) -> FoundKey:
    """Key order: the file named by BRAVE_API_KEY_FILE, BRAVE_SEARCH_API_KEY, BRAVE_API_KEY, the official server's
    ``--brave-api-key`` flag, then the default key file when it exists (what the registration script writes)."""
    found = _explicit_key(env)
    if found.value is not None:
        if flag:
            note = f"--brave-api-key is ignored: the key from {found.source} is used (it wins when both are set)"
            return FoundKey(found.value, found.source, found.file, (note,))
        return found
    if flag:
        problem = key_problem(flag.strip())
        if problem:
            raise ConfigError(f"--brave-api-key: the key cannot be used: {problem}")
        return FoundKey(flag.strip(), "--brave-api-key")
    if default_file is not None and default_file.is_file():
        return FoundKey(read_key_file(default_file, f"the default key file {default_file}"), "default_key_file",
                        default_file)  # fmt: skip
    return FoundKey()


def _explicit_key(env: Mapping[str, str]) -> FoundKey:
    """The key the key variables set, if any."""
    path = (env.get("BRAVE_API_KEY_FILE") or "").strip()
    if path:
        return FoundKey(read_key_file(Path(path), "BRAVE_API_KEY_FILE"), "BRAVE_API_KEY_FILE", Path(path).expanduser())
    for name in ("BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY"):
        value = (env.get(name) or "").strip()
        if value:
            problem = key_problem(value)
            if problem:
                raise ConfigError(f"{name}: the key cannot be used: {problem}")
            return FoundKey(value, name)
    return FoundKey()


# --- Brave's official server (@brave/brave-search-mcp-server) ---------------------------------------------------

# Its variables -> ours. Ours win when both are set (with a note); alone, theirs are honoured.
OFFICIAL_VARIABLES: Mapping[str, str] = {
    "BRAVE_MCP_TRANSPORT": "BRAVE_SEARCH_TRANSPORT",
    "BRAVE_MCP_PORT": "BRAVE_SEARCH_PORT",
    "BRAVE_MCP_HOST": "BRAVE_SEARCH_HOST",
    "BRAVE_MCP_ALLOWED_HOSTS": "BRAVE_SEARCH_ALLOWED_HOSTS",
    "BRAVE_MCP_LOG_LEVEL": "BRAVE_SEARCH_LOG_LEVEL",
    "BRAVE_MCP_ENABLED_TOOLS": "BRAVE_SEARCH_ENABLED_TOOLS",
    "BRAVE_MCP_DISABLED_TOOLS": "BRAVE_SEARCH_DISABLED_TOOLS",
}
# Its tools -> ours, with the argument that gives the same search (the README's migration table shows these).
OFFICIAL_TOOLS: Mapping[str, tuple[str, dict[str, Any]]] = {
    "brave_web_search": ("brave_web_search", {}),
    "brave_news_search": ("brave_web_search", {"search_type": "news"}),
    "brave_image_search": ("brave_web_search", {"search_type": "images"}),
    "brave_video_search": ("brave_web_search", {"search_type": "videos"}),
    "brave_local_search": ("brave_local_search", {}),
    "brave_place_search": ("brave_local_search", {"location": "<where>"}),
    "brave_summarizer": ("brave_summarizer", {}),
    "brave_llm_context": ("brave_llm_context", {}),
    "brave_answers": ("brave_answer", {}),
}
# Its log levels are MCP's (RFC 5424 names); ours are Python's.
_LOG_LEVELS: Mapping[str, str] = {"notice": "INFO", "alert": "CRITICAL", "emergency": "CRITICAL"}


@dataclass
class Official:
    """Our variables as the official server's set them, and notes on what was ignored or merged."""

    values: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def official_settings(env: Mapping[str, str], flags: Mapping[str, str]) -> Official:
    """Translate the official server's variables present in ``env``; one of ours set in ``env`` (or its flag,
    ``flags``: our variable -> the flag's spelling) wins, with a note saying which value was ignored."""
    out = Official()
    for theirs, ours in OFFICIAL_VARIABLES.items():
        raw = (env.get(theirs) or "").strip()
        if not raw:
            continue
        value = _translate(theirs, raw, out.notes)
        winner = flags.get(ours) or (ours if (env.get(ours) or "").strip() else None)
        if winner is not None:
            out.notes.append(f"{theirs} is ignored: {winner} is set too (ours wins when both are set)")
        elif value is not None:
            out.values[ours] = value
    return out


def _translate(name: str, raw: str, notes: list[str]) -> str | None:
    """One official value in our spelling (tool names mapped); None when nothing of it is left to apply."""
    if name == "BRAVE_MCP_LOG_LEVEL":
        return _LOG_LEVELS.get(raw.lower(), raw)
    if name not in ("BRAVE_MCP_ENABLED_TOOLS", "BRAVE_MCP_DISABLED_TOOLS"):
        return raw
    names = [part for part in raw.replace(",", " ").split() if part]
    mapped = {theirs: OFFICIAL_TOOLS[theirs][0] if theirs in OFFICIAL_TOOLS else theirs for theirs in names}
    if name == "BRAVE_MCP_ENABLED_TOOLS":
        return " ".join(dict.fromkeys(mapped.values()))
    # Disabling one of several official tools that are one of ours (news, but not web) leaves ours on.
    kept = []
    for ours in dict.fromkeys(mapped.values()):
        covering = [theirs for theirs, (target, _) in OFFICIAL_TOOLS.items() if target == ours]
        missing = [theirs for theirs in covering if theirs not in names]
        if missing and any(theirs in names for theirs in covering):
            listed = ", ".join(theirs for theirs in covering if theirs in names)
            notes.append(
                f"BRAVE_MCP_DISABLED_TOOLS: {listed} stays available: our {ours} also serves {', '.join(missing)} "
                "(list them all to disable it)"
            )
        else:
            kept.append(ours)
    return " ".join(kept) or None


def key_origin(source: str | None, file: str | None) -> str:
    """Where the key came from, in words for the start line and status (the key itself never)."""
    if source == "default_key_file":
        return f"the key file {file}"
    return str(source)


def missing_key_advice(default_file: str | None) -> str:
    """How to configure a key, naming the file the registration script writes."""
    where = default_file or "~/.config/brave-search-mcp/api-key"
    return f"set BRAVE_SEARCH_API_KEY (or BRAVE_API_KEY, or BRAVE_API_KEY_FILE), or store it in {where}"
