"""manifest.json (MCPB) tells hosts the truth: the server's real tools, the package version, a secret key."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from brave_search_mcp._version import __version__
from brave_search_mcp.config import Settings
from brave_search_mcp.server import build_server

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "manifest.json"


@pytest.fixture
def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_manifest_tools_are_exactly_the_tools_the_server_registers(manifest: dict[str, Any]) -> None:
    async with Client(build_server(Settings())) as client:
        listed = await client.list_tools()
    server_tools = [tool.name for tool in listed.tools]
    assert len(server_tools) == 4
    assert [tool["name"] for tool in manifest["tools"]] == server_tools
    assert all(tool.get("description") for tool in manifest["tools"])
    assert manifest["tools_generated"] is False


def test_manifest_version_is_the_package_version(manifest: dict[str, Any]) -> None:
    assert manifest["version"] == __version__


def test_manifest_name_and_entry_point_match_the_package(manifest: dict[str, Any]) -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert manifest["name"] == pyproject["project"]["name"]
    assert (REPO / manifest["server"]["entry_point"]).is_file()
    config = manifest["server"]["mcp_config"]
    # The command runs the console script of this package from the unpacked bundle directory.
    assert "brave-search-mcp" in pyproject["project"]["scripts"]
    assert config["args"][-1] == "brave-search-mcp"
    assert "${__dirname}" in config["args"]


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
        reason = f"mcpb not found in {bin_dir} (or node missing); run .ci/install-node-tools.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must validate the manifest with mcpb, but {reason}")
        pytest.skip(reason)
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
