"""The command line's help and hints speak its own words, generated from the tools' specs (issue 37 item 4)."""

from __future__ import annotations

import re

import pytest

from brave_search_mcp.faces.cli import main
from brave_search_mcp.faces.commands import cli_output, cli_text, example_command
from brave_search_mcp.tools.registry import all_tools

SPECS = all_tools()
COMMANDS = [spec.cli.command for spec in SPECS]
TOOL_NAMES = [spec.name for spec in SPECS]


def printed_help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", [(), ("skill",), ("serve",), *((command,) for command in COMMANDS)], ids=str)
def test_no_help_text_names_mcp_things(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    """No structuredContent, no tool name (brave_web_search_help...), no field=value or `field: true`, no field
    name (probe_connectivity, max_chars): the options a reader types instead."""
    text = printed_help(capsys, *argv)
    assert "structuredContent" not in text
    assert [name for name in TOOL_NAMES if re.search(rf"\b{name}\b", text)] == []
    assert re.findall(r"\b[a-z]+(?:_[a-z]+)+=", text) == []
    assert re.findall(r"\b[a-z_]+: (?:true|false)\b", text) == []
    options = {name for spec in SPECS for name in spec.input_model.model_fields if "_" in name}
    outputs = {"next_start_char", "summarizer_key"}  # names of the envelope's fields, which --json prints
    words = set(re.findall(r"(?<![\w-])([a-z]+(?:_[a-z]+)+)\b", text)) - outputs
    assert words & options == set()


def test_the_flags_the_issue_listed_say_what_they_do(capsys: pytest.CaptureFixture[str]) -> None:
    local = " ".join(printed_help(capsys, "local").split())
    assert "--no-descriptions turn off (on by default): Add Brave's place descriptions" in local
    answer = " ".join(printed_help(capsys, "answer").split())
    assert "--no-enable-citations turn off (on by default): Numbered sources" in answer
    context = " ".join(printed_help(capsys, "context").split())
    assert "--enable-local, --no-enable-local Force or skip local recall; default: Brave decides." in context
    status = " ".join(printed_help(capsys, "status").split())
    assert "--probe sends one minimal request per search endpoint" in status
    search = " ".join(printed_help(capsys, "search").split())
    assert "--json prints the v1 envelope. Valid values: brave-search-mcp tool-help." in search
    assert '--result-filter RESULT_FILTER Web only: sections to show, --count each, e.g. ["web","news"]' in search
    read = " ".join(printed_help(capsys, "read").split())  # several URLs clamp at 500 a page: it says so
    assert "--max-chars MAX_CHARS Characters per part (500-50000; 500+ a page with urls)." in read


def test_every_command_shows_the_help_tools_examples_as_command_lines(capsys: pytest.CaptureFixture[str]) -> None:
    read = printed_help(capsys, "read")
    assert "brave-search-mcp read https://docs.python.org/3/whatsnew/3.13.html --start-char 4000 --format text" in read
    search = printed_help(capsys, "search")
    assert "--goggles '[\"$discard\\n$site=docs.rs\"]' --offset 1  # only docs.rs results" in search
    for command in ("search", "summarize", "context", "local", "answer", "read", "status", "tool-help"):
        assert "examples:\n  brave-search-mcp " + command in printed_help(capsys, command), command


def test_example_arguments_become_options_of_the_matching_kind() -> None:
    search = SPECS[0]
    arguments = {"query": "a b", "result_filter": ["web", "news"], "spellcheck": False, "goggles": ["x,y"]}
    assert example_command(search, arguments) == (
        "brave-search-mcp search 'a b' --result-filter web,news --no-spellcheck --goggles '[\"x,y\"]'"
    )
    assert example_command(search, {"query": "q", "debug": True}) is None  # no option for it: not shown


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        (["--result-filter", "web,news"], ["web", "news"]),
        (["--result-filter", '["web","news"]'], ["web", "news"]),
        (["--result-filter", "web", "--result-filter", "discussions,faq"], ["web", "discussions", "faq"]),
    ],
)
def test_result_filter_takes_a_comma_list_or_a_json_array(given: list[str], sent: list[str]) -> None:
    from brave_search_mcp.faces.cli import build_parser
    from brave_search_mcp.faces.commands import tool_arguments

    ns = build_parser().parse_args(["search", "q", *given])
    assert tool_arguments(SPECS[0], ns)["result_filter"] == sent


def test_a_list_option_refuses_json_that_is_not_a_list_of_strings(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ('["web",', "[1, 2]", '["web", ["news"]]'):
        with pytest.raises(SystemExit) as done:
            main(["search", "q", "--result-filter", bad])
        assert done.value.code == 2
        assert "argument --result-filter" in capsys.readouterr().err


def test_hints_in_a_tools_text_are_put_in_the_command_lines_words() -> None:
    read = next(spec for spec in SPECS if spec.name == "read_url")
    page = (
        "# Title\n[a link](https://x.example/?max_chars=5)\n\n[900 more characters. For the next part call "
        "read_url with the same url and format='markdown', start_char=3857.]\n! PAGE_INCOMPLETE: see max_chars."
    )
    assert cli_output(page, read, SPECS, error=False).split("\n") == [
        "# Title",
        "[a link](https://x.example/?max_chars=5)",  # what the page says stays as it is
        "",
        "[900 more characters. For the next part call brave-search-mcp read with the same url and "
        "--format markdown, --start-char 3857.]",
        "! PAGE_INCOMPLETE: see --max-chars.",
    ]
    search = SPECS[0]
    assert cli_text("summarizer_key from brave_web_search with summary: true", SPECS[1], SPECS) == (
        "summarizer_key from brave-search-mcp search with --summary"
    )
    assert cli_text("fit max_lines=120/max_bytes=32768", search, SPECS) == "fit --max-lines 120/--max-bytes 32768"
    assert cli_text("max_results 3", search, SPECS) == "--count 3"  # this command's spelling of the field
