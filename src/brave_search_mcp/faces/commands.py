"""The command line's tool commands, generated from the registry: a new tool gets its sub-command for free.

Each spec's ``CliShape`` names the sub-command, the positional field and the few options spelled
differently from ``--field-name``; every other field of the tool's argument model becomes an option of
the matching type (a ``Literal`` offers its choices, a ``bool`` a switch, a list is repeatable and takes a
JSON array too). The help of every option is its field's description, and each command's examples are the
help tool's, both put in the command line's words by ``cli_text`` (``start_char=3857`` reads
``--start-char 3857``; a tool's name reads as its command), so schema, help tool and ``--help`` cannot
drift. The skill's ``skill MODE --params-json`` modes come from the same specs.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import textwrap
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic.fields import FieldInfo

from brave_search_mcp.usecases.contract import ToolSpec

AnySpec = ToolSpec[Any, Any]
PROGRAM = "brave-search-mcp"
# Options that set several fields at once, per command: option -> (help, values).
PRESETS: Mapping[str, Mapping[str, tuple[str, Mapping[str, Any]]]] = {
    "search": {"--no-cache": ("bypass the cache", {"debug": True, "disable_cache": True})},
}
# MCP words with no field or tool behind them, as the command line says them.
MCP_PHRASES: tuple[tuple[str, str], ...] = (
    ("structuredContent holds", "--json prints"),
    ("structuredContent", "the --json envelope"),
)


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return options[0] if len(options) == 1 else annotation
    return annotation


def _kind(field: FieldInfo) -> tuple[str, Any]:
    """What argparse needs of a field: ("bool"|"choice"|"list"|"value", detail)."""
    annotation = _unwrap(field.annotation)
    if annotation is bool:
        return "bool", None
    if typing.get_origin(annotation) is Literal:
        return "choice", [str(value) for value in typing.get_args(annotation)]
    if typing.get_origin(annotation) is list:
        return "list", None
    if annotation in (int, float, str):
        return "value", annotation
    return "skip", None


def _option(spec: AnySpec, name: str, field: FieldInfo) -> str:
    """The option a field is given by: a default-on switch is ``--no-...``; a yes/no/unset one ``--x``/``--no-x``."""
    spelled = spec.cli.options.get(name)
    if spelled:
        return spelled
    flag = name.replace("_", "-")
    return f"--no-{flag}" if _kind(field)[0] == "bool" and field.default is True else f"--{flag}"


def _options(spec: AnySpec) -> dict[str, str]:
    """Field -> option of every field the command line offers as an option."""
    return {
        name: _option(spec, name, field)
        for name, field in spec.input_model.model_fields.items()
        if name not in spec.cli.hidden and name != spec.cli.positional and _kind(field)[0] != "skip"
    }


def cli_text(text: str, spec: AnySpec, specs: Sequence[AnySpec]) -> str:
    """``text`` written for an MCP client, in the command line's words: a tool's name becomes its command,
    ``field: true`` a switch, ``field=value`` and a field's name its option (``spec``'s spelling first)."""
    for mcp, cli in MCP_PHRASES:
        text = text.replace(mcp, cli)
    commands = {other.name: f"{PROGRAM} {other.cli.command}" for other in specs}
    if commands:
        names = "|".join(re.escape(name) for name in sorted(commands, key=len, reverse=True))
        text = re.sub(rf"\b({names})\b", lambda match: commands[match.group(1)], text)
    options: dict[str, str] = {}
    for other in (*reversed(specs), spec):  # this tool's spelling wins, then the registry's first
        options.update(_options(other))

    def switch(match: re.Match[str]) -> str:
        option = options.get(match.group(1))
        if option is None:
            return match.group(0)
        base = option.removeprefix("--no-").removeprefix("--")
        return f"--{base}" if match.group(2) == "true" else f"--no-{base}"

    def assigned(match: re.Match[str]) -> str:
        option = options.get(match.group(1))
        value = match.group(2)
        if option is None:
            return match.group(0)
        bare = value[1:-1] if value[:1] in "'\"" and " " not in value else value
        return f"{option} {bare}"

    text = re.sub(r"\b([a-z]+(?:_[a-z]+)*): (true|false)\b", switch, text)
    text = re.sub(r"\b([a-z]+(?:_[a-z]+)*)=(\d+(?:\.\d+)?|'[^']*'|\"[^\"]*\"|[A-Za-z0-9_-]+)", assigned, text)
    return re.sub(r"\b([a-z]+(?:_[a-z]+)+)\b", lambda m: options.get(m.group(1), m.group(0)), text)


def cli_output(text: str, spec: AnySpec, specs: Sequence[AnySpec], *, error: bool) -> str:
    """A tool's text as the command line prints it: an error, and the lines of a result that speak to the caller
    (warnings, the way to the next part) in its words; what a page or a search found is left as it came."""
    if error:
        return cli_text(text, spec, specs)
    lines = text.split("\n")
    spoken = [line.startswith("! ") or (line.startswith("[") and line.endswith(".]")) for line in lines]
    return "\n".join(cli_text(line, spec, specs) if ours else line for line, ours in zip(lines, spoken, strict=True))


def _list_values(comma: bool) -> Callable[[str], list[str]]:
    """An argparse type for a list option: a JSON array (``'["web","news"]'``), else one value (comma-separated
    values for the fields the spec says are written so)."""

    def parse(text: str) -> list[str]:
        if text.lstrip().startswith("["):
            try:
                values = json.loads(text)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(f"not a JSON array of strings ({exc})") from None
            if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
                raise argparse.ArgumentTypeError("a JSON array must hold strings only")
            return values
        return [part.strip() for part in text.split(",") if part.strip()] if comma else [text]

    return parse


def _add_field(parser: argparse.ArgumentParser, spec: AnySpec, specs: Sequence[AnySpec], name: str) -> None:
    field = spec.input_model.model_fields[name]
    kind, detail = _kind(field)
    help_text = cli_text(field.description or "", spec, specs).replace("%", "%%") or None
    if name == spec.cli.positional_list:
        return  # filled by the positional field's values when there are several
    if name == spec.cli.positional:
        nargs = "?" if spec.cli.optional_positional else "+" if spec.cli.positional_list else None
        if spec.cli.positional_list:  # say what several values mean: the list field's own words
            more = cli_text(spec.input_model.model_fields[spec.cli.positional_list].description or "", spec, specs)
            help_text = f"{help_text or ''} {more.replace('%', '%%')}".strip() or None
        default = field.default if kind == "choice" else None
        parser.add_argument(name, nargs=nargs, choices=detail if kind == "choice" else None, default=default,
                            help=help_text)  # fmt: skip
        return
    option = _option(spec, name, field)
    if kind == "bool" and field.default is None and option == f"--{name.replace('_', '-')}":
        parser.add_argument(option, dest=name, action=argparse.BooleanOptionalAction, default=None, help=help_text)
    elif kind == "bool":
        negative = option.startswith("--no-")
        help_text = f"turn off (on by default): {help_text}" if negative and help_text else help_text
        parser.add_argument(option, dest=name, action="store_false" if negative else "store_true", default=None,
                            help=help_text)  # fmt: skip
    elif kind == "choice":
        parser.add_argument(option, dest=name, choices=detail, help=help_text)
    elif kind == "list":
        values = _list_values(name in spec.cli.comma_lists)
        written = "a,b or " if name in spec.cli.comma_lists else ""
        help_text = f"{help_text} (repeatable; {written}a JSON array)" if help_text else None
        parser.add_argument(option, dest=name, action="extend", type=values, help=help_text)
    elif kind == "value":
        parser.add_argument(option, dest=name, type=detail, help=help_text)


def example_command(spec: AnySpec, arguments: Mapping[str, Any]) -> str | None:
    """A tool call's arguments as this command line (None when one of them has no option here)."""
    fields = spec.input_model.model_fields
    words = [PROGRAM, spec.cli.command]
    positional = spec.cli.positional
    if positional is not None and positional in arguments:
        words.append(shlex.quote(str(arguments[positional])))
    several = spec.cli.positional_list
    if several is not None and several in arguments:  # several values of the positional: each a word of its own
        words += [shlex.quote(str(value)) for value in arguments[several]]
    for name, value in arguments.items():
        if name in (positional, several):
            continue
        if name not in fields or name in spec.cli.hidden:
            return None
        option = _option(spec, name, fields[name])
        kind = _kind(fields[name])[0]
        base = option.removeprefix("--no-").removeprefix("--")
        if kind == "bool":
            words.append(f"--{base}" if value else f"--no-{base}")
        elif kind == "list" and name in spec.cli.comma_lists and all("," not in str(v) for v in value):
            words += [option, shlex.quote(",".join(value))]
        elif kind == "list":
            words += [option, shlex.quote(json.dumps(value, ensure_ascii=False))]
        else:
            words += [option, shlex.quote(str(value))]
    return " ".join(words)


def epilog(spec: AnySpec, examples: Sequence[Mapping[str, Any]]) -> str | None:
    """The command's examples: the help tool's calls of this tool, as command lines."""
    lines = []
    for example in examples:
        if example["tool"] == spec.name:
            command = example_command(spec, example["arguments"])
            if command is not None:
                lines.append(f"  {command}  # {example['why']}")
    return "examples:\n" + "\n".join(lines) if lines else None


def add_tool_commands(sub: Any, specs: Sequence[AnySpec], examples: Sequence[Mapping[str, Any]] = ()) -> None:
    """One sub-command per tool, its options read off the tool's argument model, its examples the help tool's."""
    for spec in specs:
        parser = sub.add_parser(
            spec.cli.command,
            help=spec.cli.help,
            description=textwrap.fill(cli_text(spec.description, spec, specs), width=79),
            epilog=epilog(spec, examples),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        for name in spec.input_model.model_fields:
            if name not in spec.cli.hidden:
                _add_field(parser, spec, specs, name)
        for option, (help_text, _) in PRESETS.get(spec.cli.command, {}).items():
            parser.add_argument(option, action="store_true", help=help_text)
        parser.add_argument("--json", action="store_true", help="print the JSON envelope instead of text")


def command_spec(specs: Sequence[AnySpec], command: str) -> AnySpec | None:
    """The tool a sub-command or skill mode (or one of its older names) runs."""
    for spec in specs:
        if command == spec.cli.command or command in spec.cli.aliases:
            return spec
    return None


def tool_arguments(spec: AnySpec, ns: argparse.Namespace) -> dict[str, Any]:
    """The tool's arguments from a parsed command line: only what was given (several positional values fill the
    spec's list field)."""
    arguments: dict[str, Any] = {}
    for name in spec.input_model.model_fields:
        value = getattr(ns, name, None)
        if value is None:
            continue
        if name == spec.cli.positional and spec.cli.positional_list and isinstance(value, list):
            name, value = (name, value[0]) if len(value) == 1 else (spec.cli.positional_list, value)
        arguments[name] = value
    for option, (_, values) in PRESETS.get(spec.cli.command, {}).items():
        if getattr(ns, option.removeprefix("--").replace("-", "_"), False):
            arguments.update(values)
    return arguments


def skill_modes(specs: Sequence[AnySpec]) -> list[str]:
    """Every mode ``skill MODE`` accepts: each tool's command and its older names."""
    return [name for spec in specs for name in (spec.cli.command, *spec.cli.aliases)]
