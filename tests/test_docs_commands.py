"""Every shell command in README.md and docs/*.md works as written, or is checked for the names it relies on.

Each fenced ``bash`` / ``sh`` / ``shell`` / ``console`` block is split into commands (``\\`` continuations
joined, ``# comments`` dropped, ``$ `` prompts of console blocks only). Every command must match a rule of
``RULES`` below (first match wins; a new kind of command fails until it is classified). What can run offline
runs in a sandbox (a temporary HOME and XDG folders, the fake Brave on loopback, a fake key, in-memory state)
and must end as the docs say. What cannot (Docker, downloads, a person's real client configuration, the suite
itself) is checked instead for the files, versions, settings and options it names. Classification is by
pattern, so the docs can be rewritten freely; only a new *kind* of command needs a new rule.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import PROTOCOL, RpcSession
from testkit.tracked_server import free_port

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
VENV_BIN = Path(sys.executable).parent  # the project's environment: what `uv run` runs in
SHELL_BLOCK = re.compile(r"^[ \t]*```(bash|sh|shell|console)[ \t]*\n(.*?)^[ \t]*```", re.M | re.S)
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PINS: dict[str, str] = json.loads((REPO / ".ci" / "package.json").read_text(encoding="utf-8"))["dependencies"]
# The key file the registration scripts write: ${XDG_CONFIG_HOME:-~/.config}/brave-search-mcp/<this name>.
REGISTER = (REPO / "scripts" / "register-mcp.sh").read_text(encoding="utf-8")
KEY_FILE_NAME = re.findall(r"key_file:-\$\{config_dir\}/([\w.-]+)\}", REGISTER)[0]


@dataclass(frozen=True)
class Rule:
    pattern: str  # searched in the command (comments dropped, continuations joined)
    kind: str  # run | stdio | http | fake | refused | check
    why: str


RULES = (
    # ---- placeholders first: a reader fills them in, so the line cannot run as written
    Rule(r"<[\w ]+>|=\.\.\.(\s|$)", "check", "holds a placeholder (<repository>, <summarizer_key>, KEY=...)"),
    # ---- run in the sandbox, exit 0 (`uv run [--extra dev]` is the project's environment: run in it directly)
    Rule(r"^(uv run )?brave-search-mcp --version$", "run", "prints the version"),
    Rule(
        r"^brave-search-mcp (skill )?read\b",
        "check",
        "reads a public page: needs the network (the CLI reads local sites in tests/reader/test_read_url_e2e.py)",
    ),
    Rule(r"^brave-search-mcp (search|summarize|context|local|answer|status|tool-help)\b", "run", "a CLI call"),
    Rule(
        r"^brave-search-mcp skill (web|search|summarizer|summarize|context|local|answer|status|tool-help)\b",
        "run",
        "the skill's JSON CLI",
    ),
    Rule(r"^brave-search-mcp skill install\b", "run", "installs the skill; the ~/ folders it names must appear"),
    # ---- servers: started, used once, stopped; the ones that must refuse, refused
    Rule(r"^(\w+=\S+ )*(uv run )?brave-search-mcp( serve)?$", "stdio", "the stdio server: initialize, tools/list, EOF"),
    Rule(r"^brave-search-mcp --transport http --host 0\.0\.0\.0", "refused", "0.0.0.0 without a token must refuse"),
    Rule(r"^brave-search-mcp --transport http( --port \d+)?$", "http", "HTTP server: /healthz, then Ctrl-C"),
    Rule(r"^uv run python -m testkit\.(brave|searxng)\b", "fake", "a fake upstream: one request, then Ctrl-C"),
    # ---- not run here; checked for what they name (see _check_names and the kind-specific checks)
    Rule(r"^export [A-Z][A-Z0-9_]*=", "check", "sets a variable; its name must be a setting the server reads"),
    Rule(r"^(uv tool install|pipx install|uv build$)", "check", "installs from the package index or builds a wheel"),
    Rule(r"^uv sync\b", "check", "changes the environment this suite runs in (and may download)"),
    Rule(r"^uv run --extra dev (pytest|ruff|mypy)\b|^\.venv/bin/pytest\b", "check", "the suite and linters: CI"),
    Rule(r"python -m bench\b", "check", "minutes of benchmarks; rewrites docs/benchmarks.md (tests/bench/)"),
    Rule(r"^bash \.ci/run$", "check", "the CI entry point itself"),
    Rule(r"^scripts/(register|uninstall)-mcp\.sh\b", "check", "edits the real Codex/Claude config (test_clients.py)"),
    Rule(r"^scripts/pack-mcpb\.sh\b", "check", "packs a 14 MB bundle with node's mcpb (tests/test_manifest.py)"),
    Rule(r"^\.ci/install-node-tools\.sh\b", "check", "downloads the pinned npm packages"),
    Rule(r"^npx -y ", "check", "downloads an npm package; the real-client tests run the pinned copy"),
    Rule(r"^(claude|codex) ", "check", "writes a person's real client configuration (tests/test_clients.py)"),
    Rule(r"^docker ", "check", "needs a Docker daemon and the network to pull python:3.12-slim"),
)


@dataclass(frozen=True)
class Command:
    where: str  # file:line
    text: str  # as written, comment dropped
    comment: str  # the trailing comment: it often states the outcome

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def _split_comment(line: str) -> tuple[str, str]:
    """The command and its trailing ``# comment`` (a ``#`` inside quotes or a word is not a comment)."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip(), line[i + 1 :].strip()
    return line.strip(), ""


def documented_commands() -> list[Command]:
    commands = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for block in SHELL_BLOCK.finditer(text):
            first = text[: block.start(2)].count("\n") + 1
            lines = block.group(2).splitlines()
            n = 0
            while n < len(lines):
                start, line = n, lines[n].strip()
                while line.endswith("\\") and n + 1 < len(lines):
                    n += 1
                    line = line[:-1].rstrip() + " " + lines[n].strip()
                n += 1
                if block.group(1) == "console":
                    if not line.startswith("$ "):
                        continue  # output shown in a console block
                    line = line[2:]
                command, comment = _split_comment(line)
                if command:
                    commands.append(Command(f"{doc.relative_to(REPO)}:{first + start}", command, comment))
    return commands


def classify(command: Command) -> Rule | None:
    return next((rule for rule in RULES if re.search(rule.pattern, command.text)), None)


COMMANDS = documented_commands()


# ------------------------------------------------------------------------------------------ names (every command)


def _known_settings() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in (REPO / "src").rglob("*.py"))


SETTINGS_SOURCE = _known_settings()


def _check_names(command: Command) -> None:
    """What every command relies on, runnable or not: settings, the key file, repository paths, pinned versions."""
    for name in re.findall(r"\b(BRAVE_SEARCH_[A-Z0-9_]+|BRAVE_API_KEY(?:_FILE)?|SEARXNG_[A-Z0-9_]+)\b", command.text):
        assert f'"{name}"' in SETTINGS_SOURCE, f"{command}: {name} is not a setting the server reads"
    for name in re.findall(r"\.config/brave-search-mcp/([\w.-]+)", command.text):
        assert name == KEY_FILE_NAME, f"{command}: the scripts write the key to …/{KEY_FILE_NAME}, not …/{name}"
    for path in re.findall(r"(?<![\w/$.-])((?:scripts|\.ci|docs|bench|testkit|skills)/[\w./-]*[\w])", command.text):
        if not path.startswith(".ci/node/"):  # made by .ci/install-node-tools.sh (checked below)
            assert (REPO / path).exists(), f"{command}: {path} does not exist"
    for package, version in re.findall(r"npx -y (@?[\w./-]+)@([\w.-]+)", command.text):
        if package in PINS:
            assert version == PINS[package], f"{command}: {package} is pinned at {PINS[package]} in .ci/package.json"


def _check_script_options(command: Command) -> None:
    """A repository script: it exists, is executable, and every --option used is in its --help."""
    script = REPO / command.text.split()[0]
    assert os.access(script, os.X_OK), f"{command}: {script.name} is not executable"
    usage = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=30, check=True).stdout
    for option in re.findall(r"(?<!\S)(--[\w-]+)", command.text):
        assert option in usage, f"{command}: {option} is not an option of {script.name}"


def _check_node_tools(command: Command) -> None:
    """The PATH line names the folder the installer fills."""
    installer = (REPO / ".ci" / "install-node-tools.sh").read_text(encoding="utf-8")
    assert 'prefix="${here}/node"' in installer and 'bin_dir="${prefix}/node_modules/.bin"' in installer
    for folder in re.findall(r'PATH="\$PWD/([^:"]+)', command.text):
        assert folder == ".ci/node/node_modules/.bin", f"{command}: the installer puts the tools elsewhere"


def _check_docker(command: Command) -> None:
    argv = shlex.split(command.text)
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    if argv[1] == "build":
        built = [c for c in COMMANDS if c.text.startswith("docker run")]
        assert built and all(shlex.split(c.text)[-1] == argv[argv.index("-t") + 1] for c in built)
        _check_dockerfile_copies_the_build_inputs(dockerfile)
        return
    envs = dict(argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "-e")
    for i, arg in enumerate(argv):
        if arg == "-v":
            source, target = argv[i + 1].split(":")[:2]
            if source.endswith(KEY_FILE_NAME):
                assert envs.get("BRAVE_API_KEY_FILE") == target, f"{command}: BRAVE_API_KEY_FILE is not {target}"
        if arg == "-p":
            port = argv[i + 1].rsplit(":", 1)[-1]
            assert f"BRAVE_SEARCH_PORT={port}" in dockerfile, f"{command}: the image listens elsewhere"


def _check_dockerfile_copies_the_build_inputs(dockerfile: str) -> None:
    """The image's wheel build gets every file pyproject.toml names (a missing one fails `docker build`)."""
    copied = [p for line in re.findall(r"^COPY (?!--)(.+)$", dockerfile, re.M) for p in line.split()[:-1]]
    hatch = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]
    needed = ["pyproject.toml", PYPROJECT["project"]["readme"], *PYPROJECT["project"].get("license-files", [])]
    needed += [*hatch.get("packages", []), *hatch.get("force-include", {})]
    ignored = [line.rstrip("/") for line in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()]
    for path in needed:
        assert any(path == c or path.startswith(c.rstrip("/") + "/") for c in copied), f"Dockerfile never COPYs {path}"
        left_out = [p for p in ignored if p and not p.startswith("#") and fnmatch.fnmatch(path.split("/")[0], p)]
        assert left_out == [], f".dockerignore keeps {path} out of the build ({left_out})"


def _check(command: Command) -> None:
    text = command.text
    if text.startswith("scripts/"):
        _check_script_options(command)
    elif ".ci/install-node-tools.sh" in text:
        _check_node_tools(command)
    elif text.startswith("docker "):
        _check_docker(command)
    elif re.match(r"^(uv tool install|pipx install) ", text):
        wheel = re.search(r"dist/([\w]+)-", text)
        name = PYPROJECT["project"]["name"]
        assert (wheel.group(1) if wheel else text.split()[-1]) in (name, name.replace("-", "_")), str(command)
    elif text.startswith("uv sync"):
        for extra in re.findall(r"--extra (\w+)", text):
            assert extra in PYPROJECT["project"]["optional-dependencies"], f"{command}: no extra {extra!r}"
    elif re.search(r"pytest\b.* -m (\w+)", text):
        marker = re.search(r" -m (\w+)", text)
        assert marker and any(
            m.startswith(marker.group(1) + ":") for m in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]
        )
    elif text.startswith(("claude mcp add-json", "codex")):
        payload = [arg for arg in shlex.split(text) if arg.startswith("{")]
        assert all(isinstance(json.loads(arg), dict) for arg in payload), str(command)


# ------------------------------------------------------------------------------------------ the sandbox


def _sandbox(tmp_path: Path, brave_url: str) -> dict[str, str]:
    home = tmp_path / "home"
    env = {
        "HOME": str(home),
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "BRAVE_SEARCH_BASE_URL": brave_url,
        "BRAVE_SEARCH_API_KEY": VALID_KEY,
        "BRAVE_SEARCH_STATE": "memory",
    }
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[name] = str(tmp_path / name.lower())
    for path in (home, *(Path(env[n]) for n in env if n.startswith("XDG_"))):
        path.mkdir(parents=True, exist_ok=True)
    return env


def _as_run_here(text: str) -> str:
    """`uv run [--extra dev] X` is X in the project's environment, which the sandbox PATH puts first."""
    return re.sub(r"\buv run (--extra \w+ )?", "", text)


def _exec(text: str) -> list[str]:
    """bash replaced by the command (signals and EOF reach it), leading VAR=value assignments kept."""
    return ["bash", "-c", re.sub(r"^((?:\w+=\S+ )*)", r"\1exec ", _as_run_here(text), count=1)]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C works even when pytest itself runs under nohup


def _run(command: Command, env: dict[str, str]) -> None:
    done = subprocess.run(
        ["bash", "-c", _as_run_here(command.text)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, f"{command}\n{done.stderr[-800:]}"
    assert done.stdout.strip(), f"{command} printed nothing"
    for promised in re.findall(r"~/([\w./-]+)", command.comment):  # "# → ~/.claude/skills/brave-search and …"
        assert (Path(env["HOME"]) / promised).exists(), f"{command}: ~/{promised} was not made"


async def _stdio(command: Command, env: dict[str, str]) -> None:
    async with await anyio.open_process(_exec(command.text), env=env, cwd=REPO, stderr=subprocess.DEVNULL) as process:
        session = RpcSession(process)
        hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "docs", "version": "0"}}
        assert (await session.call("initialize", hello))["result"]["serverInfo"]["name"] == "brave-search"
        await session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = (await session.call("tools/list"))["result"]["tools"]
        assert any(tool["name"] == "brave_web_search" for tool in tools)
        await session.close_stdin()  # how a host stops a stdio server
        with anyio.fail_after(15):
            assert await process.wait() == 0, str(command)


def _serve_until_interrupted(command: Command, env: dict[str, str], probe: str, **headers: str) -> None:
    """Start it on a free loopback port, GET ``probe`` until it answers 200, then Ctrl-C: it must exit 0."""
    port = free_port()
    text, moved = re.subn(r"--port \d+", f"--port {port}", command.text)
    env = {**env, "BRAVE_SEARCH_PORT": str(port)} if not moved else env
    log = Path(env["HOME"]) / "server.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(_exec(text), env=env, cwd=REPO, preexec_fn=_default_sigint,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)  # fmt: skip
    try:
        deadline, status = time.monotonic() + 30, 0
        while time.monotonic() < deadline and process.poll() is None and status != 200:
            try:
                status = httpx2.get(f"http://127.0.0.1:{port}{probe}", headers=headers, timeout=2).status_code
            except httpx2.TransportError:
                time.sleep(0.1)
        assert status == 200, f"{command}: {probe} never answered 200\n{log.read_text()[-800:]}"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=15) == 0, f"{command}\n{log.read_text()[-800:]}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)


def _refused(command: Command, env: dict[str, str]) -> None:
    done = subprocess.run(["bash", "-c", _as_run_here(command.text)], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode != 0, f"{command} started without what its comment says it needs"
    assert all(name in done.stderr for name in re.findall(r"\b[A-Z][A-Z0-9_]{4,}\b", command.comment))


# ------------------------------------------------------------------------------------------ the tests


def test_the_docs_are_scanned() -> None:
    assert len(COMMANDS) > 40 and {c.where.split(":")[0] for c in COMMANDS} >= {"README.md", "docs/http.md"}
    cli = {shlex.split(c.text)[1] for c in COMMANDS if re.match(r"brave-search-mcp [a-z]", c.text)}
    assert cli >= {"search", "summarize", "context", "local", "answer", "status", "tool-help", "skill"}


def test_every_documented_command_is_classified() -> None:
    unclassified = [str(c) for c in COMMANDS if classify(c) is None]
    assert unclassified == [], "classify these in RULES of tests/test_docs_commands.py:\n" + "\n".join(unclassified)


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_a_documented_command_works_as_written(command: Command, tmp_path: Path) -> None:
    rule = classify(command)
    if rule is None:
        pytest.fail(f"unclassified: {command}")
    _check_names(command)
    if rule.kind == "check":
        _check(command)
        return
    with FakeBraveServer(rate_per_second=1000) as brave:
        env = _sandbox(tmp_path, brave.base_url)
        if rule.kind == "run":
            _run(command, env)
        elif rule.kind == "stdio":
            anyio.run(_stdio, command, env)
        elif rule.kind == "http":
            _serve_until_interrupted(command, env, "/healthz")
        elif rule.kind == "fake" and "testkit.searxng" in command.text:
            _serve_until_interrupted(command, env, "/search?q=docs&format=json")
        elif rule.kind == "fake":  # with the key the docs say it accepts
            _serve_until_interrupted(command, env, "/res/v1/web/search?q=docs", **{"X-Subscription-Token": VALID_KEY})
        else:
            _refused(command, {k: v for k, v in env.items() if k != "BRAVE_SEARCH_HTTP_TOKEN"})
