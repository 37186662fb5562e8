"""Config and backup helpers for the register/uninstall/restore shell scripts (stdlib only, no key ever).

The shell scripts drive the client CLIs (``codex mcp ...``, ``claude mcp ...``); this helper does what
shell does badly: read JSON, write backups byte-for-byte with mode 0600, patch one TOML line, and speak
the MCP stdio handshake to check that a server really starts (``_mcp_smoke.py``). It never receives the
API key: the key file is written by the shell with a builtin, and only its path travels through here.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _mcp_smoke import SmokeError, smoke

BACKUP_FORMAT = "brave-search-mcp-backup"
BACKUP_VERSION = 1
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class HelperError(Exception):
    """A failure the calling script reports to the user verbatim."""


# --------------------------------------------------------------------------------------------- files


def _load_json(path: Path) -> Any:
    """Read a JSON file; a missing file reads as None."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise HelperError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None


def _private_dir(path: Path) -> None:
    """Create a directory only its owner can enter (backups and key files live there)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)


def _write_new_private(directory: Path, stem: str, data: bytes) -> Path:
    """Write data into a new file named after stem (never overwriting one) with mode 0600."""
    _private_dir(directory)
    for attempt in range(1, 1000):
        suffix = "" if attempt == 1 else f"-{attempt}"
        path = directory / f"{stem}{suffix}.json"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(path, 0o600)
        return path
    raise HelperError(f"could not find a free backup file name in {directory}")


def _replace_atomically(path: Path, data: bytes, mode: int) -> None:
    """Replace path with data in one rename, so a crash never leaves half a config."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _timestamp() -> str:
    """UTC time for file names and records (sortable, no colons)."""
    now = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1_000_000):06d}Z"


# --------------------------------------------------------------------------------------------- claude


def _claude_servers(config: Path, scope: str, project: str) -> dict[str, Any] | None:
    """The mcpServers table of one Claude scope (None when the file or table is absent)."""
    data = _load_json(config)
    if not isinstance(data, dict):
        return None
    if scope == "local":
        projects = data.get("projects")
        if not isinstance(projects, dict):
            return None
        data = projects.get(project)
        if not isinstance(data, dict):
            return None
    servers = data.get("mcpServers")
    return servers if isinstance(servers, dict) else None


def claude_entry(config: Path, scope: str, project: str, name: str) -> Any:
    """One server entry as Claude stores it, or None."""
    servers = _claude_servers(config, scope, project)
    return None if servers is None else servers.get(name)


def _cmd_claude_entry(args: argparse.Namespace) -> int:
    entry = claude_entry(Path(args.config), args.scope, args.project, args.name)
    print(json.dumps(entry, sort_keys=True))
    return 0


def _cmd_claude_check(args: argparse.Namespace) -> int:
    entry = claude_entry(Path(args.config), args.scope, args.project, args.name)
    expected = json.loads(args.expect)
    if entry != expected:
        raise HelperError(
            f"Claude's config {args.config} does not hold the expected entry '{args.name}' "
            f"({args.scope} scope) after the change"
        )
    return 0


def _cmd_claude_json(args: argparse.Namespace) -> int:
    env = dict(_split_pairs(args.env))
    entry: dict[str, Any] = {"type": "stdio", "command": args.command, "args": list(args.arg)}
    if env:
        entry["env"] = env
    print(json.dumps(entry, separators=(",", ":")))
    return 0


# --------------------------------------------------------------------------------------------- codex


def _codex_header(name: str) -> str:
    """The TOML table header Codex writes for a server whose name is a bare key."""
    return f"[mcp_servers.{name}]"


def _codex_has_entry(raw: bytes, name: str) -> bool:
    """Whether a Codex config defines the server (parsed when tomllib exists, else by its header)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        return _codex_header(name).encode() in raw
    try:
        servers = tomllib.loads(raw.decode("utf-8")).get("mcp_servers")
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return _codex_header(name).encode() in raw
    return isinstance(servers, dict) and name in servers


def _cmd_codex_set_env_vars(args: argparse.Namespace) -> int:
    """Add ``env_vars = [...]`` to one server table: ``codex mcp add`` has no flag for it."""
    path = Path(args.config)
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    lines = text.splitlines(keepends=True)
    header = _codex_header(args.name)
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == header)
    except StopIteration:
        raise HelperError(f"{path} has no table {header}") from None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    kept = [line for line in lines[start + 1 : end] if not re.match(r"\s*env_vars\s*=", line)]
    new_line = "env_vars = " + json.dumps(list(args.var)) + "\n"
    lines[start + 1 : end] = [new_line, *kept]
    _replace_atomically(path, "".join(lines).encode("utf-8"), path.stat().st_mode & 0o777)
    return 0


def _cmd_codex_check(args: argparse.Namespace) -> int:
    """Compare ``codex mcp get --json`` (stdin) with what the script meant to register."""
    try:
        got = json.loads(sys.stdin.read())
    except json.JSONDecodeError:
        raise HelperError("`codex mcp get --json` did not print JSON") from None
    transport = got.get("transport") or {}
    problems = []
    if transport.get("type") != "stdio":
        problems.append(f"transport {transport.get('type')!r}")
    if transport.get("command") != args.command:
        problems.append(f"command {transport.get('command')!r}")
    if list(transport.get("args") or []) != list(args.arg):
        problems.append(f"args {transport.get('args')!r}")
    if dict(transport.get("env") or {}) != dict(_split_pairs(args.env)):
        problems.append("env differs")
    if sorted(transport.get("env_vars") or []) != sorted(args.var):
        problems.append(f"env_vars {transport.get('env_vars')!r}")
    if got.get("enabled") is False:
        problems.append("server is disabled")
    if problems:
        raise HelperError(f"Codex reports a different entry '{args.name}': " + "; ".join(problems))
    return 0


# --------------------------------------------------------------------------------------------- backups


def _cmd_backup(args: argparse.Namespace) -> int:
    """Save what is there now (Codex: the whole config file byte-for-byte; Claude: the one entry)."""
    record: dict[str, Any] = {
        "format": BACKUP_FORMAT,
        "version": BACKUP_VERSION,
        "client": args.client,
        "name": args.name,
        "created": _timestamp(),
        "reason": args.reason,
        "config_path": str(Path(args.config).absolute()),
    }
    config = Path(args.config)
    if args.client == "codex":
        try:
            raw = config.read_bytes()
        except FileNotFoundError:
            raw = None
        record["config_existed"] = raw is not None
        record["config_mode"] = (config.stat().st_mode & 0o777) if raw is not None else 0o600
        if raw is not None:
            try:
                record["config_text"] = raw.decode("utf-8")
            except UnicodeDecodeError:
                record["config_base64"] = base64.b64encode(raw).decode("ascii")
        record["entry_present"] = raw is not None and _codex_has_entry(raw, args.name)
    else:
        record["scope"] = args.scope
        record["project_dir"] = args.project
        entry = claude_entry(config, args.scope, args.project, args.name)
        record["entry"] = entry
        record["entry_present"] = entry is not None
    stem = f"{_timestamp()}-{args.client}-{args.name}-{args.reason}"
    path = _write_new_private(Path(args.dir), stem, (json.dumps(record, indent=2) + "\n").encode("utf-8"))
    print(path)
    return 0


def _read_backup(path: Path) -> dict[str, Any]:
    """Load and sanity-check a backup file written by this helper."""
    record = _load_json(path)
    if not isinstance(record, dict) or record.get("format") != BACKUP_FORMAT:
        raise HelperError(f"{path} is not a brave-search-mcp backup file")
    if record.get("version") != BACKUP_VERSION:
        raise HelperError(f"{path} has backup version {record.get('version')!r}; this script reads {BACKUP_VERSION}")
    client = record.get("client")
    name = record.get("name")
    if client not in ("codex", "claude") or not isinstance(name, str) or not NAME_RE.match(name):
        raise HelperError(f"{path} names no valid client and server")
    for field in ("config_path", "project_dir"):
        value = record.get(field)
        if value is not None and (not isinstance(value, str) or "\n" in value or "\t" in value):
            raise HelperError(f"{path} has an unusable {field}")
    if client == "claude" and record.get("scope") not in ("user", "local", "project"):
        raise HelperError(f"{path} has an unknown Claude scope {record.get('scope')!r}")
    return record


def _cmd_backup_info(args: argparse.Namespace) -> int:
    """Print the fields the shell needs, one ``key=value`` per line (values never hold newlines)."""
    record = _read_backup(Path(args.backup))
    for field in ("client", "name", "scope", "project_dir", "config_path", "created"):
        print(f"{field}={record.get(field) or ''}")
    print(f"entry_present={'yes' if record.get('entry_present') else 'no'}")
    return 0


def _cmd_backup_entry(args: argparse.Namespace) -> int:
    record = _read_backup(Path(args.backup))
    print(json.dumps(record.get("entry"), separators=(",", ":")))
    return 0


def _cmd_restore_codex_file(args: argparse.Namespace) -> int:
    """Put Codex's config back exactly as backed up (or remove it when there was none)."""
    record = _read_backup(Path(args.backup))
    if record["client"] != "codex":
        raise HelperError("not a Codex backup")
    path = Path(record["config_path"])
    if not record.get("config_existed"):
        path.unlink(missing_ok=True)
        return 0
    if "config_text" in record:
        data = str(record["config_text"]).encode("utf-8")
    else:
        data = base64.b64decode(str(record["config_base64"]))
    _replace_atomically(path, data, int(record.get("config_mode") or 0o600))
    return 0


# --------------------------------------------------------------------------------------------- smoke


def _split_pairs(pairs: list[str]) -> list[tuple[str, str]]:
    """KEY=VALUE strings to pairs (the shell validated them)."""
    result = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise HelperError(f"not KEY=VALUE: {pair.split('=')[0]}")
        result.append((key, value))
    return result


def _cmd_smoke(args: argparse.Namespace) -> int:
    """Start the server once over stdio (initialize + tools/list) so the client's first start is warm."""
    try:
        print(smoke(args.command, args.arg, _split_pairs(args.env), args.timeout))
    except SmokeError as exc:
        raise HelperError(str(exc)) from None
    return 0


# --------------------------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="_mcp_config.py", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("claude-entry")
    for flag in ("--config", "--scope", "--project", "--name"):
        p.add_argument(flag, required=True)
    p.set_defaults(func=_cmd_claude_entry)

    p = sub.add_parser("claude-check")
    for flag in ("--config", "--scope", "--project", "--name", "--expect"):
        p.add_argument(flag, required=True)
    p.set_defaults(func=_cmd_claude_check)

    p = sub.add_parser("claude-json")
    p.add_argument("--command", required=True)
    p.add_argument("--arg", action="append", default=[])
    p.add_argument("--env", action="append", default=[])
    p.set_defaults(func=_cmd_claude_json)

    p = sub.add_parser("codex-set-env-vars")
    p.add_argument("--config", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--var", action="append", default=[])
    p.set_defaults(func=_cmd_codex_set_env_vars)

    p = sub.add_parser("codex-check")
    p.add_argument("--name", required=True)
    p.add_argument("--command", required=True)
    p.add_argument("--arg", action="append", default=[])
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--var", action="append", default=[])
    p.set_defaults(func=_cmd_codex_check)

    p = sub.add_parser("backup")
    p.add_argument("--client", required=True, choices=("codex", "claude"))
    p.add_argument("--dir", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--reason", required=True)
    p.add_argument("--scope", default="user")
    p.add_argument("--project", default="")
    p.set_defaults(func=_cmd_backup)

    p = sub.add_parser("backup-info")
    p.add_argument("backup")
    p.set_defaults(func=_cmd_backup_info)

    p = sub.add_parser("backup-entry")
    p.add_argument("backup")
    p.set_defaults(func=_cmd_backup_entry)

    p = sub.add_parser("restore-codex-file")
    p.add_argument("backup")
    p.set_defaults(func=_cmd_restore_codex_file)

    p = sub.add_parser("smoke")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--env", action="append", default=[])
    p.add_argument("command")
    p.add_argument("arg", nargs="*")
    p.set_defaults(func=_cmd_smoke)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one helper command; HelperError becomes a one-line message and exit status 1."""
    args = _parser().parse_args(argv)
    try:
        result: int = args.func(args)
    except HelperError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 1
    return result


if __name__ == "__main__":
    sys.exit(main())
