"""Inline goggles as Brave applies them to its recall set, for the fake (github.com/brave/goggles-quickstart).

An instruction is ``pattern$options``: a URL pattern (``*`` any characters, ``^`` a separator or the end of
the URL, ``|`` anchoring either end) and comma-separated options, ``site=`` (the host or a subdomain),
``discard``, ``boost[=n]``, ``downrank[=n]`` (no action: boost). A matching ``discard`` instruction drops a
result whatever else matches it; a generic ``$discard`` (no pattern, no site) drops every result that no
other instruction matches. Several goggles act as one. Ranking is not modelled: the fake's lists keep their
order. A goggle given by URL cannot be fetched offline and changes nothing; ``!`` lines are comments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from testkit.site_operators import on_site

__all__ = ["Goggle", "read_goggles"]


def _pattern(text: str) -> re.Pattern[str] | None:
    if not text:
        return None
    start = text.startswith("|")
    end = text.endswith("|") and len(text) > 1
    body = text[1 if start else 0 : len(text) - 1 if end else len(text)]
    parts = [".*" if c == "*" else r"(?:[/?&=:#]|$)" if c == "^" else re.escape(c) for c in body]
    return re.compile(("^" if start else "") + "".join(parts) + ("$" if end else ""))


@dataclass(frozen=True)
class _Instruction:
    pattern: re.Pattern[str] | None
    site: str | None
    discard: bool

    def matches(self, url: str) -> bool:
        if self.site is not None and not on_site(url, self.site):
            return False
        return self.pattern is None or self.pattern.search(url) is not None


def _instruction(line: str) -> _Instruction | None:
    pattern, dollar, options = line.rpartition("$") if "$" in line else (line, "", "")
    site, discard = None, False
    for option in options.split(",") if dollar else []:
        name, _, value = option.strip().partition("=")
        if name == "site":
            site = value.strip().lower()
        elif name == "discard":
            discard = True
    if not pattern and site is None and not discard:
        return None
    return _Instruction(_pattern(pattern), site, discard)


@dataclass(frozen=True)
class Goggle:
    """The instructions of every inline goggle of one request."""

    instructions: tuple[_Instruction, ...]
    discard_others: bool  # a generic $discard: only results an instruction matches remain

    def keeps(self, url: str) -> bool:
        """Whether Brave would leave a result at ``url`` in the list."""
        matched = [rule for rule in self.instructions if rule.matches(url)]
        if any(rule.discard for rule in matched):
            return False
        return bool(matched) or not self.discard_others


def read_goggles(goggles: Iterable[str]) -> Goggle | None:
    """The inline goggles among ``goggles`` as one rule set (None when there is none)."""
    instructions: list[_Instruction] = []
    discard_others = False
    inline = [g for g in goggles if "\n" in g or g.startswith(("$", "!"))]
    for line in (line.strip() for goggle in inline for line in goggle.splitlines()):
        if not line or line.startswith("!"):
            continue
        if line == "$discard":
            discard_others = True
            continue
        instruction = _instruction(line)
        if instruction is not None:
            instructions.append(instruction)
    return Goggle(tuple(instructions), discard_others) if inline else None
