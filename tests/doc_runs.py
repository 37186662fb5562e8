"""Running a documented command as written, in a sandbox: a temporary HOME and XDG folders, the fake Brave on
loopback, a fake key, in-memory state. Each kind of tests/doc_commands.RULES has its runner here."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx2

from testkit.brave.brave import VALID_KEY
from testkit.sites import FakeSite
from testkit.sites.pages import big_page
from testkit.stdio import PROTOCOL, RpcSession
from testkit.tracked_server import free_port
from tests.doc_commands import REPO, Command

VENV_BIN = Path(sys.executable).parent  # the project's environment: what `uv run` runs in
TOKEN = "docs-token-0123456789abcdef"  # the sandbox's BRAVE_SEARCH_HTTP_TOKEN (curl sends it as written)


def sandbox(tmp_path: Path, brave_url: str) -> dict[str, str]:
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


def _as_run_here(text: str, env: dict[str, str] | None = None) -> str:
    """`uv run [--extra dev] X` is X in the project's environment, which the sandbox PATH puts first; a Brave
    base URL on loopback (the fake the docs start) is the sandbox's fake."""
    text = re.sub(r"\buv run (--extra \w+ )?", "", text)
    if env is not None:
        text = re.sub(
            r"BRAVE_SEARCH_BASE_URL=http://127\.0\.0\.1:\d+",
            f"BRAVE_SEARCH_BASE_URL={env['BRAVE_SEARCH_BASE_URL']}",
            text,
        )
    return text


def _exec(text: str) -> list[str]:
    """bash replaced by the command (signals and EOF reach it), leading VAR=value assignments kept."""
    return ["bash", "-c", re.sub(r"^((?:\w+=\S+ )*)", r"\1exec ", _as_run_here(text), count=1)]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C works even when pytest itself runs under nohup


def _bash(text: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", _as_run_here(text, env)], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False, stdin=subprocess.DEVNULL)  # fmt: skip


def run(command: Command, env: dict[str, str], text: str | None = None) -> None:
    """Exit 0 with something printed; a skill command answers ok; the ~/ paths its comment promises appear."""
    done = _bash(text or command.text, env)
    assert done.returncode == 0, f"{command}\n{done.stdout[-400:]}\n{done.stderr[-800:]}"
    assert done.stdout.strip(), f"{command} printed nothing"
    if " skill " in f" {command.text} " and "--params-json" in command.text:
        assert json.loads(done.stdout)["ok"] is True, f"{command}\n{done.stdout[:600]}"
    for promised in re.findall(r"~/([\w./-]+)", command.comment):  # "# → ~/.claude/skills/brave-search and …"
        assert (Path(env["HOME"]) / promised).exists(), f"{command}: ~/{promised} was not made"


def read(command: Command, env: dict[str, str]) -> None:
    """A page the docs read on the web, served from a local site at the same path (the reader may reach it)."""
    with FakeSite() as site:
        text = command.text
        for url in set(re.findall(r"https?://[^\s'\"]+", text)):
            parts = urlsplit(url)
            site.page(parts.path or "/", big_page(60_000))
            text = text.replace(url, site.url(parts.path or "/"))
        run(command, {**env, "BRAVE_SEARCH_READ_ALLOWED_HOSTS": "127.0.0.1"}, text)
        assert site.requests, f"{command}: the page was never read"


def with_summary_key(command: Command, env: dict[str, str]) -> None:
    """A line that needs a summarizer key: a search with a summary makes one, then the line runs with it."""
    searched = _bash("brave-search-mcp search 'what is mcp' --summary --json", env)
    key = json.loads(searched.stdout)["summarizer_key"]
    text = re.sub(r'(?<=")<summarizer_key>', json.dumps(key)[1:-1], command.text)  # inside a JSON string
    run(command, env, text.replace("<summarizer_key>", key))


@contextmanager
def serving(text: str, env: dict[str, str], probe: str, **headers: str) -> Iterator[int]:
    """The server ``text`` starts, on a free loopback port, once ``probe`` answers 200; Ctrl-C must end it with 0."""
    port = free_port()
    text, moved = re.subn(r"--port \d+", f"--port {port}", text)
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
        assert status == 200, f"{text}: {probe} never answered 200\n{log.read_text()[-800:]}"
        yield port
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=15) == 0, f"{text}\n{log.read_text()[-800:]}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)


def serve_until_interrupted(command: Command, env: dict[str, str], probe: str, **headers: str) -> None:
    with serving(command.text, env, probe, **headers):
        pass


def curl(command: Command, env: dict[str, str]) -> None:
    """One request to the HTTP server as docs/http.md starts it, with a token: a JSON-RPC result, no error."""
    env = {**env, "BRAVE_SEARCH_HTTP_TOKEN": TOKEN}
    with serving("brave-search-mcp --transport http", env, "/healthz") as port:
        text = re.sub(r"http://127\.0\.0\.1:\d+/mcp", f"http://127.0.0.1:{port}/mcp", command.text)
        done = _bash(text, env)
    assert done.returncode == 0, f"{command}\n{done.stderr[-800:]}"
    answer = json.loads(done.stdout)
    assert "error" not in answer and answer["result"], f"{command}\n{done.stdout[:600]}"
    assert answer["result"].get("isError") is not True, f"{command}\n{done.stdout[:600]}"


async def _session(command: Command, env: dict[str, str]) -> None:
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


def stdio(command: Command, env: dict[str, str]) -> None:
    """The stdio server: initialize, tools/list, then EOF ends it with 0."""
    anyio.run(_session, command, env)


def refused(command: Command, env: dict[str, str]) -> None:
    done = _bash(command.text, {k: v for k, v in env.items() if k != "BRAVE_SEARCH_HTTP_TOKEN"})
    assert done.returncode != 0, f"{command} started without what its comment says it needs"
    assert all(name in done.stderr for name in re.findall(r"\b[A-Z][A-Z0-9_]{4,}\b", command.comment))
