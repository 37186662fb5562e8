"""The shape the design promises, checked on the code: one arrow direction, no cycles, the HTTP client kept low."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "brave_search_mcp"
# Who may import the HTTP client: the composition roots and the use cases.
CLIENT_IMPORTERS = {"app", "library", "service", "summarizer", "status", "brave_calls"}
# Pure modules: no I/O, no HTTP client, no MCP SDK.
PURE = {"brave_api", "wire", "text", "answers", "render", "models", "errors", "params", "pages"}
MAX_MODULE_LINES = 450


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def _imports(path: Path) -> set[str]:
    """Package-internal modules imported by ``path`` (relative and absolute forms, at any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
                names = [target] if node.module else [".".join([*base, alias.name]) for alias in node.names]
                found.update(name for name in names if name)
            elif node.module and node.module.startswith("brave_search_mcp."):
                found.add(node.module.removeprefix("brave_search_mcp."))
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("brave_search_mcp.") for a in node.names if a.name.startswith("brave_search_mcp.")
            )
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path):
            while imported and imported not in modules:  # "pkg.sub" of a package means its __init__
                imported = imported + ".__init__" if imported + ".__init__" in modules else ""
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def test_no_import_cycle_anywhere() -> None:
    graph = _graph()
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
    assert cycles == []


def test_only_composition_roots_and_use_cases_import_the_http_client() -> None:
    importers = {name for name, targets in _graph().items() if "client" in targets}
    assert importers <= CLIENT_IMPORTERS, importers - CLIENT_IMPORTERS


def test_pure_modules_do_no_io_and_know_no_transport() -> None:
    forbidden = {"client", "server", "tools", "service", "app", "cli"}
    graph = _graph()
    for module in PURE:
        assert not graph[module] & forbidden, (module, graph[module] & forbidden)
        text = (PACKAGE / f"{module}.py").read_text(encoding="utf-8")
        for marker in ("import httpx2", "import anyio", "from mcp", "open(", "os.environ"):
            assert marker not in text, (module, marker)


def test_no_other_module_reads_the_environment() -> None:
    readers = [p.name for p in PACKAGE.rglob("*.py") if "os.environ" in p.read_text(encoding="utf-8")]
    assert readers == ["config.py"]


def test_use_cases_never_import_the_registry() -> None:
    graph = _graph()
    for module in ("service", "status", "helpdoc", "summarizer"):
        assert "tools" not in graph[module], module


def test_every_module_is_small_enough_to_read_in_one_sitting() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n >= MAX_MODULE_LINES} == {}
