"""The command line's tool commands, generated from the registry: a new tool gets its sub-command for free.

Each spec's ``CliShape`` names the sub-command, the positional field and the few options spelled
differently from ``--field-name``; every other field of the tool's argument model becomes an option of
the matching type (a ``Literal`` offers its choices, a ``bool`` a switch, a list is repeatable). The
skill's ``skill MODE --params-json`` modes come from the same specs.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic.fields import FieldInfo

from brave_search_mcp.usecases.contract import ToolSpec

AnySpec = ToolSpec[Any, Any]
# Options that set several fields at once, per command: option -> (help, values).
PRESETS: Mapping[str, Mapping[str, tuple[str, Mapping[str, Any]]]] = {
    "search": {"--no-cache": ("bypass the cache", {"debug": True, "disable_cache": True})},
}
# List fields whose values are written comma separated on the command line ("web,news").
COMMA_LISTS = frozenset({"result_filter"})


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
    spelled = spec.cli.options.get(name)
    if spelled:
        return spelled
    flag = name.replace("_", "-")
    return f"--no-{flag}" if _kind(field)[0] == "bool" and field.default is True else f"--{flag}"


def _add_field(parser: argparse.ArgumentParser, spec: AnySpec, name: str, field: FieldInfo) -> None:
    kind, detail = _kind(field)
    help_text = (field.description or "").replace("%", "%%") or None
    if name == spec.cli.positional_list:
        return  # filled by the positional field's values when there are several
    if name == spec.cli.positional:
        nargs = "?" if spec.cli.optional_positional else "+" if spec.cli.positional_list else None
        if spec.cli.positional_list:  # say what several values mean: the list field's own words
            more = spec.input_model.model_fields[spec.cli.positional_list].description or ""
            help_text = f"{help_text or ''} {more.replace('%', '%%')}".strip() or None
        default = field.default if kind == "choice" else None
        parser.add_argument(name, nargs=nargs, choices=detail if kind == "choice" else None, default=default,
                            help=help_text)  # fmt: skip
        return
    option = _option(spec, name, field)
    if kind == "bool":
        action = "store_false" if option.startswith("--no-") else "store_true"
        parser.add_argument(option, dest=name, action=action, default=None, help=help_text)
    elif kind == "choice":
        parser.add_argument(option, dest=name, choices=detail, help=help_text)
    elif kind == "list":
        parser.add_argument(option, dest=name, action="append", help=help_text)
    elif kind == "value":
        parser.add_argument(option, dest=name, type=detail, help=help_text)


def add_tool_commands(sub: Any, specs: Sequence[AnySpec]) -> None:
    """One sub-command per tool, its options read off the tool's argument model."""
    for spec in specs:
        parser = sub.add_parser(spec.cli.command, help=spec.cli.help, description=spec.description)
        for name, field in spec.input_model.model_fields.items():
            if name not in spec.cli.hidden:
                _add_field(parser, spec, name, field)
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
    """The tool's arguments from a parsed command line: only what was given, lists split where written so."""
    arguments: dict[str, Any] = {}
    for name in spec.input_model.model_fields:
        value = getattr(ns, name, None)
        if value is None:
            continue
        if name in COMMA_LISTS and isinstance(value, list):
            value = [part.strip() for item in value for part in str(item).split(",") if part.strip()]
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
