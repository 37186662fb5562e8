"""What a documented command relies on, checked whether or not it can run here: the settings it names, the key
file, repository paths, pinned versions, a script's options, and what a docker line needs of the Dockerfile."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import subprocess
import tomllib

from tests.doc_commands import REPO, Command

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PINS: dict[str, str] = json.loads((REPO / ".ci" / "package.json").read_text(encoding="utf-8"))["dependencies"]
# The key file the registration scripts write: ${XDG_CONFIG_HOME:-~/.config}/brave-search-mcp/<this name>.
REGISTER = (REPO / "scripts" / "register-mcp.sh").read_text(encoding="utf-8")
KEY_FILE_NAME = re.findall(r"key_file:-\$\{config_dir\}/([\w.-]+)\}", REGISTER)[0]


def _known_settings() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in (REPO / "src").rglob("*.py"))


SETTINGS_SOURCE = _known_settings()


def check_names(command: Command) -> None:
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


def _check_docker(command: Command, commands: list[Command]) -> None:
    argv = shlex.split(command.text)
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    if argv[1] == "build":
        built = [c for c in commands if c.text.startswith("docker run")]
        assert built and all(shlex.split(c.text)[-1] == argv[argv.index("-t") + 1] for c in built)
        _check_dockerfile_copies_the_build_inputs(dockerfile)
        return
    envs = dict(argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "-e")
    assert "BRAVE_API_KEY_FILE" in envs, f"{command}: pass the key by file (an -e key shows in docker inspect)"
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


def _check_inspector(command: Command) -> None:
    """Issue 43 item 12: what a newcomer runs literally must work: each -e a literal value (the Inspector refuses
    an empty one), and no key file they may not have (the server then stops at start: "Connection closed")."""
    for assignment in re.findall(r"-e (\S+)", command.text):
        name, _, value = assignment.partition("=")
        assert value and "$" not in value, f"{command}: -e {name} needs a literal value"
        assert name != "BRAVE_API_KEY_FILE", f"{command}: names a key file a newcomer may not have"


def check(command: Command, commands: list[Command]) -> None:
    """A command that is not run: what it names must exist as the docs say."""
    text = command.text
    if text.startswith("scripts/"):
        _check_script_options(command)
    elif ".ci/install-node-tools.sh" in text:
        _check_node_tools(command)
    elif text.startswith("docker "):
        _check_docker(command, commands)
    elif text.startswith("npx -y @modelcontextprotocol/inspector@"):
        _check_inspector(command)
    elif re.match(r"^(uv tool (un)?install|pipx (un)?install) ", text):
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
    elif text.startswith("redis-cli"):  # the Redis key migration (docs/http.md): new names as the code makes them
        from brave_search_mcp.state.redis_keys import count_key, record_key

        for moved in re.findall(r'"(\{[^"]*?)\$\{', text):
            assert moved == count_key(""), f"{command}: counts live under {count_key('')!r}, not {moved!r}"
        for kept in re.findall(r"'\^(brave-search-mcp:\w+:)'", text):
            assert kept == record_key(""), f"{command}: records live under {record_key('')!r}, not {kept!r}"
    elif text.startswith(("claude mcp add-json", "codex")):
        payload = [arg for arg in shlex.split(text) if arg.startswith("{")]
        assert all(isinstance(json.loads(arg), dict) for arg in payload), str(command)
