"""Every setting the server, CLI and library obey, read from the environment in one place.

Invalid values fail fast with a ``ConfigError`` naming the variable, so a misconfigured
server never starts half-working. The API key is held as a ``SecretStr`` and only its
*source* is ever reported.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr

DEFAULT_BASE_URL = "https://api.search.brave.com"
TOOL_NAMES: tuple[str, ...] = (
    "brave_web_search",
    "brave_summarizer",
    "brave_web_search_help",
    "brave_web_search_status",
)

# Per-call output clamps (DESIGN.md): the defaults below must lie inside them.
MIN_MAX_LINES, MAX_MAX_LINES = 20, 300
MIN_MAX_BYTES, MAX_MAX_BYTES = 4 * 1024, 96 * 1024
DEBUG_PAYLOAD_CAP_BYTES = 64 * 1024

KeySource = Literal["BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY", "BRAVE_API_KEY_FILE"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LogFormat = Literal["json", "text"]


class ConfigError(ValueError):
    """A setting is invalid; the message names the environment variable."""


class Settings(BaseModel):
    """Effective configuration; build with ``Settings.from_env()`` or directly in tests."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_key: SecretStr | None = None
    api_key_source: KeySource | None = None
    base_url: str = DEFAULT_BASE_URL
    timeout_seconds: float = 15.0
    call_deadline_seconds: float = 60.0
    retries: int = 3
    retry_base_ms: int = 250
    retry_max_ms: int = 5000
    rate_limit: float | None = None  # explicit requests/second; None = start at 1 and adapt
    burst: int | None = None  # explicit burst; None = 1 until the plan's limit is learnt
    cache_ttl_seconds: float = 300.0
    cache_size: int = 256
    max_response_bytes: int = 4 * 1024 * 1024
    max_lines: int = 120
    max_bytes: int = 32 * 1024
    summarizer_deadline_seconds: float = 20.0
    log_level: LogLevel = "INFO"
    log_format: LogFormat = "json"
    enabled_tools: tuple[str, ...] = TOOL_NAMES

    @property
    def has_key(self) -> bool:
        """Whether a non-empty key is configured."""
        return self.api_key is not None and bool(self.api_key.get_secret_value())

    @property
    def adaptive_rate(self) -> bool:
        """Whether the throttle may follow the plan limit Brave reports."""
        return self.rate_limit is None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read and validate every ``BRAVE_*`` variable; raise ``ConfigError`` on the first bad one."""
        env = os.environ if env is None else env
        reader = _EnvReader(env)
        key, source = _lookup_key(env)
        values: dict[str, Any] = {
            "api_key": SecretStr(key) if key else None,
            "api_key_source": source,
            "base_url": reader.url("BRAVE_SEARCH_BASE_URL", DEFAULT_BASE_URL),
            "timeout_seconds": reader.number("BRAVE_SEARCH_TIMEOUT_SECONDS", 15.0, 0.1, 300.0),
            "call_deadline_seconds": reader.number("BRAVE_SEARCH_DEADLINE_SECONDS", 60.0, 1.0, 3600.0),
            "retries": reader.integer("BRAVE_SEARCH_RETRIES", 3, 0, 10),
            "retry_base_ms": reader.integer("BRAVE_SEARCH_RETRY_BASE_MS", 250, 1, 60_000),
            "retry_max_ms": reader.integer("BRAVE_SEARCH_RETRY_MAX_MS", 5000, 1, 300_000),
            "rate_limit": reader.optional_number("BRAVE_SEARCH_RATE_LIMIT", 0.01, 1000.0),
            "burst": reader.optional_integer("BRAVE_SEARCH_BURST", 1, 1000),
            "cache_ttl_seconds": reader.number("BRAVE_SEARCH_CACHE_TTL_SECONDS", 300.0, 0.0, 86_400.0),
            "cache_size": reader.integer("BRAVE_SEARCH_CACHE_SIZE", 256, 0, 100_000),
            "max_response_bytes": reader.integer(
                "BRAVE_SEARCH_MAX_RESPONSE_BYTES", 4 * 1024 * 1024, 16 * 1024, 256 * 1024 * 1024
            ),
            "max_lines": reader.integer("BRAVE_SEARCH_MAX_LINES", 120, MIN_MAX_LINES, MAX_MAX_LINES),
            "max_bytes": reader.integer("BRAVE_SEARCH_MAX_BYTES", 32 * 1024, MIN_MAX_BYTES, MAX_MAX_BYTES),
            "summarizer_deadline_seconds": reader.number("BRAVE_SEARCH_SUMMARIZER_DEADLINE_SECONDS", 20.0, 1.0, 600.0),
            "log_level": reader.choice(
                "BRAVE_SEARCH_LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"), str.upper
            ),
            "log_format": reader.choice("BRAVE_SEARCH_LOG_FORMAT", "json", ("json", "text"), str.lower),
            "enabled_tools": _tool_selection(env),
        }
        if values["retry_base_ms"] > values["retry_max_ms"]:
            raise ConfigError("BRAVE_SEARCH_RETRY_BASE_MS must not exceed BRAVE_SEARCH_RETRY_MAX_MS")
        return cls(**values)


class _EnvReader:
    """Parses one variable at a time and names it in every error."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env

    def _raw(self, name: str) -> str | None:
        value = self._env.get(name)
        if value is None or not value.strip():
            return None
        return value.strip()

    def _parse(self, name: str, kind: str, convert: Callable[[str], Any], lo: float, hi: float) -> Any:
        raw = self._raw(name)
        if raw is None:
            return None
        try:
            value = convert(raw)
        except ValueError:
            raise ConfigError(f"{name} must be {kind}, got {raw[:40]!r}") from None
        if value != value or not lo <= value <= hi:  # NaN or out of range
            raise ConfigError(f"{name} must be between {lo:g} and {hi:g}, got {raw[:40]!r}")
        return value

    def number(self, name: str, default: float, lo: float, hi: float) -> float:
        value = self._parse(name, "a number", float, lo, hi)
        return default if value is None else float(value)

    def optional_number(self, name: str, lo: float, hi: float) -> float | None:
        value = self._parse(name, "a number", float, lo, hi)
        return None if value is None else float(value)

    def integer(self, name: str, default: int, lo: int, hi: int) -> int:
        value = self._parse(name, "a whole number", int, lo, hi)
        return default if value is None else int(value)

    def optional_integer(self, name: str, lo: int, hi: int) -> int | None:
        value = self._parse(name, "a whole number", int, lo, hi)
        return None if value is None else int(value)

    def choice(self, name: str, default: str, allowed: tuple[str, ...], fold: Callable[[str], str]) -> str:
        raw = self._raw(name)
        if raw is None:
            return default
        value = fold(raw)
        if value not in allowed:
            raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got {raw[:40]!r}")
        return value

    def url(self, name: str, default: str) -> str:
        raw = self._raw(name)
        if raw is None:
            return default
        if not raw.startswith(("http://", "https://")) or len(raw) < 9:
            raise ConfigError(f"{name} must be an http(s) URL such as {DEFAULT_BASE_URL}, got {raw[:60]!r}")
        return raw.rstrip("/")


def _lookup_key(env: Mapping[str, str]) -> tuple[str | None, KeySource | None]:
    """Key order: BRAVE_SEARCH_API_KEY, BRAVE_API_KEY, then the file named by BRAVE_API_KEY_FILE."""
    for name in ("BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY"):
        value = (env.get(name) or "").strip()
        if value:
            return value, name
    path = (env.get("BRAVE_API_KEY_FILE") or "").strip()
    if not path:
        return None, None
    try:
        value = Path(path).expanduser().read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"BRAVE_API_KEY_FILE names a file that cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError("BRAVE_API_KEY_FILE names a file that is not UTF-8 text") from None
    if not value:
        raise ConfigError("BRAVE_API_KEY_FILE names an empty file")
    if any(ch.isspace() for ch in value):
        raise ConfigError("BRAVE_API_KEY_FILE must hold the key alone on one line")
    return value, "BRAVE_API_KEY_FILE"


def _split_names(raw: str) -> list[str]:
    return [part for part in raw.replace(",", " ").split() if part]


def _tool_selection(env: Mapping[str, str]) -> tuple[str, ...]:
    """BRAVE_SEARCH_ENABLED_TOOLS / _DISABLED_TOOLS: mutually exclusive, names checked."""
    enabled = _split_names(env.get("BRAVE_SEARCH_ENABLED_TOOLS", ""))
    disabled = _split_names(env.get("BRAVE_SEARCH_DISABLED_TOOLS", ""))
    if enabled and disabled:
        raise ConfigError("set BRAVE_SEARCH_ENABLED_TOOLS or BRAVE_SEARCH_DISABLED_TOOLS, not both")
    for name, names in (("BRAVE_SEARCH_ENABLED_TOOLS", enabled), ("BRAVE_SEARCH_DISABLED_TOOLS", disabled)):
        unknown = [n for n in names if n not in TOOL_NAMES]
        if unknown:
            raise ConfigError(f"{name} names unknown tools {unknown}; known: {', '.join(TOOL_NAMES)}")
    if enabled:
        return tuple(n for n in TOOL_NAMES if n in enabled)
    selected = tuple(n for n in TOOL_NAMES if n not in disabled)
    if not selected:
        raise ConfigError("BRAVE_SEARCH_DISABLED_TOOLS disables every tool")
    return selected
