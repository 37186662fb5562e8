"""Settings for tests and bench: an obviously fake key, a fast explicit rate, tiny retry waits."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from brave_search_mcp.config import Settings
from testkit.brave.brave import VALID_KEY


def make_settings(**overrides: Any) -> Settings:
    """Settings for tests: a fake key, a fast explicit rate, tiny retry waits."""
    values: dict[str, Any] = {
        "api_key": SecretStr(VALID_KEY),
        "api_key_source": "BRAVE_SEARCH_API_KEY",
        "rate_limit": 1000.0,
        "burst": 1000,
        "retry_base_ms": 1,
        "retry_max_ms": 2,
        "timeout_seconds": 5.0,
        "state": "memory",  # per test: nothing shared through the user's cache directory
    }
    values.update(overrides)
    return Settings(**values)
