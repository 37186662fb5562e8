"""Every setting the server, CLI and library obey, read from the environment in one place.

``Settings`` is a pydantic model whose fields carry their bounds and their environment variable as
alias, so ``Settings(timeout_seconds=-1)`` and ``BRAVE_SEARCH_TIMEOUT_SECONDS=-1`` fail alike with a
``ConfigError`` naming the variable. No other module reads ``os.environ``. The API key is held as a
``SecretStr`` and only its *source* is ever reported; the key file (what the registration scripts
write) wins over a key in the environment, so a stale key in a shell cannot beat the registered one, and
the default key file (where ``scripts/register-mcp.sh`` stores it) is found with nothing exported. Where that
file, the state and the cache live is ``user_files.py``'s (platformdirs' folders).
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from brave_search_mcp.config_sources import OFFICIAL_VARIABLES, KeySource, lookup_key, official_settings
from brave_search_mcp.config_sources import ConfigError as ConfigError  # re-exported: every face catches it here
from brave_search_mcp.config_sources import key_problem as key_problem
from brave_search_mcp.user_files import default_cache_path, default_key_path, default_state_path, playwright_cache_dir

DEFAULT_BASE_URL = "https://api.search.brave.com"

# Per-call output clamps (DESIGN.md): the defaults below must lie inside them.
MIN_MAX_LINES, MAX_MAX_LINES = 20, 300
MIN_MAX_BYTES, MAX_MAX_BYTES = 4 * 1024, 96 * 1024
DEBUG_PAYLOAD_CAP_BYTES = 64 * 1024

# read_url (reader/): an operator's opt-in entry is a host name, "*.suffix", an IP address or a CIDR block.
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_NAME = re.compile(rf"(?:\*\.)?{_LABEL}(?:\.{_LABEL})*\.?")

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LogFormat = Literal["json", "text"]


def _names(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(part for part in value.replace(",", " ").split() if part)
    return value


class Settings(BaseModel):
    """Effective configuration; build with ``Settings.from_env()`` or directly (tests, the library)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    api_key: SecretStr | None = None
    api_key_source: KeySource | None = None
    api_key_file: str | None = None  # the file the key was read from (either key file)
    key_file_default: str | None = None  # where the default key file is looked for (user_files.default_key_path)
    notes: tuple[str, ...] = ()  # what start-up should warn about: values given twice, the official server's ignored
    read_from: dict[str, str] = Field(default_factory=dict)  # ours -> the official variable set (for messages)
    base_url: str = Field(DEFAULT_BASE_URL, alias="BRAVE_SEARCH_BASE_URL", min_length=9)
    timeout_seconds: float = Field(15.0, alias="BRAVE_SEARCH_TIMEOUT_SECONDS", ge=0.01, le=300.0)
    call_deadline_seconds: float = Field(60.0, alias="BRAVE_SEARCH_DEADLINE_SECONDS", ge=0.01, le=3600.0)
    retries: int = Field(3, alias="BRAVE_SEARCH_RETRIES", ge=0, le=10)
    retry_base_ms: int = Field(250, alias="BRAVE_SEARCH_RETRY_BASE_MS", ge=1, le=60_000)
    retry_max_ms: int = Field(5000, alias="BRAVE_SEARCH_RETRY_MAX_MS", ge=1, le=300_000)
    # explicit requests/second and burst; None = the plan the shared state learned for this key (a key never
    # seen sends one request alone, then runs at the rate Brave's headers report)
    rate_limit: float | None = Field(None, alias="BRAVE_SEARCH_RATE_LIMIT", ge=0.01, le=1000.0)
    burst: int | None = Field(None, alias="BRAVE_SEARCH_BURST", ge=1, le=1000)
    # spending cap: Brave requests per calendar month (UTC) for this key, across every process; None = no cap
    monthly_requests: int | None = Field(None, alias="BRAVE_SEARCH_MONTHLY_REQUESTS", ge=0, le=1_000_000_000)
    # while Brave says the month's quota is spent, one request goes through this often (a plan upgrade, a reset)
    quota_retry_seconds: float = Field(600.0, alias="BRAVE_SEARCH_QUOTA_RETRY_SECONDS", ge=10.0, le=86_400.0)
    cache_ttl_seconds: float = Field(300.0, alias="BRAVE_SEARCH_CACHE_TTL_SECONDS", ge=0.0, le=86_400.0)
    cache_size: int = Field(256, alias="BRAVE_SEARCH_CACHE_SIZE", ge=0, le=100_000)
    max_response_bytes: int = Field(
        4 * 1024 * 1024, alias="BRAVE_SEARCH_MAX_RESPONSE_BYTES", ge=16 * 1024, le=256 * 1024 * 1024
    )
    max_lines: int = Field(120, alias="BRAVE_SEARCH_MAX_LINES", ge=MIN_MAX_LINES, le=MAX_MAX_LINES)
    max_bytes: int = Field(32 * 1024, alias="BRAVE_SEARCH_MAX_BYTES", ge=MIN_MAX_BYTES, le=MAX_MAX_BYTES)
    summarizer_deadline_seconds: float = Field(20.0, alias="BRAVE_SEARCH_SUMMARIZER_DEADLINE_SECONDS", ge=1.0, le=600.0)
    transport: Literal["stdio", "http"] = Field("stdio", alias="BRAVE_SEARCH_TRANSPORT")
    http_host: str = Field("127.0.0.1", alias="BRAVE_SEARCH_HOST", min_length=1)
    http_port: int = Field(8080, alias="BRAVE_SEARCH_PORT", ge=0, le=65_535)
    http_token: SecretStr | None = Field(None, alias="BRAVE_SEARCH_HTTP_TOKEN")
    allowed_hosts: tuple[str, ...] = Field((), alias="BRAVE_SEARCH_ALLOWED_HOSTS")
    http_max_body_bytes: int = Field(1_048_576, alias="BRAVE_SEARCH_HTTP_MAX_BODY_BYTES", ge=1024, le=64 * 1024 * 1024)
    # /mcp requests served at once; more get 503 + Retry-After. 100 = the connection pool of one httpx-based MCP
    # client, so one busy host never meets it, while buffered bodies stay bounded (100 x the body cap)
    http_max_in_flight: int = Field(100, alias="BRAVE_SEARCH_HTTP_MAX_IN_FLIGHT", ge=1, le=10_000)
    metrics_token: SecretStr | None = Field(None, alias="BRAVE_SEARCH_METRICS_TOKEN")  # /metrics; else the HTTP one
    # traces (the otel extra, tracing.py): the standard variables that switch them on; the OTel SDK reads the rest
    otel_endpoint: str | None = Field(None, alias="OTEL_EXPORTER_OTLP_ENDPOINT")
    otel_traces_endpoint: str | None = Field(None, alias="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    otel_traces_exporter: str | None = Field(None, alias="OTEL_TRACES_EXPORTER")
    otel_sdk_disabled: bool = Field(False, alias="OTEL_SDK_DISABLED")
    otel_service_name: str = Field("brave-search-mcp", alias="OTEL_SERVICE_NAME")
    # search providers in fallback order; SearXNG (self-hosted, free) needs its URL
    providers: tuple[str, ...] = Field(("brave",), alias="BRAVE_SEARCH_PROVIDERS", min_length=1)
    searxng_url: str | None = Field(None, alias="SEARXNG_URL")
    searxng_username: str | None = Field(None, alias="SEARXNG_USERNAME")
    searxng_password: SecretStr | None = Field(None, alias="SEARXNG_PASSWORD")
    searxng_headers: tuple[str, ...] = Field((), alias="SEARXNG_HEADERS")  # "Name: value" entries, ";"-separated
    # a search call's whole time on SearXNG (every page and attempt; waiting for its pace is not counted): a hung
    # instance ends the call within it, so a searxng,brave chain has Brave's answer within about 10 s
    searxng_timeout_seconds: float = Field(8.0, alias="BRAVE_SEARCH_SEARXNG_TIMEOUT_SECONDS", ge=0.5, le=300.0)
    breaker_threshold: int = Field(3, alias="BRAVE_SEARCH_BREAKER_THRESHOLD", ge=1, le=100)
    breaker_cooldown_seconds: float = Field(60.0, alias="BRAVE_SEARCH_BREAKER_COOLDOWN_SECONDS", ge=1.0, le=3600.0)
    # shared state: None = SQLite files shared by all the user's processes, the counters, plans and breakers in
    # their state directory and the response cache in their cache directory; "memory"; "sqlite:///path" (one file
    # holds it all, the cache too); "redis://host:port/db"
    state: str | None = Field(None, alias="BRAVE_SEARCH_STATE")
    # after the shared state fails, calls run on per-process memory this long before it is tried again
    state_retry_seconds: float = Field(5.0, alias="BRAVE_SEARCH_STATE_RETRY_SECONDS", ge=0.05, le=300.0)
    state_default_path: str | None = None  # where None puts the state file (user_files.default_state_path)
    cache_default_path: str | None = None  # where None puts the cache file (user_files.default_cache_path)
    ui: bool = Field(False, alias="BRAVE_SEARCH_UI")  # serve MCP Apps widgets (ui:// resources) to hosts that show them
    log_level: LogLevel = Field("INFO", alias="BRAVE_SEARCH_LOG_LEVEL")
    log_format: LogFormat = Field("json", alias="BRAVE_SEARCH_LOG_FORMAT")
    # tool names are checked against the registry when the tools are selected (tools.enabled_tools)
    enabled_tools: tuple[str, ...] | None = Field(None, alias="BRAVE_SEARCH_ENABLED_TOOLS")
    disabled_tools: tuple[str, ...] = Field((), alias="BRAVE_SEARCH_DISABLED_TOOLS")
    # read_url: the page reader's caps, its answer cache, and the hosts an operator lets it reach although
    # they resolve to loopback or private addresses (names, "*.suffix", IPs or CIDRs; nothing by default)
    read_max_bytes: int = Field(5 * 1024 * 1024, alias="BRAVE_SEARCH_READ_MAX_BYTES", ge=64 * 1024, le=64 * 1024 * 1024)
    read_timeout_seconds: float = Field(20.0, alias="BRAVE_SEARCH_READ_TIMEOUT_SECONDS", ge=0.05, le=120.0)
    read_cache_ttl_seconds: float = Field(900.0, alias="BRAVE_SEARCH_READ_CACHE_TTL_SECONDS", ge=0.0, le=86_400.0)
    read_allowed_hosts: tuple[str, ...] = Field((), alias="BRAVE_SEARCH_READ_ALLOWED_HOSTS")
    # app shells are rendered by this Chromium-family executable (a path), none ("off"), or the first one found
    read_browser: str | None = Field(None, alias="BRAVE_SEARCH_READ_BROWSER", min_length=1, max_length=4096)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from None

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("log_format", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("transport", mode="before")
    @classmethod
    def _lower_transport(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("state")
    @classmethod
    def _state_url(cls, value: str | None) -> str | None:
        if value is not None:
            parse_state_url(value)  # raises naming BRAVE_SEARCH_STATE
        return value

    @field_validator("searxng_headers", mode="before")
    @classmethod
    def _header_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(";") if part.strip())
        return value

    @field_validator("searxng_headers")
    @classmethod
    def _header_shape(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            name, colon, _ = entry.partition(":")
            if not colon or not name.strip() or any(ch.isspace() for ch in name.strip()):
                raise ValueError('each header must read "Name: value" (entries separated by ";")')
        return value

    @field_validator("providers", mode="before")
    @classmethod
    def _provider_names(cls, value: Any) -> Any:
        names = _names(value)
        return tuple(name.lower() for name in names) if isinstance(names, tuple) else names

    @field_validator("providers")
    @classmethod
    def _known_providers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [name for name in value if name not in ("brave", "searxng")]
        if unknown or len(set(value)) != len(value):
            raise ValueError(f"must list brave and/or searxng once each, in fallback order; got {list(value)}")
        return value

    @field_validator("enabled_tools", "disabled_tools", "allowed_hosts", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return _names(value)

    @field_validator("read_allowed_hosts", mode="before")
    @classmethod
    def _read_hosts(cls, value: Any) -> Any:
        names = _names(value)
        return tuple(str(name).strip().lower() for name in names) if isinstance(names, tuple | list) else names

    @field_validator("read_allowed_hosts")
    @classmethod
    def _read_host_shape(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            try:
                ipaddress.ip_network(entry.strip("[]"), strict=False)
            except ValueError:
                if not _HOST_NAME.fullmatch(entry):
                    raise ValueError(
                        f"{entry[:60]!r} is neither a host name (or *.suffix) nor an IP address or CIDR block"
                    ) from None
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"must be an http(s) URL such as {DEFAULT_BASE_URL}")
        return value.rstrip("/")

    @field_validator("api_key")
    @classmethod
    def _header_safe(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            problem = key_problem(value.get_secret_value())
            if problem:
                raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if self.retry_base_ms > self.retry_max_ms:
            raise ValueError("BRAVE_SEARCH_RETRY_BASE_MS must not exceed BRAVE_SEARCH_RETRY_MAX_MS")
        if self.enabled_tools and self.disabled_tools:
            raise ValueError("set BRAVE_SEARCH_ENABLED_TOOLS or BRAVE_SEARCH_DISABLED_TOOLS, not both")
        if "searxng" in self.providers and not self.searxng_url:
            raise ValueError("SEARXNG_URL must name the SearXNG instance when BRAVE_SEARCH_PROVIDERS lists searxng")
        if self.searxng_url and not self.searxng_url.startswith(("http://", "https://")):
            raise ValueError("SEARXNG_URL must be an http(s) URL such as http://localhost:8080")
        return self

    @property
    def has_key(self) -> bool:
        """Whether a non-empty key is configured."""
        return self.api_key is not None and bool(self.api_key.get_secret_value())

    @property
    def adaptive_rate(self) -> bool:
        """Whether the throttle may follow the plan limit Brave reports."""
        return self.rate_limit is None

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        defaults: Mapping[str, Any] | None = None,
        flags: Mapping[str, Any] | None = None,
    ) -> Settings:
        """Read and validate every ``BRAVE_*`` variable; raise ``ConfigError`` naming the first bad one.

        ``defaults`` are a face's own defaults that a variable overrides (the CLI logs WARNING unless
        BRAVE_SEARCH_LOG_LEVEL says otherwise); ``flags`` are command-line options, which win over both. The
        default state, cache and key files are this process's (``user_files.py``); an ``env`` mapping given instead of
        the process's environment gets no default key file: tests and embedders get exactly the key they pass.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = dict(defaults or {})
        flags = dict(flags or {})
        key_flag = flags.pop("brave_api_key", None)
        given = {cls.variable_of(name): "its command-line option" for name, v in flags.items() if v is not None}
        official = official_settings(env, given)  # Brave's official server's variables, where ours are not set
        for name, info in cls.model_fields.items():
            alias = info.alias or ""
            raw = env.get(alias) if (env.get(alias) or "").strip() else official.values.get(alias)
            if alias and raw is not None and raw.strip():
                values.pop(name, None)
                values[alias] = raw.strip()
        for name, value in flags.items():
            if value is not None:
                values.pop(cls.variable_of(name), None)
                values[name] = value
        values.setdefault("state_default_path", str(default_state_path()))
        values.setdefault("cache_default_path", str(default_cache_path()))
        default_key = default_key_path() if env is os.environ else None  # a mapping given: exactly what it holds
        values.setdefault("key_file_default", str(default_key) if default_key is not None else None)
        found = lookup_key(env, flag=key_flag, default_file=default_key)
        if found.value is not None:
            values["api_key"], values["api_key_source"] = SecretStr(found.value), found.source
            values["api_key_file"] = str(found.file) if found.file is not None else None
        values["notes"] = (*official.notes, *found.notes)
        values["read_from"] = {ours: theirs for theirs, ours in OFFICIAL_VARIABLES.items() if ours in official.values}
        try:
            return cls(**values)
        except ConfigError as exc:  # name the variable the user set, not the one it was read as
            message = str(exc)
            for theirs, ours in OFFICIAL_VARIABLES.items():
                if ours in official.values:
                    message = message.replace(f"{ours}:", f"{theirs} (read as {ours}):")
            raise ConfigError(message) from None

    @classmethod
    def variable_of(cls, name: str) -> str:
        """The environment variable behind a field, for messages."""
        info = cls.model_fields.get(name)
        return (info.alias if info is not None else None) or name

    def variable_set(self, name: str) -> str:
        """The variable the user set for a field: ours, or the official server's it was read from, for messages."""
        return self.read_from.get(self.variable_of(name), self.variable_of(name))


def _explain(exc: ValidationError) -> str:
    """One line per problem, each naming the environment variable (never echoing a key)."""
    parts: list[str] = []
    for err in exc.errors(include_url=False)[:5]:
        loc = err.get("loc", ())
        field = str(loc[0]) if loc else ""
        name = Settings.variable_of(field) if field else ""
        message = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        if field in ("api_key", "api_key_source"):
            parts.append(f"the API key: {message}")
            continue
        raw = err.get("input")
        shown = f", got {str(raw)[:40]!r}" if isinstance(raw, str | int | float) and field else ""
        parts.append(f"{name}: {message}{shown}" if name else message)
    return "; ".join(parts) or "invalid settings"


@dataclass(frozen=True)
class StateLocation:
    """A parsed state URL: which backend, and its file or server."""

    kind: str  # "memory" | "sqlite" | "redis"
    path: Path | None = None  # sqlite; None = the default files
    url: str | None = None  # redis


def playwright_browsers_dir(*, platform: str = sys.platform) -> Path:
    """Where ``playwright install`` puts browsers: PLAYWRIGHT_BROWSERS_PATH, else ms-playwright in the user's cache."""
    named = os.environ.get("PLAYWRIGHT_BROWSERS_PATH", "")
    return Path(named) if named and Path(named).is_absolute() else playwright_cache_dir(platform=platform)


def client_config_files() -> tuple[Path, Path]:
    """Where Codex and Claude Code keep their MCP servers (CODEX_HOME, CLAUDE_CONFIG_DIR), for uninstall."""
    codex, claude = os.environ.get("CODEX_HOME") or Path.home() / ".codex", os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(codex) / "config.toml", Path(claude or Path.home()) / ".claude.json"


def parse_state_url(url: str | None) -> StateLocation:
    """Validate ``BRAVE_SEARCH_STATE``; ValueError names the variable and the accepted forms."""
    if url is None or not url.strip():
        return StateLocation("sqlite")
    text = url.strip()
    if text == "memory":
        return StateLocation("memory")
    parts = urlsplit(text)
    if parts.scheme == "sqlite":
        if parts.netloc:
            raise ValueError(
                f"BRAVE_SEARCH_STATE: sqlite URLs take an absolute path (sqlite:///abs/path), got {text!r}"
            )
        if not parts.path:
            return StateLocation("sqlite")
        path = Path(parts.path if not parts.path.startswith("//") else "/" + parts.path.lstrip("/"))
        if not path.is_absolute():
            raise ValueError(f"BRAVE_SEARCH_STATE: sqlite path must be absolute, got {text!r}")
        return StateLocation("sqlite", path=path)
    if parts.scheme in ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster"):
        if parts.scheme != "unix" and not parts.hostname:
            raise ValueError("BRAVE_SEARCH_STATE: a redis URL needs a host (redis://host:port/db)")
        return StateLocation("redis", url=text)
    raise ValueError(
        "BRAVE_SEARCH_STATE must be 'memory', 'sqlite:///absolute/path', 'redis://host:port/db' or"
        " 'redis+cluster://host:port' (any node of a Redis Cluster)"
        f" (got a value with scheme {parts.scheme or 'none'!r})"
    )
