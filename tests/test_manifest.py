"""manifest.json (MCPB) tells hosts the truth: the server's real tools, the package version, a secret key."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from brave_search_mcp._version import __version__
from brave_search_mcp.config import Settings
from brave_search_mcp.faces.mcp_server import build_server
from brave_search_mcp.tools.registry import all_tools
from testkit import programs
from testkit.stdio import user_dirs

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "manifest.json"


@pytest.fixture
def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return data


@pytest.mark.anyio
async def test_manifest_tools_are_exactly_the_tools_the_server_registers(manifest: dict[str, Any]) -> None:
    async with Client(build_server(Settings())) as client:
        listed = await client.list_tools()
    server_tools = [tool.name for tool in listed.tools]
    assert server_tools == [tool.name for tool in all_tools()]  # the registry is the one list
    assert [tool["name"] for tool in manifest["tools"]] == server_tools
    assert all(tool.get("description") for tool in manifest["tools"])
    assert manifest["tools_generated"] is False


def test_the_committed_manifest_is_what_the_registry_generates() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "manifest.py"), "--check"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr  # stale: run `uv run python scripts/manifest.py`
    generated = json.loads(MANIFEST.read_text(encoding="utf-8"))
    assert [(t["name"], t["description"]) for t in generated["tools"]] == [
        (spec.name, spec.description) for spec in all_tools()
    ]


def test_manifest_version_is_the_package_version(manifest: dict[str, Any]) -> None:
    assert manifest["version"] == __version__


def test_manifest_name_and_entry_point_match_the_package(manifest: dict[str, Any]) -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert manifest["name"] == pyproject["project"]["name"]
    # The bundle runs server/main.py (a copy of scripts/mcpb_main.py) with an isolated interpreter.
    assert manifest["server"]["type"] == "python"
    assert manifest["server"]["entry_point"] == "server/main.py"
    assert (REPO / "scripts" / "mcpb_main.py").is_file()
    config = manifest["server"]["mcp_config"]
    assert config["command"] == "python3"
    assert config["args"] == ["-I", "${__dirname}/server/main.py"]


def test_manifest_uses_the_widely_supported_format(manifest: dict[str, Any]) -> None:
    # Claude Code's embedded MCPB schema knows python/node/binary only; 0.3 is the current stable spec.
    assert manifest["manifest_version"] == "0.3"
    assert manifest["server"]["type"] in {"python", "node", "binary"}
    assert manifest["$schema"].endswith("mcpb-manifest-v0.3.schema.json")


def test_the_api_key_is_a_sensitive_user_setting_never_a_literal(manifest: dict[str, Any]) -> None:
    key = manifest["user_config"]["brave_api_key"]
    assert key["sensitive"] is True
    assert key["required"] is True
    assert key["type"] == "string"
    env = manifest["server"]["mcp_config"]["env"]
    assert env == {"BRAVE_API_KEY": "${user_config.brave_api_key}"}
    assert manifest["privacy_policies"], "MCPB requires a privacy policy when user data goes to an outside service"


def _mcpb() -> Path:
    override = os.environ.get("BRAVE_MCP_NODE_BIN")
    bin_dir = Path(override) if override else REPO / ".ci" / "node" / "node_modules" / ".bin"
    if shutil.which("node") is None or not (bin_dir / "mcpb").exists():
        programs.unavailable(f"mcpb not found in {bin_dir} (or node missing); run .ci/install-node-tools.sh")
    return bin_dir / "mcpb"


def _validate(mcpb: Path, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(mcpb), "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.clients
def test_mcpb_validates_the_manifest() -> None:
    result = _validate(_mcpb(), MANIFEST)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "validation passes" in result.stdout


@pytest.mark.clients
def test_mcpb_rejects_a_broken_copy(tmp_path: Path, manifest: dict[str, Any]) -> None:
    # Proves the validator really checks this file's schema (a key the schema does not know must fail).
    manifest["homepage_url"] = "https://example.invalid"
    broken = tmp_path / "manifest.json"
    broken.write_text(json.dumps(manifest), encoding="utf-8")
    result = _validate(_mcpb(), broken)
    assert result.returncode != 0
    assert "homepage_url" in result.stdout + result.stderr


# ------------------------------------------------------------------------------------------ the bundle


def _offline_prefix() -> list[str]:
    """Run in a network namespace with no interfaces when the system allows it (proves 'offline')."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True, check=False).returncode == 0:
        return [unshare, "-rn"]
    return []


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dist/brave-search.mcpb as scripts/pack-mcpb.sh makes it (written to a temporary path)."""
    mcpb = _mcpb()
    out = tmp_path_factory.mktemp("mcpb") / "brave-search.mcpb"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env |= user_dirs(out.parent)  # the packer's smoke run keeps its state out of the developer's home
    result = subprocess.run(
        [str(REPO / "scripts" / "pack-mcpb.sh"), "--out", str(out), "--mcpb", str(mcpb)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "validation passes" in result.stdout
    return out


@pytest.mark.clients
def test_the_bundle_holds_the_server_and_its_dependencies_and_nothing_of_the_checkout(bundle: Path) -> None:
    names = zipfile.ZipFile(bundle).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"manifest.json", "server", "lib", "LICENSE", "README.md"}
    for package in ("brave_search_mcp", "mcp", "httpx2", "pydantic", "pydantic_core", "cachetools"):
        assert any(name.startswith(f"lib/{package}/") for name in names), package
    assert "lib/brave_search_mcp/skill/SKILL.md" in names
    # The checkout's own dev folders are absent at the top (see tops) and among the installed packages.
    forbidden = ("dist", ".venv", "tests", "testkit", "bench", ".git", ".ci", "docs", "scripts", "skills")
    assert not [name for name in names if name.split("/")[1 if name.startswith("lib/") else 0] in forbidden]
    # Nor the dependencies' own test suites (jsonschema/tests, referencing/tests, ...): dead weight in a bundle.
    assert not [name for name in names if name.startswith("lib/") and {"tests", "test"} & set(name.split("/")[1:-1])]
    # while every module of the package itself is there.
    own = {f"lib/{path.relative_to(REPO / 'src').as_posix()}" for path in (REPO / "src").rglob("*.py")}
    assert own - set(names) == set()
    manifest = json.loads(zipfile.ZipFile(bundle).read("manifest.json"))
    # Compiled dependencies tie the bundle to one platform and Python minor version; it says so.
    assert manifest["compatibility"]["platforms"] == [sys.platform]
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert manifest["compatibility"]["runtimes"]["python"].startswith(f">={minor},<")


@pytest.mark.clients
def test_the_unpacked_bundle_serves_tools_offline_with_the_manifests_own_command(bundle: Path, tmp_path: Path) -> None:
    """Unpacked into an empty folder and started as the manifest says, with no network, it answers tools/list."""
    target = tmp_path / "unpacked here"  # a space in the path, as in many users' app folders
    target.mkdir()
    zipfile.ZipFile(bundle).extractall(target)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    config = manifest["server"]["mcp_config"]
    assert (target / manifest["server"]["entry_point"]).is_file()
    argv = [config["command"], *(arg.replace("${__dirname}", str(target)) for arg in config["args"])]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **user_dirs(tmp_path),
        "BRAVE_API_KEY": "fake-key-from-user-config",
        # A PYTHONPATH pointing at this checkout must not leak in: -I ignores it.
        "PYTHONPATH": str(REPO / "src"),
    }
    result = subprocess.run(
        [
            *_offline_prefix(),
            sys.executable,
            str(REPO / "scripts" / "_mcp_config.py"),
            "smoke",
            "--timeout",
            "60",
            "--",
            *argv,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"brave-search {__version__}: {len(all_tools())} tools (brave_web_search")


@pytest.mark.clients
def test_without_an_installed_mcpb_the_bundle_is_packed_by_the_pinned_one_through_npx(tmp_path: Path) -> None:
    """A checkout without .ci/node and no mcpb on PATH: the script runs `npx -y @anthropic-ai/mcpb@<pin>`."""
    mcpb = _mcpb()
    checkout = tmp_path / "checkout"  # what the wheel is built from, without the node tools installed
    for name in ("src", "skills", "scripts"):
        shutil.copytree(REPO / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "manifest.json", ".ci/package.json"):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, checkout / name)
    calls = tmp_path / "npx.log"
    stub = tmp_path / "bin" / "npx"  # records how it is called, then runs the pinned mcpb offline
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{calls}"\nshift 2\nexec "{mcpb}" "$@"\n', encoding="utf-8")
    stub.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "BRAVE_MCP_NODE_BIN")}
    env["PATH"] = f"{stub.parent}:{env.get('PATH', '')}"
    assert shutil.which("mcpb", path=env["PATH"]) is None, "an mcpb on PATH would be used instead of npx"
    out = tmp_path / "brave-search.mcpb"
    result = subprocess.run(
        [str(checkout / "scripts" / "pack-mcpb.sh"), "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    pin = json.loads((REPO / ".ci" / "package.json").read_text(encoding="utf-8"))["dependencies"]["@anthropic-ai/mcpb"]
    used = calls.read_text(encoding="utf-8").splitlines()
    assert used and all(line.startswith(f"-y @anthropic-ai/mcpb@{pin} ") for line in used)
    assert any(" pack " in line for line in used) and "validation passes" in result.stdout
    assert "lib/brave_search_mcp/__init__.py" in zipfile.ZipFile(out).namelist()
