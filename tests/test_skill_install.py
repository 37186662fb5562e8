"""`skill install`: the packaged skill lands where Claude Code and Codex read it, runnable as written."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from brave_search_mcp.faces import cli
from brave_search_mcp.faces.skill_install import (
    SkillInstallError,
    default_command,
    install_skill,
    render_skill_text,
    skill_source,
    uninstall_skill,
)
from brave_search_mcp.tools.registry import all_tools
from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "skills" / "brave-search"


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*")) if p.is_file()}


def test_installs_for_both_clients_with_runnable_commands(tmp_path: Path) -> None:
    """Both clients get the same files; every command names the installed program and no <repo> is left."""
    paths = install_skill(home=tmp_path)
    assert paths == [tmp_path / ".claude/skills/brave-search", tmp_path / ".agents/skills/brave-search"]
    claude, codex = (_tree(p) for p in paths)
    assert claude == codex
    assert set(claude) == {str(p.relative_to(SOURCE)) for p in SOURCE.rglob("*") if p.is_file()}
    for name, text in claude.items():
        assert "<repo>" not in text, name
        assert "uv run --directory" not in text, name
    skill = claude["SKILL.md"]
    assert skill.startswith("---\nname: brave-search\n")
    assert 'brave-search-mcp skill web --params-json \'{"query":"..."}\'' in skill
    assert "brave-search-mcp skill summarizer --params-json" in skill


def test_a_custom_command_is_spelled_everywhere_the_command_appears(tmp_path: Path) -> None:
    command = "uvx --from brave-search-mcp==0.1.0 brave-search-mcp"
    (claude,) = install_skill(home=tmp_path, targets=["claude"], command=command)
    text = (claude / "SKILL.md").read_text(encoding="utf-8")
    assert f"{command} skill web --params-json" in text
    assert f"`{command}` is the installed command" in text
    examples = (claude / "references" / "examples.md").read_text(encoding="utf-8")
    assert f"`bs` = `{command} skill`" in examples
    assert not (tmp_path / ".agents").exists()


def test_reinstall_replaces_the_old_skill_and_a_symlink_without_touching_its_target(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (claude,) = install_skill(home=home, targets=["claude"])
    (claude / "stale.md").write_text("old", encoding="utf-8")
    install_skill(home=home, targets=["claude"])
    assert not (claude / "stale.md").exists()

    linked_target = tmp_path / "dev-skill"
    linked_target.mkdir()
    (linked_target / "SKILL.md").write_text("developer copy", encoding="utf-8")
    codex_dir = home / ".agents" / "skills" / "brave-search"
    codex_dir.parent.mkdir(parents=True)
    codex_dir.symlink_to(linked_target)
    install_skill(home=home, targets=["codex"])
    assert not codex_dir.is_symlink()
    assert (codex_dir / "SKILL.md").read_text(encoding="utf-8").startswith("---\nname: brave-search")
    assert (linked_target / "SKILL.md").read_text(encoding="utf-8") == "developer copy"
    leftovers = [p.name for p in codex_dir.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []


@pytest.mark.parametrize("targets", [["cursor"], [], ["claude", "nope"]])
def test_unknown_targets_are_refused_before_anything_is_written(tmp_path: Path, targets: list[str]) -> None:
    with pytest.raises(SkillInstallError, match="unknown skill target"):
        install_skill(home=tmp_path, targets=targets)
    assert list(tmp_path.iterdir()) == []


def test_a_placeholder_the_rewrite_does_not_know_is_an_error_naming_its_line() -> None:
    with pytest.raises(SkillInstallError, match="line 3"):
        render_skill_text("a\nb\ncd <repo>/scripts && ./run\n", "brave-search-mcp")
    with pytest.raises(SkillInstallError, match="one non-empty line"):
        render_skill_text("x", "two\nlines")


def test_the_packaged_skill_is_the_repository_skill() -> None:
    source = skill_source()
    assert (source / "SKILL.md").read_text(encoding="utf-8") == (SOURCE / "SKILL.md").read_text(encoding="utf-8")


def test_default_command_is_the_bare_name_only_when_it_is_on_path(tmp_path: Path) -> None:
    assert default_command("/x/bin/brave-search-mcp", "/x/bin/brave-search-mcp") == "brave-search-mcp"
    odd = tmp_path / "my tools" / "brave-search-mcp"
    assert default_command(str(odd), None) == f"'{odd}'"


def test_cli_skill_install_writes_and_reports(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(
        ["skill", "install", "--home", str(tmp_path), "--target", "codex", "--command", "bsm"], out=out, err=err
    )
    assert code == 0, err.getvalue()
    assert f"Installed the brave-search skill in {tmp_path}/.agents/skills/brave-search" in out.getvalue()
    said = re.search(r"^Its commands run: bsm skill (\S+) --params-json '<json>'$", out.getvalue(), re.M)
    assert said is not None, out.getvalue()
    modes = said.group(1).split("|")
    assert modes == [spec.cli.command for spec in all_tools()]  # every mode, not two of them
    assert {"search", "summarize", "answer", "read"} <= set(modes)
    assert not (tmp_path / ".claude").exists()


def test_cli_skill_install_bad_usage_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["skill", "install", "--home", str(tmp_path), "--target", "cursor"])
    assert code == 2
    assert "invalid choice: 'cursor'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_cli_skill_install_reports_an_unwritable_home(tmp_path: Path) -> None:
    home = tmp_path / "file-not-dir"
    home.write_text("", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["skill", "install", "--home", str(home)], out=out, err=err) == 1
    assert "skill install failed" in err.getvalue()


def test_the_skill_describes_every_tool_and_every_command_mode() -> None:
    from brave_search_mcp.faces.commands import skill_modes
    from brave_search_mcp.tools.registry import all_tools

    text = (REPO / "skills" / "brave-search" / "SKILL.md").read_text(encoding="utf-8")
    missing_tools = [spec.name for spec in all_tools() if f"`{spec.name}`" not in text]
    missing_modes = [mode for mode in skill_modes(all_tools()) if f"`{mode}`" not in text]
    assert (missing_tools, missing_modes) == ([], [])


def test_the_stored_key_file_is_found_by_the_cli_and_the_skill_with_nothing_exported(tmp_path: Path) -> None:
    """Issue 37 item 1: after the register script stored the key, the installed skill's commands, the CLI and
    status find it with no key variable exported, and status names the file (never the key)."""
    home = tmp_path / "home"
    key_file = home / ".config" / "brave-search-mcp" / "api-key"  # where scripts/register-mcp.sh writes it
    key_file.parent.mkdir(parents=True, mode=0o700)
    key_file.write_text(VALID_KEY + "\n", encoding="utf-8")
    key_file.chmod(0o600)
    with FakeBraveServer(rate_per_second=1000) as upstream:
        # a user's shell: a home, a PATH with the program on it; no BRAVE_* key setting, no XDG_* variable
        env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
               "BRAVE_SEARCH_BASE_URL": upstream.base_url}  # fmt: skip

        def run(line: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["bash", "-c", line], env=env, cwd=tmp_path, capture_output=True, text=True,
                                  timeout=60, check=False, stdin=subprocess.DEVNULL)  # fmt: skip

        assert run("brave-search-mcp skill install").returncode == 0
        skill_md = (home / ".claude" / "skills" / "brave-search" / "SKILL.md").read_text(encoding="utf-8")
        commands = [
            line.strip()
            for block in re.findall(r"```sh\n(.*?)```", skill_md, flags=re.S)
            for line in block.splitlines()
            if line.strip().startswith("brave-search-mcp skill ")
        ]
        assert len(commands) >= 4, skill_md
        for line in commands:
            done = run(line)
            assert json.loads(done.stdout)["ok"] is True, (line, done.stdout[:300], done.stderr[-300:])
        searched = run("brave-search-mcp search 'hello world' --count 3")
        assert searched.returncode == 0, searched.stderr
        status = run("brave-search-mcp status --json")
        key = json.loads(status.stdout)["key"]
        assert key == {"configured": True, "source": "default_key_file", "file": str(key_file)}
        assert f"key: configured from the key file {key_file}" in run("brave-search-mcp status").stdout
        assert VALID_KEY not in status.stdout + status.stderr
        assert upstream.fake.requests, "the searches reached Brave with the stored key"

        key_file.unlink()  # and without it: the one-line advice names where to store the key
        missing = run("brave-search-mcp search 'hello world'")
        assert missing.returncode == 1
        assert f"or store it in {key_file}" in missing.stderr


def test_uninstall_skill_removes_only_this_skill(tmp_path: Path) -> None:
    claude, codex = install_skill(home=tmp_path)
    foreign = tmp_path / ".agents" / "skills" / "other"
    foreign.mkdir()
    (foreign / "SKILL.md").write_text("---\nname: other\n---\n", encoding="utf-8")
    assert uninstall_skill(home=tmp_path) == [claude, codex]
    assert not claude.exists() and not codex.exists() and foreign.exists()
    assert uninstall_skill(home=tmp_path) == []  # twice: nothing left, no error
    look_alike = tmp_path / ".claude" / "skills" / "brave-search"
    look_alike.mkdir(parents=True)
    (look_alike / "SKILL.md").write_text("---\nname: someone-elses\n---\n", encoding="utf-8")
    assert uninstall_skill(home=tmp_path) == [] and look_alike.exists()


def test_uninstall_without_client_programs_removes_the_skill_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brave_search_mcp.faces.uninstall import Clients, run_uninstall, runs_this_program

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    install_skill(home=tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert run_uninstall([], out, err, Clients(codex=None, claude=None)) == 0, err.getvalue()
    said = out.getvalue()
    assert f"Codex: not installed (no codex on PATH, no {tmp_path}/.codex/config.toml); nothing to remove." in said
    assert f"Removed the brave-search skill from {tmp_path}/.claude/skills/brave-search." in said
    assert said.rstrip().endswith("(or: pipx uninstall brave-search-mcp).")
    assert runs_this_program("/home/u/.local/bin/brave-search-mcp", [])
    assert runs_this_program("/usr/bin/uvx", ["--from", "brave-search-mcp==0.1.0", "brave-search-mcp"])
    assert not runs_this_program("npx", ["-y", "@brave/brave-search-mcp-server"])
