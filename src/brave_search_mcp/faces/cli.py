"""Command line: serve stdio (the default), or search, summarize and check status from a terminal.

Exit codes: 0 success, 1 an error envelope (explained on stderr), 2 usage or configuration errors.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import sys
import uuid
from collections.abc import Sequence
from functools import partial
from typing import Any, TextIO

import anyio

from brave_search_mcp._version import __version__
from brave_search_mcp.compose import open_tools
from brave_search_mcp.config import ConfigError, Settings
from brave_search_mcp.config_sources import key_origin, missing_key_advice
from brave_search_mcp.faces.commands import add_tool_commands, cli_output, command_spec, skill_modes, tool_arguments
from brave_search_mcp.logs import PACKAGE_LOGGER, configure_logging
from brave_search_mcp.models.errors import ErrorCode, InvalidArgument
from brave_search_mcp.tools.boundary import ToolOutcome, error_outcome
from brave_search_mcp.tools.help import EXAMPLES as HELP_EXAMPLES
from brave_search_mcp.tools.registry import all_tools, enabled_tools

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def missing_key_line(settings: Settings) -> str:
    """The one line a CLI call without a key prints: how to set one, the default key file named."""
    return (
        f"brave-search-mcp: no Brave API key configured - {missing_key_advice(settings.key_file_default)}; "
        "get a key at https://api-dashboard.search.brave.com"
    )


EXAMPLES: tuple[tuple[str, str], ...] = (
    ("brave-search-mcp", "serve MCP on stdio (register it with your agent)"),
    ("brave-search-mcp --transport http --port 8080", "serve MCP over HTTP for many agents"),
    ('brave-search-mcp search "rust async traits" --count 5', "five results, web first"),
    ('brave-search-mcp search "eu ai act" --type news --freshness pw --json', "this week's news, as JSON"),
    ('brave-search-mcp context "tokio select cancellation" --max-chars 4000', "grounding passages"),
    ('brave-search-mcp local coffee --location "berlin germany"', "places"),
    ('brave-search-mcp answer "what changed in python 3.13?"', "a cited AI answer"),
    ("brave-search-mcp status --probe", "key, limits, and one request per search endpoint"),
    ("brave-search-mcp skill install", "the agent skill for Claude Code and Codex"),
    ("brave-search-mcp uninstall", "remove the registrations and the skill (the key file stays)"),
)


def _epilog() -> str:
    """The examples (each command's own are in its --help), then where the key and the settings come from."""
    width = max(len(command) for command, _ in EXAMPLES)
    lines = [f"  {command:<{width}}  # {why}" for command, why in EXAMPLES]
    return "\n".join(
        ["examples:", *lines, "", "each command's --help has its own examples (search --help, read --help, ...).",
         "key: BRAVE_API_KEY_FILE, BRAVE_SEARCH_API_KEY or BRAVE_API_KEY, else the key file the register script",
         "writes (~/.config/brave-search-mcp/api-key); all settings: see the README."]
    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """All subcommands; no subcommand means ``serve``."""
    parser = argparse.ArgumentParser(
        prog="brave-search-mcp",
        description="Brave Search MCP server and command line. With no command, serves MCP on stdio.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve_parser = sub.add_parser("serve", help="run the MCP server (stdio by default; the default command)")
    for target in (parser, serve_parser):
        target.add_argument("--transport", choices=["stdio", "http"], help="stdio (default) or streamable HTTP")
        target.add_argument("--host", dest="http_host", help="HTTP: address to bind (default 127.0.0.1)")
        target.add_argument("--port", dest="http_port", type=int, help="HTTP: port (default 8080)")
        target.add_argument(
            "--ui", action="store_true", default=None, help="serve MCP Apps widgets to hosts that show them"
        )
        target.add_argument(
            "--brave-api-key",
            metavar="KEY",
            help="the API key, as Brave's official server takes it (ps shows it: prefer a key file)",
        )

    add_tool_commands(sub, all_tools(), HELP_EXAMPLES)
    skill = sub.add_parser(
        "skill",
        help="agent-skill entry: JSON in, JSON {ok: ...} out; 'skill install' installs the skill",
        description="Run one tool with JSON arguments (MODE is a tool command), or 'skill install [--help]'.",
    )
    skill.add_argument("mode", choices=[*skill_modes(all_tools()), "install"], metavar="MODE|install",
                       help=f"one of {', '.join(skill_modes(all_tools()))}; or install")  # fmt: skip
    skill.add_argument("--params-json", required=True, help="tool arguments as a JSON object")
    sub.add_parser(
        "uninstall",
        help="remove the Codex and Claude Code registrations and the skill ('uninstall --help')",
        add_help=False,
    )  # run before this parser (see main), like `skill install`: listed here for --help
    return parser


async def run_tool(
    settings: Settings, tool: str, arguments: dict[str, Any], progress_to: TextIO | None = None
) -> ToolOutcome:
    """One tool call through a fresh client, exactly as the MCP server would run it (progress on a TTY only)."""

    async def show(done: float, total: float | None, message: str | None) -> None:
        assert progress_to is not None
        share = f" {done / total:.0%}" if total else ""
        progress_to.write(f"\r\x1b[K… {message or 'working'}{share}")
        progress_to.flush()

    live = progress_to is not None and progress_to.isatty()
    async with open_tools(settings) as tools:
        outcome = await tools.call(tool, arguments, progress=show if live else None)
    if live and progress_to is not None:
        progress_to.write("\r\x1b[K")
    return outcome


def _print_outcome(outcome: ToolOutcome, ns: argparse.Namespace, out: TextIO, err: TextIO, settings: Settings) -> int:
    """The envelope (--json) or the text, in the command line's words (``--start-char 3857``, not MCP's)."""
    spec = command_spec(all_tools(), ns.command)
    assert spec is not None
    if ns.json:
        out.write(json.dumps(outcome.structured, ensure_ascii=False, indent=2) + "\n")
    text = cli_output(outcome.text, spec, all_tools(), error=outcome.is_error)
    if outcome.is_error:
        code = outcome.structured.get("error", {}).get("code")
        err.write((missing_key_line(settings) if code == ErrorCode.MISSING_API_KEY else text) + "\n")
        return EXIT_ERROR
    if not ns.json:
        out.write(text + "\n")
    return EXIT_OK


def _skill(settings: Settings, ns: argparse.Namespace, out: TextIO) -> int:
    spec = command_spec(all_tools(), ns.mode)
    assert spec is not None  # argparse allowed only the registry's modes
    tool = spec.name
    try:
        arguments = json.loads(ns.params_json)
        if not isinstance(arguments, dict):
            raise ValueError("not an object")
    except ValueError as exc:
        bad = InvalidArgument(f"--params-json must be a JSON object ({exc})", field="params_json")
        envelope = error_outcome(tool, bad, uuid.uuid4().hex[:16]).structured  # like every other error
        out.write(json.dumps({"ok": False, "error": envelope}) + "\n")
        return EXIT_USAGE
    outcome = anyio.run(run_tool, settings, tool, arguments)
    body = {"ok": not outcome.is_error, ("error" if outcome.is_error else "result"): outcome.structured}
    out.write(json.dumps(body, ensure_ascii=False) + "\n")
    return EXIT_ERROR if outcome.is_error else EXIT_OK


# --- `skill install` (install path; kept apart so the parser above stays as it is) -------------------


def _is_skill_install(argv: Sequence[str] | None) -> bool:
    """Whether the command line is ``skill install ...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    return args[:2] == ["skill", "install"]


def _uninstall(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    """Remove the registrations and the skill (see uninstall.py); like ``skill install``, it needs no settings."""
    from brave_search_mcp.faces.uninstall import run_uninstall

    args = list(sys.argv[1:] if argv is None else argv)
    return run_uninstall(args[1:], out, err)


def _skill_install(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    """Install the packaged skill for Claude Code and Codex (see skill_install.py)."""
    from brave_search_mcp.faces.skill_install import run_install_command

    args = list(sys.argv[1:] if argv is None else argv)
    return run_install_command(args[2:], out, err)


def startup_line(settings: Settings, port: int | None = None) -> str:
    """The one line a person starting the server by hand reads: who, what, which key source, which tools."""
    key = f"key from {key_origin(settings.api_key_source, settings.api_key_file)}"
    if not settings.has_key:
        key = "no key: set BRAVE_API_KEY (or see --help)"
    if "brave" not in settings.providers:
        key = "no Brave key needed"
    if tuple(settings.providers) != ("brave",):
        key += f" · providers: {', '.join(settings.providers)}"
    bound = settings.http_port if port is None else port
    where = "stdio" if settings.transport == "stdio" else f"http://{settings.http_host}:{bound}/mcp"
    tools = ", ".join(tool.name for tool in enabled_tools(settings))
    return f"brave-search-mcp {__version__} · {where} · {key} · tools: {tools}"


def _announce(settings: Settings, err: TextIO, port: int | None = None) -> None:
    """Write the start line: plain words for a person at a terminal, else a JSON log record for the host's log."""
    line = startup_line(settings, port)
    if err.isatty():
        err.write(line + "\n")
        err.flush()
    else:
        logging.getLogger(PACKAGE_LOGGER).info(line, extra={"event": "start", "transport": settings.transport})


def _serve_http(settings: Settings, err: TextIO) -> int:
    """Check the HTTP options, listen, and only then announce the address (the port actually bound)."""
    from brave_search_mcp.faces.http import HttpOptions, serve_http
    from brave_search_mcp.faces.mcp_server import build_server
    from brave_search_mcp.faces.metrics import http_observer

    token = settings.http_token.get_secret_value() if settings.http_token is not None else None
    try:
        options = HttpOptions(
            host=settings.http_host,
            port=settings.http_port,
            token=token,
            allowed_hosts=settings.allowed_hosts,
            max_body_bytes=settings.http_max_body_bytes,
            max_in_flight=settings.http_max_in_flight,
            metrics_token=settings.metrics_token.get_secret_value() if settings.metrics_token is not None else None,
        )
    except ValueError as exc:
        err.write(f"brave-search-mcp: configuration error: {exc}\n")
        return EXIT_USAGE

    def ready(port: int) -> None:
        _announce(settings, err, port)

    observer = http_observer(settings)  # /metrics, and traces when OTEL_* asks for them
    server = build_server(settings, observer=observer)
    _leave_startup_out_of_collections()
    try:
        anyio.run(partial(serve_http, server, options, ready=ready, metrics=observer))
    except OSError as exc:  # the port is taken or the address is not this machine's: one line, no traceback
        err.write(f"brave-search-mcp: {exc.strerror or exc}\n")
        return EXIT_ERROR
    finally:
        observer.close()
    return EXIT_OK


GC_YOUNG_THRESHOLD = 10_000  # allocations between two young-generation collections while serving (700 by default)


def _warn_about_settings(settings: Settings) -> None:
    """Settings given twice (ours and Brave's official server's): which one was ignored, on stderr."""
    for note in settings.notes:
        logging.getLogger(PACKAGE_LOGGER).warning(note, extra={"event": "settings"})


def serve(settings: Settings, err: TextIO) -> int:
    """Run the MCP server on its transport until its client goes away or a signal stops it."""
    configure_logging(settings)
    _warn_about_settings(settings)
    if settings.transport == "http":
        return _serve_http(settings, err)
    from brave_search_mcp.faces.mcp_server import build_server  # the MCP SDK is only imported when serving

    _announce(settings, err)
    if err.isatty() and sys.stdin.isatty():
        err.write("Waiting for an MCP client on stdin (register this command with your agent; Ctrl-C to stop).\n")
    err.flush()
    from brave_search_mcp.faces.stdio import (
        run_stdio,  # bad lines get error replies; SIGINT/SIGTERM/EOF end it within 2 s
    )
    from brave_search_mcp.observe import Observer
    from brave_search_mcp.tracing import open_spans  # imports OpenTelemetry's SDK only when OTEL_* asks for traces

    observer = Observer(open_spans(settings))
    server = build_server(settings, observer=observer)
    _leave_startup_out_of_collections()
    try:
        return run_stdio(server)
    finally:
        observer.close()


def _leave_startup_out_of_collections() -> None:
    """What is imported and built before serving lives as long as the process (the SDK's and pydantic's models,
    the tool schemas): move it out of the garbage collector's full passes, which otherwise walk it all and stop the
    server for about 70 ms every few hundred calls (issue 22 item 3). And collect the young generation every
    ``GC_YOUNG_THRESHOLD`` allocations instead of 700: a call's own objects (a decoded page, its models) are then
    mostly gone before a collection walks them, 4-7 % of a cache miss's CPU (nothing here builds reference cycles
    that would wait longer for it)."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Entry point of the ``brave-search-mcp`` console script."""
    out, err = out or sys.stdout, err or sys.stderr
    if _is_skill_install(argv):  # `skill install` needs no settings or key: dispatched before them
        return _skill_install(argv, out, err)
    if list(sys.argv[1:] if argv is None else argv)[:1] == ["uninstall"]:
        return _uninstall(argv, out, err)
    ns = build_parser().parse_args(argv)
    command = ns.command or "serve"
    try:
        # Commands other than serve log only warnings unless BRAVE_SEARCH_LOG_LEVEL says otherwise.
        names = ("transport", "http_host", "http_port", "ui", "brave_api_key")
        flags = {name: getattr(ns, name, None) for name in names}
        defaults = {} if command == "serve" else {"log_level": "WARNING"}
        if err.isatty():  # a person reads stderr: the start line is words, so is every line after it (Ctrl-C's)
            defaults["log_format"] = "text"
        settings = Settings.from_env(defaults=defaults, flags=flags)
        enabled_tools(settings)
    except ConfigError as exc:
        err.write(f"brave-search-mcp: configuration error: {exc}\n")
        return EXIT_USAGE
    if command == "serve":
        return serve(settings, err)
    configure_logging(settings, err)
    _warn_about_settings(settings)
    try:
        if command == "skill":
            return _skill(settings, ns, out)
        spec = command_spec(all_tools(), command)
        assert spec is not None  # argparse allowed only the registry's commands
        outcome = anyio.run(run_tool, settings, spec.name, tool_arguments(spec, ns), err)
        return _print_outcome(outcome, ns, out, err, settings)
    except KeyboardInterrupt:
        err.write("brave-search-mcp: interrupted\n")
        return 130
