"""Settings: key lookup order, every knob validated with an error that names its variable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from brave_search_mcp.config import DEFAULT_BASE_URL, ConfigError, Settings
from brave_search_mcp.config_sources import OFFICIAL_TOOLS
from brave_search_mcp.tools.registry import all_tools, enabled_tools

TOOL_NAMES = tuple(tool.name for tool in all_tools())


def test_defaults_without_any_environment() -> None:
    settings = Settings.from_env({})
    assert settings.api_key is None
    assert settings.api_key_source is None
    assert not settings.has_key
    assert settings.base_url == DEFAULT_BASE_URL
    assert (settings.timeout_seconds, settings.retries, settings.retry_base_ms, settings.retry_max_ms) == (
        15.0,
        3,
        250,
        5000,
    )
    assert settings.rate_limit is None
    assert settings.adaptive_rate
    assert (settings.cache_ttl_seconds, settings.max_lines, settings.max_bytes) == (300.0, 120, 32 * 1024)
    assert tuple(tool.name for tool in enabled_tools(settings)) == TOOL_NAMES


def test_key_lookup_order(tmp_path: Path) -> None:
    """The registered key file wins: a stale key left in a shell must not silently beat it."""
    key_file = tmp_path / "key"
    key_file.write_text("  from-file-key\n")
    env = {"BRAVE_SEARCH_API_KEY": "first", "BRAVE_API_KEY": "second", "BRAVE_API_KEY_FILE": str(key_file)}
    s = Settings.from_env(env)
    assert s.api_key is not None
    assert (s.api_key.get_secret_value(), s.api_key_source) == ("from-file-key", "BRAVE_API_KEY_FILE")
    del env["BRAVE_API_KEY_FILE"]
    s = Settings.from_env(env)
    assert s.api_key is not None
    assert (s.api_key.get_secret_value(), s.api_key_source) == ("first", "BRAVE_SEARCH_API_KEY")
    del env["BRAVE_SEARCH_API_KEY"]
    s = Settings.from_env(env)
    assert s.api_key is not None
    assert (s.api_key.get_secret_value(), s.api_key_source) == ("second", "BRAVE_API_KEY")


def test_blank_key_variables_fall_through() -> None:
    s = Settings.from_env({"BRAVE_SEARCH_API_KEY": "  ", "BRAVE_API_KEY": "real"})
    assert s.api_key_source == "BRAVE_API_KEY"


def test_key_never_shows_in_repr() -> None:
    s = Settings.from_env({"BRAVE_SEARCH_API_KEY": "super-secret-fake-key"})
    assert "super-secret-fake-key" not in repr(s)
    assert "super-secret-fake-key" not in s.model_dump_json()


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "empty file"), ("two words\n", "alone on one line")],
)
def test_bad_key_file_contents(tmp_path: Path, content: str, message: str) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(content)
    with pytest.raises(ConfigError, match=message) as info:
        Settings.from_env({"BRAVE_API_KEY_FILE": str(key_file)})
    assert "BRAVE_API_KEY_FILE" in str(info.value)


def test_missing_key_file_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="BRAVE_API_KEY_FILE"):
        Settings.from_env({"BRAVE_API_KEY_FILE": str(tmp_path / "absent")})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BRAVE_SEARCH_TIMEOUT_SECONDS", "soon"),
        ("BRAVE_SEARCH_TIMEOUT_SECONDS", "0"),
        ("BRAVE_SEARCH_RETRIES", "11"),
        ("BRAVE_SEARCH_RETRIES", "2.5"),
        ("BRAVE_SEARCH_RATE_LIMIT", "nan"),
        ("BRAVE_SEARCH_BURST", "0"),
        ("BRAVE_SEARCH_CACHE_TTL_SECONDS", "-1"),
        ("BRAVE_SEARCH_CACHE_SIZE", "lots"),
        ("BRAVE_SEARCH_MAX_LINES", "19"),
        ("BRAVE_SEARCH_MAX_BYTES", "100000"),
        ("BRAVE_SEARCH_MAX_RESPONSE_BYTES", "10"),
        ("BRAVE_SEARCH_LOG_LEVEL", "chatty"),
        ("BRAVE_SEARCH_LOG_FORMAT", "xml"),
        ("BRAVE_SEARCH_BASE_URL", "ftp://example.com"),
        ("BRAVE_SEARCH_DEADLINE_SECONDS", "0"),
        ("BRAVE_SEARCH_SUMMARIZER_DEADLINE_SECONDS", "1000"),
    ],
)
def test_invalid_values_fail_fast_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({name: value})
    assert name in str(info.value)


def test_valid_overrides_are_applied() -> None:
    s = Settings.from_env(
        {
            "BRAVE_SEARCH_BASE_URL": "http://127.0.0.1:8787/",
            "BRAVE_SEARCH_RATE_LIMIT": "20",
            "BRAVE_SEARCH_BURST": "5",
            "BRAVE_SEARCH_LOG_LEVEL": "debug",
            "BRAVE_SEARCH_LOG_FORMAT": "TEXT",
            "BRAVE_SEARCH_MAX_LINES": "300",
        }
    )
    assert s.base_url == "http://127.0.0.1:8787"
    assert (s.rate_limit, s.burst, s.adaptive_rate) == (20.0, 5, False)
    assert (s.log_level, s.log_format, s.max_lines) == ("DEBUG", "text", 300)


def test_retry_base_may_not_exceed_the_cap() -> None:
    with pytest.raises(ConfigError, match="BRAVE_SEARCH_RETRY_BASE_MS"):
        Settings.from_env({"BRAVE_SEARCH_RETRY_BASE_MS": "6000", "BRAVE_SEARCH_RETRY_MAX_MS": "5000"})


def test_tool_selection() -> None:
    def names(env: dict[str, str]) -> tuple[str, ...]:
        return tuple(tool.name for tool in enabled_tools(Settings.from_env(env)))

    assert names({"BRAVE_SEARCH_ENABLED_TOOLS": "brave_web_search_help, brave_web_search"}) == (
        "brave_web_search",
        "brave_web_search_help",
    )
    assert "brave_summarizer" not in names({"BRAVE_SEARCH_DISABLED_TOOLS": "brave_summarizer"})
    with pytest.raises(ConfigError, match="not both"):
        Settings.from_env({"BRAVE_SEARCH_ENABLED_TOOLS": "brave_web_search", "BRAVE_SEARCH_DISABLED_TOOLS": "x"})
    with pytest.raises(ConfigError, match="BRAVE_SEARCH_ENABLED_TOOLS names unknown tools"):
        names({"BRAVE_SEARCH_ENABLED_TOOLS": "brave_no_such_tool"})
    with pytest.raises(ConfigError, match="every tool"):
        names({"BRAVE_SEARCH_DISABLED_TOOLS": " ".join(TOOL_NAMES)})


@pytest.mark.parametrize(
    ("field", "value", "variable"),
    [
        ("timeout_seconds", -1, "BRAVE_SEARCH_TIMEOUT_SECONDS"),
        ("retries", 11, "BRAVE_SEARCH_RETRIES"),
        ("cache_size", -5, "BRAVE_SEARCH_CACHE_SIZE"),
        ("max_lines", 5, "BRAVE_SEARCH_MAX_LINES"),
        ("base_url", "ftp://example.com", "BRAVE_SEARCH_BASE_URL"),
        ("log_level", "LOUD", "BRAVE_SEARCH_LOG_LEVEL"),
    ],
)
def test_out_of_range_values_given_directly_name_their_variable(field: str, value: object, variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        Settings(**{field: value})


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("BSA\u200bkey", "non-ASCII"),
        ("\u201cBSAkey\u201d", "non-ASCII"),
        ("BSA key", "white space"),
        ("BSA\x07key", "control"),
    ],
)
def test_a_key_that_cannot_travel_in_a_header_is_refused_naming_its_source(tmp_path: Path, key: str, why: str) -> None:
    with pytest.raises(ConfigError, match=f"BRAVE_SEARCH_API_KEY.*{why}") as caught:
        Settings.from_env({"BRAVE_SEARCH_API_KEY": key})
    assert key not in str(caught.value)
    key_file = tmp_path / "key"
    key_file.write_text(key.replace(" ", "") + "\n" if why != "white space" else "BSA\u00a0key\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="BRAVE_API_KEY_FILE"):
        Settings.from_env({"BRAVE_API_KEY_FILE": str(key_file)})


def test_surrounding_whitespace_and_a_trailing_newline_in_a_key_file_are_stripped(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("  BSAgood-key-123\r\n\n", encoding="utf-8")
    settings = Settings.from_env({"BRAVE_API_KEY_FILE": str(key_file)})
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "BSAgood-key-123"


def _store_default_key(home: Path, key: str = "stored-key") -> Path:
    """What scripts/register-mcp.sh leaves behind: the key alone in ~/.config/brave-search-mcp/api-key, 0600."""
    key_file = home / ".config" / "brave-search-mcp" / "api-key"
    key_file.parent.mkdir(parents=True)
    key_file.write_text(key + "\n", encoding="utf-8")
    key_file.chmod(0o600)
    return key_file


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process as a user with a home of their own, no XDG_CONFIG_HOME and nothing of ours exported."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for name in list(os.environ):
        if name.startswith("BRAVE_"):
            monkeypatch.delenv(name)
    return tmp_path


def test_the_default_key_file_is_found_last_with_nothing_exported(user: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37: the key the register script stored is found with nothing exported; every explicit setting wins."""
    key_file = _store_default_key(user)
    s = Settings.from_env()
    assert s.api_key is not None and s.api_key.get_secret_value() == "stored-key"
    assert (s.api_key_source, s.api_key_file, s.key_file_default) == ("default_key_file", str(key_file), str(key_file))
    for name, value in (("BRAVE_API_KEY", "env-key"), ("BRAVE_SEARCH_API_KEY", "env-key")):
        with monkeypatch.context() as patch:
            patch.setenv(name, value)
            s = Settings.from_env()
        assert (s.api_key and s.api_key.get_secret_value(), s.api_key_source, s.api_key_file) == (value, name, None)
    other = user / "other"
    other.write_text("file-key\n", encoding="utf-8")
    monkeypatch.setenv("BRAVE_API_KEY_FILE", str(other))
    s = Settings.from_env()
    assert (s.api_key and s.api_key.get_secret_value(), s.api_key_source) == ("file-key", "BRAVE_API_KEY_FILE")


def test_the_default_key_file_follows_xdg_config_home_and_a_given_mapping_has_none(
    user: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _store_default_key(user)  # ignored: XDG_CONFIG_HOME moves the config folder
    config = user / "xdg"
    (config / "brave-search-mcp").mkdir(parents=True)
    (config / "brave-search-mcp" / "api-key").write_text("xdg-key\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    s = Settings.from_env()
    assert s.api_key is not None and s.api_key.get_secret_value() == "xdg-key"
    # a mapping of its own (tests, embedders): exactly the key it holds, never the stored one
    assert (Settings.from_env({}).api_key, Settings.from_env({}).key_file_default) == (None, None)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user / "nobody"))
    assert Settings.from_env().api_key is None  # no file: no key, no error


def test_a_broken_default_key_file_is_a_configuration_error_naming_the_file(user: Path) -> None:
    key_file = _store_default_key(user, "two words")
    with pytest.raises(ConfigError, match=f"the default key file {key_file} must hold the key alone"):
        Settings.from_env()
    key_file.write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="empty file"):
        Settings.from_env()


def test_brave_official_servers_variables_are_honoured_when_ours_are_not_set() -> None:
    """Issue 37 item 8: a user moving from @brave/brave-search-mcp-server keeps their variables."""
    s = Settings.from_env(
        {"BRAVE_MCP_TRANSPORT": "HTTP", "BRAVE_MCP_PORT": "8094", "BRAVE_MCP_HOST": "127.0.0.2",
         "BRAVE_MCP_LOG_LEVEL": "notice", "BRAVE_MCP_ALLOWED_HOSTS": "mcp.example"}
    )  # fmt: skip
    assert (s.transport, s.http_port, s.http_host, s.log_level, s.allowed_hosts) == (
        "http",
        8094,
        "127.0.0.2",
        "INFO",
        ("mcp.example",),
    )
    assert s.notes == ()
    enabled = Settings.from_env({"BRAVE_MCP_ENABLED_TOOLS": "brave_news_search brave_image_search brave_answers"})
    assert enabled.enabled_tools == ("brave_web_search", "brave_answer")
    assert [t.name for t in enabled_tools(enabled)] == ["brave_web_search", "brave_answer"]


@pytest.mark.parametrize("variable", ["BRAVE_MCP_ENABLED_TOOLS", "BRAVE_MCP_DISABLED_TOOLS"])
def test_a_misspelt_official_tool_is_refused_naming_the_official_variable_and_its_names(variable: str) -> None:
    settings = Settings.from_env({variable: "brave_web_serch"})
    with pytest.raises(ConfigError) as info:
        enabled_tools(settings)
    message = str(info.value)
    assert message.startswith(f"{variable} names unknown tools ['brave_web_serch']; it takes the official")
    assert "BRAVE_SEARCH_" not in message
    assert all(theirs in message for theirs in ("brave_news_search", "brave_place_search", "brave_answers"))
    assert "read_url" in message  # ours are accepted there too


def test_disabling_some_of_the_official_tools_one_of_ours_serves_keeps_ours_with_a_note() -> None:
    s = Settings.from_env({"BRAVE_MCP_DISABLED_TOOLS": "brave_news_search,brave_summarizer"})
    assert s.disabled_tools == ("brave_summarizer",)
    assert s.notes == (
        "BRAVE_MCP_DISABLED_TOOLS: brave_news_search stays available: our brave_web_search also serves "
        "brave_web_search, brave_image_search, brave_video_search (list them all to disable it)",
    )
    every_search = "brave_web_search brave_news_search brave_image_search brave_video_search"
    assert Settings.from_env({"BRAVE_MCP_DISABLED_TOOLS": every_search}).disabled_tools == ("brave_web_search",)


def test_ours_win_over_theirs_and_over_the_key_flag_with_a_note() -> None:
    s = Settings.from_env({"BRAVE_SEARCH_PORT": "9000", "BRAVE_MCP_PORT": "8094"})
    assert s.http_port == 9000
    assert s.notes == ("BRAVE_MCP_PORT is ignored: BRAVE_SEARCH_PORT is set too (ours wins when both are set)",)
    flagged = Settings.from_env({"BRAVE_MCP_PORT": "8094"}, flags={"http_port": 9001})
    assert flagged.http_port == 9001 and "its command-line option" in flagged.notes[0]
    keyed = Settings.from_env({"BRAVE_API_KEY": "env-key"}, flags={"brave_api_key": "flag-key"})
    assert keyed.api_key is not None and keyed.api_key.get_secret_value() == "env-key"
    assert keyed.notes == (
        "--brave-api-key is ignored: the key from BRAVE_API_KEY is used (it wins when both are set)",
    )
    only_flag = Settings.from_env({}, flags={"brave_api_key": "flag-key"})
    assert (only_flag.api_key_source, only_flag.api_key and only_flag.api_key.get_secret_value()) == (
        "--brave-api-key",
        "flag-key",
    )


def test_a_bad_official_value_names_the_variable_the_user_set() -> None:
    with pytest.raises(ConfigError, match=r"BRAVE_MCP_PORT \(read as BRAVE_SEARCH_PORT\)"):
        Settings.from_env({"BRAVE_MCP_PORT": "eighty"})
    with pytest.raises(ConfigError, match=r"--brave-api-key.*white space"):
        Settings.from_env({}, flags={"brave_api_key": "two words"})


def test_every_official_tool_maps_to_a_tool_of_the_registry() -> None:
    """The official-name map sits below the registry (settings are read before any tool exists): this holds it to
    the names the slices give their tools."""
    registered = {tool.name for tool in all_tools()}
    assert {ours for ours, _ in OFFICIAL_TOOLS.values()} <= registered
