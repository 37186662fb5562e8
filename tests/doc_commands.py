"""Every command a reader is shown, collected: the docs' shell blocks and every help text's examples.

Sources: each fenced ``bash`` / ``sh`` / ``shell`` / ``console`` block of README.md and docs/*.md; the skill's
pages as ``skill install`` writes them (``<repo>`` rewritten to the installed command, the ``bs`` shorthand
spelled out); the examples of every ``--help`` of the command line; the help tool's examples, as the skill's
JSON commands; the README's table of Brave's official tools, as calls of ours; and the Dockerfile's comment.
A block is split into commands (``\\`` continuations joined, ``# comments`` kept apart, ``$ `` prompts of
console blocks only). ``RULES`` says what each kind of command is (first match wins; a new kind of command
fails until it is classified); tests/doc_runs.py runs or checks it.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from brave_search_mcp.config_sources import OFFICIAL_TOOLS
from brave_search_mcp.faces.cli import main
from brave_search_mcp.faces.skill_install import render_skill_text
from brave_search_mcp.tools.help import EXAMPLES
from brave_search_mcp.tools.registry import all_tools

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SKILL = REPO / "skills" / "brave-search"
SKILL_DOCS = [SKILL / "SKILL.md", *sorted((SKILL / "references").glob("*.md"))]
SHELL_BLOCK = re.compile(r"^[ \t]*```(bash|sh|shell|console)[ \t]*\n(.*?)^[ \t]*```", re.M | re.S)
TOOL_COMMANDS = "search|summarize|context|local|answer|status|tool-help"
SKILL_MODES = "web|search|summarizer|summarize|context|local|answer|status|tool-help|read"


@dataclass(frozen=True)
class Rule:
    pattern: str  # searched in the command (comments dropped, continuations joined)
    kind: str  # run | read | summary_key | stdio | http | curl | fake | refused | check
    why: str


RULES = (
    # ---- a summarizer key is made first (a search with summary), then the line runs with it
    Rule(r"<summarizer_key>", "summary_key", "needs a key a search made: one is made, then the line runs"),
    # ---- other placeholders: a reader fills them in, so the line cannot run as written
    Rule(r"<[\w ]+>|=\.\.\.(\s|$)", "check", "holds a placeholder (<repository>, <result url>, KEY=...)"),
    # ---- run in the sandbox, exit 0 (`uv run [--extra dev]` is the project's environment: run in it directly)
    Rule(r"^(uv run )?brave-search-mcp --version$", "run", "prints the version"),
    Rule(r"^brave-search-mcp (skill )?read\b", "read", "reads the page from a local site serving its path"),
    Rule(rf"^(\w+=\S+ )*(uv run )?brave-search-mcp ({TOOL_COMMANDS})\b", "run", "a CLI call (the fake's port)"),
    Rule(rf"^brave-search-mcp skill ({SKILL_MODES})\b", "run", "the skill's JSON CLI"),
    Rule(r"^brave-search-mcp skill install\b", "run", "installs the skill; the ~/ folders it names must appear"),
    Rule(r"^brave-search-mcp uninstall\b", "run", "removes registrations and the skill (no client installed here)"),
    # ---- servers: started, used once, stopped; the ones that must refuse, refused
    Rule(r"^(\w+=\S+ )*(uv run )?brave-search-mcp( serve)?$", "stdio", "the stdio server: initialize, tools/list, EOF"),
    Rule(r"^brave-search-mcp --transport http --host 0\.0\.0\.0", "refused", "0.0.0.0 without a token must refuse"),
    Rule(r"^brave-search-mcp --transport http( --port \d+)?$", "http", "HTTP server: /healthz, then Ctrl-C"),
    Rule(r"^curl .*http://127\.0\.0\.1:\d+/mcp\b", "curl", "one request to a real HTTP server with the token"),
    Rule(r"^uv run python -m testkit\.(brave|searxng)\b", "fake", "a fake upstream: one request, then Ctrl-C"),
    # ---- not run here; checked for what they name (see doc_runs.check)
    Rule(r"^export [A-Z][A-Z0-9_]*=", "check", "sets a variable; its name must be a setting the server reads"),
    Rule(r"^(uv tool (install|uninstall)|pipx (install|uninstall))|^uv build$", "check", "installs or builds"),
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
    Rule(r"^redis-cli |^done$", "check", "changes a person's Redis; the key names it moves to must be the code's"),
)


@dataclass(frozen=True)
class Command:
    where: str  # file:line, or which help text
    text: str  # as written, comment dropped
    comment: str  # the trailing comment: it often states the outcome

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def classify(command: Command) -> Rule | None:
    return next((rule for rule in RULES if re.search(rule.pattern, command.text)), None)


def split_comment(line: str) -> tuple[str, str]:
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


def block_commands(where: str, text: str) -> list[Command]:
    """The commands of every shell block of ``text`` (``where``: the file, for the line numbers)."""
    commands = []
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
            command, comment = split_comment(line)
            if command:
                commands.append(Command(f"{where}:{first + start}", command, comment))
    return commands


def skill_page(path: Path) -> str:
    """A skill page as ``skill install`` writes it, with the ``bs`` shorthand of the examples spelled out."""
    text = render_skill_text(path.read_text(encoding="utf-8"), "brave-search-mcp")
    return re.sub(r"^bs ", "brave-search-mcp skill ", text, flags=re.M)


def help_examples() -> list[Command]:
    """The examples of every ``--help`` the command line prints (the top level's and each command's)."""
    commands = []
    for argv in ([], *([spec.cli.command] for spec in all_tools())):
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
            main([*argv, "--help"])
        examples = shown.getvalue().split("\nexamples:\n", 1)[-1].split("\n\n", 1)[0]
        where = " ".join(["brave-search-mcp", *argv, "--help"])
        for line in examples.splitlines():
            command, comment = split_comment(line)
            if command.startswith("brave-search-mcp"):
                commands.append(Command(where, command, comment))
    return commands


def tool_help_examples() -> list[Command]:
    """The help tool's examples (its "examples" topic), run as the skill's JSON command with the same arguments."""
    modes = {spec.name: spec.cli.command for spec in all_tools()}
    return [
        Command(f"brave_web_search_help examples #{n}", f"brave-search-mcp skill {modes[example['tool']]} "
                f"--params-json {shlex.quote(json.dumps(example['arguments']))}", example["why"])
        for n, example in enumerate(EXAMPLES, 1)
    ]  # fmt: skip


MIGRATION_ROW = re.compile(r"^\| `(brave_\w+)` \| `(\w+)` \| `(\{.*?\})`", re.M)


def migration_calls() -> list[Command]:
    """The README's table of Brave's official tools: each row's call, as the skill's JSON command (ours)."""
    readme = DOCS[0].read_text(encoding="utf-8")
    modes = {spec.name: spec.cli.command for spec in all_tools()}
    rows = MIGRATION_ROW.findall(readme)
    assert {theirs for theirs, _, _ in rows} == set(OFFICIAL_TOOLS), "the README's migration table lists them all"
    commands = []
    for theirs, ours, arguments in rows:
        target, needed = OFFICIAL_TOOLS[theirs]
        assert ours == target, f"README maps {theirs} to {ours}; config_sources.OFFICIAL_TOOLS says {target}"
        call = json.loads(arguments)
        assert set(needed) <= set(call), f"README's call for {theirs} lacks {set(needed) - set(call)}"
        assert all(call[k] == v for k, v in needed.items() if not str(v).startswith("<")), theirs
        commands.append(Command(f"README.md migration table: {theirs}", f"brave-search-mcp skill {modes[ours]} "
                                f"--params-json {shlex.quote(arguments)}", ""))  # fmt: skip
    return commands


def dockerfile_commands() -> list[Command]:
    """The docker lines the Dockerfile's opening comment shows."""
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    comment = "\n".join(line[2:] if line.startswith("# ") else "" for line in text.splitlines())
    return block_commands("Dockerfile", "```sh\n" + comment + "\n```\n")


def documented_commands() -> list[Command]:
    """Every command, from every source."""
    commands = [c for doc in DOCS for c in block_commands(str(doc.relative_to(REPO)), doc.read_text(encoding="utf-8"))]
    for page in SKILL_DOCS:
        commands += block_commands(str(page.relative_to(REPO)), skill_page(page))
    commands += help_examples() + tool_help_examples() + migration_calls()
    return commands + [c for c in dockerfile_commands() if c.text.startswith("docker ")]
