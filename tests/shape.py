"""The tools of the shape tests (tests/test_architecture.py, tests/test_test_shape.py): import graphs and cycles.

Imports are read from the source (``ast``), never executed; relative and absolute forms count, at any depth.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

MAX_MODULE_LINES = 450  # every module, in src/ as in tests/, testkit/, bench/ and scripts/, stays under this


def module_name(path: Path, root: Path) -> str:
    """``path`` as a dotted name relative to ``root`` (a package's ``__init__`` keeps its name)."""
    return ".".join(path.relative_to(root).with_suffix("").parts)


def imports(path: Path, root: Path, top: str | None = None) -> set[str]:
    """Dotted names (relative to ``root``) that ``path`` imports; ``top``: the package ``root`` itself is, if any.

    With ``top`` set, absolute imports of ``top`` are named without it; without it, every absolute import is kept
    (the graph keeps only the names that are modules under ``root``).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path, root).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
                names = [target] if node.module else [".".join([*base, alias.name]) for alias in node.names]
                found.update(name for name in names if name)
            elif top is not None and node.module == top:
                found.update(alias.name for alias in node.names)
            elif node.module and (top is None or node.module.startswith(f"{top}.")):
                module = node.module.removeprefix(f"{top}.") if top else node.module
                found.add(module)
                found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            prefix = f"{top}." if top else ""
            found.update(a.name.removeprefix(prefix) for a in node.names if a.name.startswith(prefix))
    return found


def import_graph(root: Path, files: Iterable[Path], top: str | None = None) -> dict[str, set[str]]:
    """Module -> the modules among ``files`` it imports ("pkg.sub" of a package means its ``__init__``)."""
    modules = {module_name(p, root): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in imports(path, root, top):
            while imported and imported not in modules:
                imported = imported + ".__init__" if imported + ".__init__" in modules else ""
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle a depth-first walk of ``graph`` meets, as the modules along it."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def line_count(path: Path) -> int:
    """Lines of a text file."""
    return len(path.read_text(encoding="utf-8").splitlines())
