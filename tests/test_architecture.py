"""The shape the design promises, checked on the code: folders by layer, one arrow direction, no cycles."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.shape import MAX_MODULE_LINES, import_cycles, import_graph, module_name

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "brave_search_mcp"
# Layers, lowest first: a module may import only from its own rank or a lower one.
RANKS = {
    "_version": 0,
    "clock": 0,
    "config": 0,
    "user_files": 0,  # where the user's config, state and cache files live (platformdirs)
    "config_sources": 0,  # what config.py reads besides BRAVE_SEARCH_*: key files, the official server's variables
    "logs": 0,
    "observe": 0,  # the no-op observer every layer may report to (metrics and traces are made real above)
    "models": 0,
    "render": 1,
    "ui": 1,  # optional widgets: the SDK and stdlib only; faces and help import it lazily
    "upstream": 2,
    "ratelimit": 3,
    "state": 4,
    "brave": 5,
    "reader": 5,  # the URL reader: the client of arbitrary web pages, a peer of brave/
    "providers": 6,
    "usecases": 7,
    "tools": 8,
    "compose": 9,
    "tracing": 9,  # the otel extra's tracer, built by a face for the composition root's observer
    "faces": 10,
    "__init__": 11,
    "__main__": 11,
}
# Who may import the Brave HTTP client: the composition root, the library face, use cases and status.
CLIENT_IMPORTERS_FOLDERS = {"compose", "faces.library", "usecases", "tools.status", "brave"}
# Pure modules: no I/O, no HTTP client, no MCP SDK.
PURE_FOLDERS = ("models", "render")
PURE_MODULES = {
    *("brave.facts", "brave.wire", "brave.results", "brave.params", "brave.arguments", "brave.sites"),
    "usecases.page_memo",
    *("ratelimit.info", "ratelimit.plan", "upstream.retry"),
}


def _module_name(path: Path) -> str:
    return module_name(path, PACKAGE)


def _graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE, PACKAGE.rglob("*.py"), "brave_search_mcp")


def _rank(module: str) -> int:
    return RANKS[module.split(".")[0]]


def test_every_module_lives_in_a_known_layer() -> None:
    assert {module.split(".")[0] for module in _graph()} <= set(RANKS)


def test_every_folder_says_what_it_owns() -> None:
    for folder in (p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__" and p.name != "widgets"):
        init = folder / "__init__.py"
        assert init.exists(), folder
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 15, folder


def test_no_import_runs_from_a_lower_layer_to_a_higher_one() -> None:
    upward = sorted(
        (module, target) for module, targets in _graph().items() for target in targets if _rank(target) > _rank(module)
    )
    assert upward == []


def test_use_cases_never_import_tools_or_a_face() -> None:
    for module, targets in _graph().items():
        if module.startswith("usecases."):
            assert not {t for t in targets if t.startswith(("tools.", "faces.", "compose"))}, module


def test_rate_limiting_never_imports_brave() -> None:
    for module, targets in _graph().items():
        if module.startswith("ratelimit."):
            assert not {t for t in targets if t.startswith(("brave.", "providers.", "state."))}, module


def test_the_url_reader_never_imports_brave() -> None:
    """A page a model asked for is fetched with no Brave client, key or header anywhere near it."""
    for module, targets in _graph().items():
        if module.startswith("reader."):
            assert not {t for t in targets if t.startswith(("brave.", "providers."))}, module


def test_no_import_cycle_anywhere() -> None:
    assert import_cycles(_graph()) == []


def test_only_the_composition_root_use_cases_and_status_import_the_http_client() -> None:
    importers = {name for name, targets in _graph().items() if "brave.client" in targets}
    allowed = {name for name in importers if name.startswith(tuple(CLIENT_IMPORTERS_FOLDERS))}
    assert importers == allowed, importers - allowed


def test_pure_modules_do_no_io_and_know_no_transport() -> None:
    graph = _graph()
    pure = {m for m in graph if m.startswith(PURE_FOLDERS)} | PURE_MODULES
    for module in sorted(pure):
        assert {t for t in graph[module] if _rank(t) > RANKS["render"]} <= pure, module
        text = (PACKAGE / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
        for marker in (r"import httpx2", r"import anyio", r"from mcp\b", r"\bopen\(", r"os\.environ"):
            assert not re.search(marker, text), (module, marker)


def test_no_other_module_reads_the_environment() -> None:
    readers = [p.name for p in PACKAGE.rglob("*.py") if "os.environ" in p.read_text(encoding="utf-8")]
    assert readers == ["config.py"]


def test_every_module_is_small_enough_to_read_in_one_sitting() -> None:
    sizes = {_module_name(p): len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n >= MAX_MODULE_LINES} == {}
